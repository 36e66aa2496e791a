package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// How long controls wait for a process to change state. SIGTERM gets a
// grace period long enough for MariaDB to flush; the others are generous
// bounds on what the kernel does at once.
const (
	termGrace   = 5 * time.Second
	killWait    = 5 * time.Second
	signalWait  = 2 * time.Second
	portWait    = 2 * time.Second
	readyPoll   = 50 * time.Millisecond
	controlPoll = 10 * time.Millisecond
)

// Proc is one server process of a stack. Its controls work whether this
// process started the server (then it also reaps it) or found it through
// the pid file after Attach.
type Proc struct {
	// Name identifies the process within its stack: "mysql" (or a Galera
	// node, "mysql-1" …), "redis-1", …, "app1", "nginx".
	Name string
	// Kind is KindMySQL, KindRedis, KindSentinel, KindApp or KindNginx.
	Kind string
	// Port is the TCP port the server listens on at 127.0.0.1.
	Port int
	// NodeID is an app's Snowflake node ID; 0 for other kinds.
	NodeID int

	s *Stack
	k kind

	ctl   sync.Mutex // serialises the controls (Kill, Restart, …) on this process
	mu    sync.Mutex // guards child
	child *child     // last server this process started for p, if any
	// extraEnv is RestartWith's environment while it launches the
	// server; guarded by ctl.
	extraEnv []string

	// peer holds a Galera node's ports for its peers; zero otherwise.
	peer GaleraPorts
	// bootstrap is set while a Galera node starts as a new cluster's
	// first node (startNode); guarded by ctl.
	bootstrap bool
	// deaf holds the client ports Deafen cut off from the server; guarded
	// by ctl.
	deaf []int
}

// child is a server started by this process; a goroutine waits for it so
// that it never lingers as a zombie.
type child struct {
	pid  int
	done chan struct{} // closed once reaped
	err  error         // exit status; read only after done
}

func (c *child) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return alive(c.pid)
	}
}

// Addr returns the server's "127.0.0.1:port".
func (p *Proc) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

// String returns the name and address, for logs and test failures.
func (p *Proc) String() string { return p.Name + " (" + p.Addr() + ")" }

// LogFile returns the path of the file that receives the server's output.
func (p *Proc) LogFile() string { return filepath.Join(p.s.dir, "logs", p.Name+".log") }

// LogTail returns the last n lines of the server's log, for error messages.
func (p *Proc) LogTail(n int) string {
	f, err := os.Open(p.LogFile())
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		f.Seek(-window, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *Proc) dir() string     { return filepath.Join(p.s.dir, p.Name) }
func (p *Proc) pidFile() string { return filepath.Join(p.s.dir, "pids", p.Name+".pid") }

// Pid returns the server's pid, or 0 when it is not running. A pid file
// whose process is gone, or whose pid now belongs to another program, is
// stale and yields 0.
func (p *Proc) Pid() int {
	p.mu.Lock()
	c := p.child
	p.mu.Unlock()
	if c != nil && c.running() {
		return c.pid
	}
	pid := readPidFile(p.pidFile())
	if pid == 0 || (c != nil && pid == c.pid) {
		return 0
	}
	if !alive(pid) || !p.k.matches(p, cmdline(pid)) {
		return 0
	}
	return pid
}

// Running reports whether the server process exists (frozen or not).
func (p *Proc) Running() bool { return p.Pid() != 0 }

// Frozen reports whether the server is stopped by SIGSTOP.
func (p *Proc) Frozen() bool {
	pid := p.Pid()
	return pid != 0 && frozen(pid)
}

// Kill sends SIGKILL to the server (and its forked children) and returns
// once it is gone.
func (p *Proc) Kill() error { return p.control("kill", "killed", p.kill) }

// Term sends SIGTERM and returns once the server has exited; one that takes
// longer than its grace period is killed. The grace is a few seconds, and
// longer for an app, which first drains its connections (see KindApp).
func (p *Proc) Term() error { return p.control("term", "terminated", p.term) }

// Stop freezes the server with SIGSTOP: its sockets stay open but nothing
// answers, which is how a hung server looks to its clients. It returns once
// the kernel reports the process stopped.
func (p *Proc) Stop() error {
	return p.control("stop", "frozen", func() error { return p.signalAndWait(syscall.SIGSTOP, true) })
}

// Cont resumes a server frozen by Stop.
func (p *Proc) Cont() error {
	return p.control("cont", "continued", func() error { return p.signalAndWait(syscall.SIGCONT, false) })
}

// Restart stops the server if it runs and starts it again with the same
// port, configuration and data, returning once it is ready. A Redis node
// comes back as a replica of whichever node the sentinels name as master,
// so a restart never makes a second master. A Galera node rejoins its
// cluster, ready once synced (sent what it missed by IST, or everything
// by SST); with no other node running it bootstraps the cluster instead,
// if no other node's data is ahead of its own (ErrBehind; see
// Stack.StartMySQL). A partitioned server is healed
// first: it could not show itself ready otherwise. On error the server is
// left stopped. Without a deadline on ctx, Restart gives up after a minute.
func (p *Proc) Restart(ctx context.Context) error {
	return p.restart(ctx, nil)
}

// RestartWith is Restart with env ("KEY=value") added to the server's
// environment, after everything else, so overriding it, for this start
// only: a later Restart, by anyone, runs it as the stack does. A chaos
// run restarts an app with a setting its fault needs (a small journal
// segment) and puts it back with Restart. Only an app's environment is
// the caller's to give (KindApp): the others run with this process's
// (a sentinel with its password added, sentinelEnv).
func (p *Proc) RestartWith(ctx context.Context, env ...string) error {
	if p.Kind != KindApp {
		return fmt.Errorf("restart %s: kind %s takes no environment", p.Name, p.Kind)
	}
	for _, e := range env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("restart %s: environment %q: want KEY=value", p.Name, e)
		}
	}
	return p.restart(ctx, env)
}

// restart is Restart and RestartWith: env is extra environment for this
// start.
func (p *Proc) restart(ctx context.Context, env []string) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultRestartTimeout)
	defer cancel()
	return p.control("restart", "", func() error {
		if err := p.heal(ctx); err != nil {
			return err
		}
		if err := p.term(); err != nil && !errors.Is(err, ErrNotRunning) {
			return err
		}
		p.extraEnv = env
		defer func() { p.extraEnv = nil }()
		return p.startServer(ctx, false)
	})
}

// start is Start's way in: a launch under the control lock.
func (p *Proc) start(ctx context.Context, fresh bool) error {
	return p.control("start", "", func() error { return p.startServer(ctx, fresh) })
}

// startServer launches the server, a Galera node as a new cluster's
// first or as a joiner (startNode). The caller holds p.ctl.
func (p *Proc) startServer(ctx context.Context, fresh bool) error {
	if p.galera() {
		return p.startNode(ctx, fresh)
	}
	return p.launch(ctx, fresh)
}

// control runs f under the control lock, names the process in its error
// (op: "kill") and logs done ("killed"), if any, when f succeeds.
func (p *Proc) control(op, done string, f func() error) error {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if err := f(); err != nil {
		return fmt.Errorf("%s %s: %w", op, p.Name, err)
	}
	if done != "" {
		p.s.log.Info(done, "proc", p.Name)
	}
	return nil
}

// launch configures and starts the server and waits until it is ready; if
// it never gets ready, launch kills it. The caller holds p.ctl.
func (p *Proc) launch(ctx context.Context, fresh bool) error {
	if pid := p.Pid(); pid != 0 {
		return fmt.Errorf("pid %d: %w", pid, ErrRunning)
	}
	// A server that cannot bind exits, but a ready check could first reach
	// whatever holds the port and take it for ours. The wait covers a
	// predecessor whose sockets the kernel is still closing.
	portCtx, cancel := context.WithTimeout(ctx, portWait)
	err := Poll(portCtx, controlPoll, func(context.Context) error {
		if !portFree(p.Port) {
			return portInUse(p.Name, p.Port)
		}
		return nil
	})
	cancel()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.dir(), 0o755); err != nil {
		return err
	}
	if err := p.k.configure(ctx, p, fresh); err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	prog, err := p.k.executable(p)
	if err != nil {
		return err
	}
	args := p.k.args(p)
	env, err := p.environment()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(p.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- stack %s: %s %s\n", time.Now().Format(time.RFC3339Nano), prog, strings.Join(args, " "))
	if len(p.extraEnv) > 0 {
		fmt.Fprintf(logf, "--- with %s (RestartWith, this start only)\n", strings.Join(p.extraEnv, " "))
	}

	cmd := exec.Command(prog, args...)
	cmd.Dir = p.dir()
	cmd.Env = env // nil inherits this process's
	// An *os.File is handed to the server as its fd, so output keeps
	// flowing to the log after this process exits.
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a terminal's Ctrl-C to the CLI must not reach
	// the servers, and a kill can take the server's forked children along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.s.killWithParent {
		KillWithParent(cmd.SysProcAttr)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// The pid file is written before the reaper can remove it, so a server
	// that dies at once leaves no stale file behind.
	c := &child{pid: cmd.Process.Pid, done: make(chan struct{})}
	pidFile := p.pidFile()
	if err := writePidFile(pidFile, c.pid); err != nil {
		signal(c.pid, syscall.SIGKILL, true)
		cmd.Wait()
		return err
	}
	go func() {
		c.err = cmd.Wait()
		removePidFile(pidFile, c.pid)
		close(c.done)
	}()
	p.mu.Lock()
	p.child = c
	p.mu.Unlock()
	p.s.log.Debug("started", "proc", p.Name, "pid", c.pid, "addr", p.Addr())

	begin := time.Now()
	err = Poll(ctx, readyPoll, func(ctx context.Context) error {
		select {
		case <-c.done:
			return permanent{startupExit(c.err, p.LogFile(), p.LogTail(15))}
		default:
		}
		return p.k.ready(ctx, p)
	})
	if err == nil && p.k.setup != nil {
		err = p.k.setup(ctx, p)
	}
	if err != nil {
		if kerr := p.kill(); kerr != nil && !errors.Is(kerr, ErrNotRunning) {
			err = errors.Join(err, kerr)
		}
		return fmt.Errorf("wait ready: %w", err)
	}
	p.s.log.Info("ready", "proc", p.Name, "pid", c.pid, "addr", p.Addr(), "took", time.Since(begin).Round(time.Millisecond))
	return nil
}

// environment is the server's whole environment, nil to inherit this
// process's: its kind's, then RestartWith's for this start.
func (p *Proc) environment() ([]string, error) {
	if p.k.env == nil {
		return nil, nil
	}
	env, err := p.k.env(p)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return append(env, p.extraEnv...), nil
}

// kill is Kill without the lock.
func (p *Proc) kill() error {
	pid := p.Pid()
	if pid == 0 {
		return ErrNotRunning
	}
	if err := signal(pid, syscall.SIGKILL, true); err != nil {
		return err
	}
	return p.waitGone(pid, killWait)
}

// term is Term without the lock.
func (p *Proc) term() error {
	pid := p.Pid()
	if pid == 0 {
		return ErrNotRunning
	}
	// A frozen process keeps SIGTERM pending and never exits, so thaw it
	// first. SIGTERM goes to the leader alone: servers stop their own
	// children as part of a clean shutdown.
	if err := signal(pid, syscall.SIGCONT, true); err != nil {
		return err
	}
	if err := signal(pid, syscall.SIGTERM, false); err != nil {
		return err
	}
	grace := cmp.Or(p.k.grace, termGrace)
	if err := p.waitGone(pid, grace); err == nil {
		return nil
	}
	p.s.log.Warn("no exit after SIGTERM; sending SIGKILL", "proc", p.Name, "pid", pid, "grace", grace)
	if err := signal(pid, syscall.SIGKILL, true); err != nil {
		return err
	}
	return p.waitGone(pid, killWait)
}

// close is Close's part for one process: heal it, term it if it runs,
// remove its pid file even if stale, and put an app's clicks directory
// back on disk if a chaos run left it on a tmpfs (MountClicks).
func (p *Proc) close() error {
	return p.control("stop", "", func() error {
		healErr := p.heal(context.Background())
		err := p.term()
		if err == nil {
			p.s.log.Info("stopped", "proc", p.Name)
		}
		var mountErr error
		if p.Pid() == 0 {
			os.Remove(p.pidFile())
			if on, merr := p.ClicksMounted(); merr != nil || on {
				mountErr = cmp.Or(merr, p.unmountClicks())
			}
		}
		if errors.Is(err, ErrNotRunning) {
			err = nil
		}
		return errors.Join(healErr, err, mountErr)
	})
}

// waitGone returns once pid has exited: reaped, if it is our child (so the
// port and pid are free when Kill returns), or gone from /proc or a zombie
// otherwise.
func (p *Proc) waitGone(pid int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p.mu.Lock()
	c := p.child
	p.mu.Unlock()
	if c != nil && c.pid == pid {
		select {
		case <-c.done:
		case <-ctx.Done():
			return fmt.Errorf("pid %d still running after %v", pid, d)
		}
	} else {
		err := Poll(ctx, controlPoll, func(context.Context) error {
			if alive(pid) {
				return fmt.Errorf("pid %d still running", pid)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	removePidFile(p.pidFile(), pid)
	return nil
}

// signalAndWait sends SIGSTOP or SIGCONT to the server's process group and
// waits until the kernel shows the process frozen (or no longer frozen), so
// that the caller's next step sees the new state.
func (p *Proc) signalAndWait(sig syscall.Signal, wantFrozen bool) error {
	pid := p.Pid()
	if pid == 0 {
		return ErrNotRunning
	}
	if err := signal(pid, sig, true); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	return Poll(ctx, controlPoll, func(context.Context) error {
		if !alive(pid) {
			return permanent{ErrNotRunning}
		}
		if frozen(pid) != wantFrozen {
			return fmt.Errorf("pid %d: frozen=%v", pid, !wantFrozen)
		}
		return nil
	})
}

// startupExit is the error of a server that exited before it was ready:
// err, its exit, stays inspectable (join starts an aborted joiner again).
func startupExit(err error, logFile, tail string) error {
	return fmt.Errorf("exited during start-up (%w); %s ends:\n%s", err, logFile, tail)
}
