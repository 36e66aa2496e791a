package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// machine describes where the numbers were taken: they mean little
// without it.
type machine struct {
	CPU      string            `json:"cpu"`
	Cores    int               `json:"cores"`
	MemoryGB float64           `json:"memory_gb"`
	Kernel   string            `json:"kernel"`
	Go       string            `json:"go"`
	Versions map[string]string `json:"versions"`
	// Load1Start is the one-minute load average before the first run.
	Load1Start float64 `json:"load1_start"`
}

// describeMachine reads /proc and asks each server for its version.
func describeMachine(ctx context.Context, fs procfs.FS) machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Versions: map[string]string{}}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if mi, err := fs.Meminfo(); err == nil && mi.MemTotal != nil {
		m.MemoryGB = float64(*mi.MemTotal) / (1 << 20)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if la, err := fs.LoadAvg(); err == nil {
		m.Load1Start = la.Load1
	}
	for name, argv := range map[string][]string{
		"nginx":        {"nginx", "-v"},
		"wrk":          {"wrk", "-v"},
		"redis-server": {"redis-server", "--version"},
		"mariadbd":     {"mariadbd", "--version"},
	} {
		m.Versions[name] = version(ctx, argv)
	}
	return m
}

// version is the first line a program prints about its version.
func version(ctx context.Context, argv []string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput() // wrk -v exits 1
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func (m machine) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- CPU: %s, %d cores; memory %.1f GB; Linux %s; %s\n", m.CPU, m.Cores, m.MemoryGB, m.Kernel, m.Go)
	for _, k := range []string{"nginx", "redis-server", "mariadbd", "wrk"} {
		if v := m.Versions[k]; v != "" {
			fmt.Fprintf(&b, "- %s: %s\n", k, v)
		}
	}
	fmt.Fprintf(&b, "- one-minute load average before the first run: %.1f (every row also lists it at the end of its runs)\n", m.Load1Start)
	return b.String()
}
