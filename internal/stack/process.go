package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// This file holds the operating-system side of process control: /proc,
// pid files and signals. Nothing here knows about kinds of server.

// procStat returns a process's state letter (R, S, T, Z, …) and process
// group, from /proc/<pid>/stat.
func procStat(pid int) (state byte, pgrp int, err error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, 0, err
	}
	if len(st.State) != 1 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: state %q", pid, st.State)
	}
	return st.State[0], st.PGRP, nil
}

// alive reports whether pid is a live process. A zombie counts as gone: it
// has exited and only waits for its parent, maybe another process, to reap
// it. But a multi-threaded process's leader turns zombie while its other
// threads are still exiting, and those hold its files, listening sockets
// included; until the last one is gone, a restart could not bind the port.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	state, _, err := procStat(pid)
	if err != nil {
		return false
	}
	if state != 'Z' && state != 'X' {
		return true
	}
	tasks, err := procfs.AllThreads(pid)
	return err == nil && len(tasks) > 1
}

// frozen reports whether pid is stopped by a signal (SIGSTOP).
func frozen(pid int) bool {
	state, _, err := procStat(pid)
	return err == nil && state == 'T'
}

// cmdline returns the arguments of pid as /proc shows them now, which for
// servers that set a process title is the title.
func cmdline(pid int) []string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return nil
	}
	argv, _ := p.CmdLine() // nil on error
	return argv
}

// signal sends sig to pid, or to its whole process group when group is set
// and pid leads its own group (as every server started here does): killing
// or freezing a server must also kill or freeze its forked children, such as
// a redis-server's replication child. A process already gone (ESRCH) is no
// error: the callers wait for the state they want anyway.
func signal(pid int, sig syscall.Signal, group bool) error {
	target := pid
	if group {
		if _, pgrp, err := procStat(pid); err == nil && pgrp == pid {
			target = -pid
		}
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %d %v: %w", pid, sig, err)
	}
	return nil
}

// readPidFile returns the pid in path, 0 if there is none.
func readPidFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func writePidFile(path string, pid int) error {
	if err := WriteFileAtomic(path, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// removePidFile removes path if it still names pid, so that a late cleanup of
// an old process does not delete the pid file of its successor.
func removePidFile(path string, pid int) {
	if readPidFile(path) == pid {
		os.Remove(path)
	}
}

// permanent marks an error that ends a poll at once: waiting longer cannot help.
type permanent struct{ err error }

func (e permanent) Error() string { return e.err.Error() }
func (e permanent) Unwrap() error { return e.err }

// Poll calls check every interval until it returns nil, returns a permanent
// error, or ctx ends; on timeout the last check's error says what was awaited.
// Package chaos polls with it too.
func Poll(ctx context.Context, every time.Duration, check func(context.Context) error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}
