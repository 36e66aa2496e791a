package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"shortener/internal/stack"
	"shortener/internal/topology"
)

// masterTimeout bounds "who is the master" in status and master: the
// sentinels answer at once or are down. It bounds a Galera node's status
// too.
const masterTimeout = 3 * time.Second

// localGaleraPorts are the Galera nodes' peer ports on the local stack:
// Galera's defaults (group 4567, IST 4568, SST 4444) for mysql-1 and the
// next ones for the others. Each node listens on a loopback address of
// its own (stack.Proc.GaleraHost), so they would not clash if equal;
// distinct, they read apart in ss and the logs.
var localGaleraPorts = [3]stack.GaleraPorts{
	{Group: 4567, IST: 4568, SST: 4444},
	{Group: 4577, IST: 4578, SST: 4445},
	{Group: 4587, IST: 4588, SST: 4446},
}

// up starts the stack in o.dir and waits until it is ready. A
// stack that already runs there is left as it is, except that its stopped
// processes are restarted, so running up twice is harmless.
func up(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if err := ensurePrograms(ctx, o.sys, stdout); err != nil {
		return err
	}
	if err := checkBinary(o.bin); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
				return slog.Attr{} // progress lines for a person
			}
			return a
		},
	}))
	cfg := topology.Config(o.dir, o.bin, o.local, o.killWithParent, log)
	if o.galera {
		cfg.Galera = true
		if o.local {
			cfg.GaleraPorts = localGaleraPorts
		}
	}
	if s, err := stack.Attach(o.dir); err == nil && len(running(s)) > 0 {
		return resume(ctx, s, cfg, stdout)
	}
	fmt.Fprintf(stdout, "starting the stack in %s\n", o.dir)
	begin := time.Now()
	s, err := topology.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stack is up in %s: %s\n", time.Since(begin).Round(100*time.Millisecond), s.BaseURL())
	summary(stdout, s)
	return nil
}

// resume handles up on a stack that runs: it must be the same stack (the
// same processes, on the ports asked for), and whatever of it is down is
// restarted.
func resume(ctx context.Context, s *stack.Stack, cfg stack.Config, stdout io.Writer) error {
	if err := sameLayout(s, cfg); err != nil {
		return fmt.Errorf("a different stack runs in %s (%v); stop it with `stack down -dir %s` first", s.Dir(), err, s.Dir())
	}
	for _, f := range []string{cfg.APIKeyFile, cfg.CodeKeyFile} {
		if err := stack.EnsureSecret(f); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "the stack in %s is already running\n", s.Dir())
	// MariaDB first, and as a whole: a Galera cluster with every node
	// down starts from its most advanced node.
	var down []*stack.Proc
	for _, p := range s.MySQLNodes() {
		if !p.Running() {
			down = append(down, p)
		}
	}
	if err := s.StartMySQL(ctx); err != nil {
		return err
	}
	for _, p := range down {
		fmt.Fprintf(stdout, "restarted %s, which was down (pid %d)\n", p, p.Pid())
	}
	for _, p := range s.Procs() {
		if p.Running() {
			// Left as they are: someone froze or cut them off on purpose.
			if p.Frozen() {
				fmt.Fprintf(stdout, "note: %s is frozen; `stack cont %s` thaws it\n", p.Name, p.Name)
			}
			if on, err := p.Partitioned(ctx); err == nil && on {
				fmt.Fprintf(stdout, "note: %s is partitioned; `stack heal %s` heals it\n", p.Name, p.Name)
			}
			continue
		}
		if err := p.Restart(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "restarted %s, which was down (pid %d)\n", p, p.Pid())
	}
	summary(stdout, s)
	return nil
}

// sameLayout reports how s differs from what cfg would start; a port of 0
// in cfg matches any.
func sameLayout(s *stack.Stack, cfg stack.Config) error {
	want := map[string]int{"mysql": cfg.MySQLPort}
	if cfg.Galera {
		want = map[string]int{}
		for i := range cfg.GaleraPorts {
			port := 0
			if cfg.MySQLPort != 0 {
				port = cfg.MySQLPort + i
			}
			want[fmt.Sprintf("mysql-%d", i+1)] = port
		}
	}
	for i := range 3 {
		want[fmt.Sprintf("redis-%d", i+1)] = cfg.RedisPorts[i]
		want[fmt.Sprintf("sentinel-%d", i+1)] = cfg.SentinelPorts[i]
	}
	for _, a := range cfg.Apps {
		want[a.Name] = a.Port
	}
	want["nginx"] = cfg.NginxPort
	procs := s.Procs()
	if len(procs) != len(want) {
		return fmt.Errorf("%d processes, want %d", len(procs), len(want))
	}
	for _, p := range procs {
		port, ok := want[p.Name]
		if !ok {
			return fmt.Errorf("unexpected process %s", p.Name)
		}
		if port != 0 && port != p.Port {
			return fmt.Errorf("%s on port %d, want %d", p.Name, p.Port, port)
		}
	}
	return nil
}

// summary tells a person where things are and what to do next.
func summary(w io.Writer, s *stack.Stack) {
	base := s.BaseURL()
	logs := filepath.Join(s.Dir(), "logs")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  base URL\t%s\n", base)
	fmt.Fprintf(tw, "  try\tcurl -s --json '{\"url\":\"https://example.com/x\"}' %s/api/v1/links\n", base)
	fmt.Fprintf(tw, "  logs\t%s/ (app1.log, app2.log, nginx-access.log, %s.log, redis-1.log, sentinel-1.log, ...)\n", logs, s.MySQL().Name)
	if s.Galera() {
		fmt.Fprintf(tw, "  MariaDB\ta Galera cluster: %s (mysql-1, -2, -3)\n", strings.Join(s.MySQLAddrs(), ", "))
	}
	fmt.Fprintf(tw, "  API key\t%s (send it as X-Api-Key)\n", filepath.Join(s.Dir(), topology.APIKeyFile))
	redisPW := filepath.Join(s.Dir(), stack.RedisPasswordFile)
	fmt.Fprintf(tw, "  Redis\tpassword in %s: REDISCLI_AUTH=$(cat %s) redis-cli -p %d\n", redisPW, redisPW, s.Redis()[0].Port)
	fmt.Fprintf(tw, "  Sentinel\tpassword in %s\n", filepath.Join(s.Dir(), stack.SentinelPasswordFile))
	fmt.Fprintf(tw, "  status\tmake status   (or: bin/stack status)\n")
	fmt.Fprintf(tw, "  stop\tmake down     (or: bin/stack down)\n")
	tw.Flush()
}

// down stops every process of the stack in dir.
func down(dir string, stdout io.Writer) error {
	s, err := stack.Attach(dir)
	if errors.Is(err, stack.ErrNoStack) {
		fmt.Fprintf(stdout, "no stack in %s\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	n := len(running(s))
	if err := s.Close(); err != nil {
		return err
	}
	if left := running(s); len(left) > 0 {
		return fmt.Errorf("down: still running after stop: %s", strings.Join(left, ", "))
	}
	fmt.Fprintf(stdout, "stopped %d processes of the stack in %s\n", n, dir)
	return nil
}

// running returns the names of the stack's running processes.
func running(s *stack.Stack) []string {
	var names []string
	for _, p := range s.Procs() {
		if p.Running() {
			names = append(names, p.Name)
		}
	}
	return names
}

// status prints every process with its pid, port and state, then the
// Redis master.
func status(ctx context.Context, dir string, stdout io.Writer) error {
	s, err := stack.Attach(dir)
	if errors.Is(err, stack.ErrNoStack) {
		fmt.Fprintf(stdout, "no stack in %s (start one with `make up`)\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stack in %s, base URL %s\n", s.Dir(), s.BaseURL())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tPORT\tSTATE")
	for _, p := range s.Procs() {
		pid, state := "-", "down"
		if n := p.Pid(); n != 0 {
			pid, state = fmt.Sprint(n), "up"
			if p.Frozen() {
				state = "frozen"
			}
		}
		if on, err := p.Partitioned(ctx); err == nil && on {
			state += ", partitioned"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.Name, pid, p.Port, state)
	}
	tw.Flush()
	if s.Galera() {
		galeraStatus(ctx, s, stdout)
	}
	mctx, cancel := context.WithTimeout(ctx, masterTimeout)
	defer cancel()
	if !slices.ContainsFunc(s.Sentinels(), (*stack.Proc).Running) {
		fmt.Fprintln(stdout, "master: unknown (no sentinel is running)")
	} else if m, err := s.Master(mctx); err != nil {
		fmt.Fprintf(stdout, "master: unknown (%v)\n", err)
	} else {
		fmt.Fprintf(stdout, "master: %s (%s)\n", m.Name, m.Addr())
	}
	return nil
}

// galeraStatus prints how each Galera node sees itself and its cluster:
// "mysql-1  Synced, Primary, cluster size 3".
func galeraStatus(ctx context.Context, s *stack.Stack, stdout io.Writer) {
	fmt.Fprintln(stdout, "galera:")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, p := range s.MySQLNodes() {
		state := "down"
		switch {
		case p.Frozen(): // would not answer
			state = "frozen"
		case p.Running():
			gctx, cancel := context.WithTimeout(ctx, masterTimeout)
			g, err := s.GaleraStatus(gctx, p)
			cancel()
			state = g.String()
			if err != nil {
				state = fmt.Sprintf("unknown (%v)", err)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\n", p.Name, state)
	}
	tw.Flush()
}

// master prints the Redis master as the sentinels see it.
func master(ctx context.Context, dir string, stdout io.Writer) error {
	s, err := stack.Attach(dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, masterTimeout)
	defer cancel()
	m, err := s.Master(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s\n", m.Name, m.Addr())
	return nil
}

// control applies a process control (kill, term, …) to the named
// processes, in order, stopping at the first failure.
func control(ctx context.Context, dir, cmd string, names []string, stdout io.Writer) error {
	s, err := stack.Attach(dir)
	if err != nil {
		return err
	}
	procs := make([]*stack.Proc, len(names))
	for i, name := range names {
		if procs[i], err = s.Proc(name); err != nil {
			var valid []string
			for _, p := range s.Procs() {
				valid = append(valid, p.Name)
			}
			return usageError{fmt.Sprintf("%v; names: %s", err, strings.Join(valid, " "))}
		}
	}
	for _, p := range procs {
		did, err := controls[cmd](ctx, p)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, did)
	}
	return nil
}

// controls are the commands that act on named processes: each does its
// deed to p and says what it did.
var controls = map[string]func(ctx context.Context, p *stack.Proc) (string, error){
	"kill": signalled("killed", (*stack.Proc).Kill),
	"term": signalled("terminated", (*stack.Proc).Term),
	"stop": signalled("froze", (*stack.Proc).Stop),
	"cont": signalled("thawed", (*stack.Proc).Cont),
	"restart": func(ctx context.Context, p *stack.Proc) (string, error) {
		err := p.Restart(ctx)
		return fmt.Sprintf("restarted %s (pid %d, %s)", p.Name, p.Pid(), p.Addr()), err
	},
	"partition": func(ctx context.Context, p *stack.Proc) (string, error) {
		did := fmt.Sprintf("partitioned %s: packets to %s are dropped", p.Name, p.Addr())
		if host := p.GaleraHost(); host != "" {
			did = fmt.Sprintf("partitioned %s from its peers: packets from and to %s are dropped; %s still answers (error 1047 outside the primary component)", p.Name, host, p.Addr())
		}
		return did, p.Partition(ctx)
	},
	"heal": func(ctx context.Context, p *stack.Proc) (string, error) { return "healed " + p.Name, p.Heal(ctx) },
}

// signalled is a control that signals p and names the pid it had.
func signalled(did string, signal func(*stack.Proc) error) func(context.Context, *stack.Proc) (string, error) {
	return func(_ context.Context, p *stack.Proc) (string, error) {
		msg := fmt.Sprintf("%s %s (pid %d)", did, p.Name, p.Pid())
		return msg, signal(p)
	}
}

// checkBinary fails unless bin is an executable file, saying how to build it.
func checkBinary(bin string) error {
	fi, err := os.Stat(bin)
	if err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return nil
	}
	if err == nil {
		err = errors.New("not an executable file")
	}
	return fmt.Errorf("shortener binary %s: %v; build it with `make build` (or run `make up`), or name it with -bin", bin, err)
}
