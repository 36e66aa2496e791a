package main

import (
	"slices"

	"github.com/prometheus/procfs"
)

// servers are the processes that serve a target: their CPU time per
// request is the row's cost, independent of how much of the machine they
// got. nginx's workers are found as its master's children.
func (e *env) servers(target string) []int {
	var roots []int
	switch target {
	case targetNginx:
		roots = append(roots, e.stack.Nginx().Pid())
		for _, a := range e.stack.Apps() {
			roots = append(roots, a.Pid())
		}
	case targetApp:
		roots = append(roots, e.stack.Apps()[0].Pid())
	case targetMinimalNginx:
		roots = append(roots, e.minimalNginxPid)
		roots = append(roots, e.minimalPids...)
	case targetMinimal:
		roots = append(roots, e.minimalPids[0])
	case targetCapacity:
		roots = append(roots, e.capacity.pids()...)
	case targetCountingOff:
		roots = append(roots, e.countingOff.pids()...)
	case targetAnalyticsOff:
		roots = append(roots, e.analyticsOff.pids()...)
	}
	return withChildren(e.proc, roots)
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
