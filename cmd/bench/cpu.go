package main

import (
	"slices"

	"github.com/prometheus/procfs"

	"shortener/internal/stack"
)

// servers are the processes that serve a target: their CPU time per
// request is the row's cost, independent of how much of the machine they
// got. nginx's workers are found as its master's children.
func (e *env) servers(target string) []int {
	p := e.parts(target)
	return append(slices.Clone(p["nginx"]), p["apps"]...)
}

// processParts are the names of a row's CPU breakdown, in table order.
var processParts = []string{"nginx", "apps", "redis", "sentinels", "mysql"}

// parts splits the processes a row's load touches into processParts: the
// target's nginx and apps (or minimal servers), and the stack's Redis
// servers (master and replicas), sentinels and MySQL, whichever target the
// row aims at, since clicks, trending and fills land there.
func (e *env) parts(target string) map[string][]int {
	var proxies, apps []int
	switch target {
	case targetNginx:
		proxies = append(proxies, e.stack.Nginx().Pid())
		for _, a := range e.stack.Apps() {
			apps = append(apps, a.Pid())
		}
	case targetApp:
		apps = append(apps, e.stack.Apps()[0].Pid())
	case targetMinimalNginx:
		proxies = append(proxies, e.minimalNginxPid)
		apps = append(apps, e.minimalPids...)
	case targetMinimal:
		apps = append(apps, e.minimalPids[0])
	case targetGolink:
		apps = append(apps, e.golink.pid())
	case targetCapacity, targetCountingOff, targetAnalyticsOff:
		c := map[string]*capacity{targetCapacity: e.capacity, targetCountingOff: e.countingOff, targetAnalyticsOff: e.analyticsOff}[target]
		proxies = append(proxies, c.proxy.pid())
		for _, a := range c.apps {
			apps = append(apps, a.Process.Pid)
		}
	}
	pidsOf := func(ps []*stack.Proc) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.Pid())
		}
		return out
	}
	return map[string][]int{
		"nginx":     withChildren(e.proc, proxies),
		"apps":      apps,
		"redis":     pidsOf(e.stack.Redis()),
		"sentinels": pidsOf(e.stack.Sentinels()),
		"mysql":     pidsOf(e.stack.MySQLNodes()),
	}
}

// cpuByPart is cpuSeconds of each part.
func cpuByPart(fs procfs.FS, parts map[string][]int) map[string]float64 {
	out := make(map[string]float64, len(parts))
	for name, pids := range parts {
		out[name] = cpuSeconds(fs, pids)
	}
	return out
}

// withChildren is pids and the direct children of each.
func withChildren(fs procfs.FS, pids []int) []int {
	out := slices.Clone(pids)
	all, err := fs.AllProcs()
	if err != nil {
		return out
	}
	for _, p := range all {
		st, err := p.Stat()
		if err == nil && slices.Contains(pids, st.PPID) && !slices.Contains(out, p.PID) {
			out = append(out, p.PID)
		}
	}
	return out
}

// cpuSeconds is the user and system CPU time pids have used so far; a
// process that is gone counts nothing.
func cpuSeconds(fs procfs.FS, pids []int) float64 {
	var total float64
	for _, pid := range pids {
		p, err := fs.Proc(pid)
		if err != nil {
			continue
		}
		if st, err := p.Stat(); err == nil {
			total += st.CPUTime()
		}
	}
	return total
}
