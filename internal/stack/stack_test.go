package stack_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// testTimeout bounds each integration test's waits; a failover takes a few
// seconds here.
const testTimeout = 45 * time.Second

func TestFailoverAndRejoin(t *testing.T) {
	s := stacktest.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	old, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old.Name != "redis-1" {
		t.Fatalf("master at start: got %s, want redis-1", old.Name)
	}

	begin := time.Now()
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	if old.Running() {
		t.Fatalf("%s still running after Kill", old)
	}
	m, err := s.WaitMaster(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover: %s is master %v after SIGKILL of %s", m, time.Since(begin).Round(time.Millisecond), old.Name)
	if m.Name == old.Name || m.Kind != stack.KindRedis {
		t.Fatalf("new master: got %s, want another redis node", m)
	}
	if r, err := m.Replication(ctx); err != nil || r.Role != "master" {
		t.Fatalf("new master %s replication: got %+v, %v, want role master", m, r, err)
	}

	// The killed master must come back as a replica of the new one, not as
	// a second master.
	begin = time.Now()
	if err := old.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, old.Name+" to rejoin as a replica", func() error {
		r, err := old.Replication(ctx)
		if err != nil {
			return err
		}
		if r.Role != "slave" || r.MasterPort != m.Port || !r.LinkUp {
			return fmt.Errorf("%s: got %+v, want linked replica of port %d", old.Name, r, m.Port)
		}
		return nil
	})
	t.Logf("rejoin: %s is a linked replica of %s %v after Restart", old.Name, m.Name, time.Since(begin).Round(time.Millisecond))
	if got, err := s.Master(ctx); err != nil || got.Name != m.Name {
		t.Fatalf("master after rejoin: got %v, %v, want %s", got, err, m.Name)
	}

	pids := runningPids(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, s, pids)
}

func TestStopCont(t *testing.T) {
	s := stacktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	r := s.Redis()[1]
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if !r.Frozen() || !r.Running() {
		t.Fatalf("%s after Stop: frozen %v running %v, want both", r, r.Frozen(), r.Running())
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := r.Replication(short)
	cancelShort()
	if err == nil {
		t.Fatalf("%s answered while frozen", r)
	}
	if err := r.Cont(); err != nil {
		t.Fatal(err)
	}
	if r.Frozen() {
		t.Fatalf("%s still frozen after Cont", r)
	}
	if _, err := r.Replication(ctx); err != nil {
		t.Fatalf("%s after Cont: %v", r, err)
	}

	// Close must get through frozen servers of every kind.
	for _, p := range []*stack.Proc{s.MySQL(), s.Redis()[0], s.Sentinels()[2]} {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	pids := runningPids(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, s, pids)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := r.Stop(); !errors.Is(err, stack.ErrNotRunning) {
		t.Fatalf("Stop after Close: got %v, want ErrNotRunning", err)
	}
}

func TestAttach(t *testing.T) {
	s := stacktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	a, err := stack.Attach(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	want, got := s.Procs(), a.Procs()
	if len(got) != len(want) {
		t.Fatalf("attached procs: got %d, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.Name != w.Name || g.Kind != w.Kind || g.Port != w.Port || g.Pid() != w.Pid() || g.Pid() == 0 {
			t.Errorf("attached proc %d: got %s %s pid %d, want %s %s pid %d", i, g, g.Kind, g.Pid(), w, w.Kind, w.Pid())
		}
	}
	if a.MySQLDSN() != s.MySQLDSN() || strings.Join(a.SentinelAddrs(), ",") != strings.Join(s.SentinelAddrs(), ",") {
		t.Errorf("attached addresses differ: %s %v vs %s %v", a.MySQLDSN(), a.SentinelAddrs(), s.MySQLDSN(), s.SentinelAddrs())
	}
	if m, err := a.Master(ctx); err != nil || m.Name != "redis-1" {
		t.Fatalf("attached master: got %v, %v, want redis-1", m, err)
	}
	if _, err := a.Proc("redis-9"); !errors.Is(err, stack.ErrUnknownProc) {
		t.Errorf("Proc(redis-9): got %v, want ErrUnknownProc", err)
	}

	// Another process's view of the directory must refuse a second stack.
	if _, err := stack.Start(ctx, stack.Config{Dir: s.Dir()}); !errors.Is(err, stack.ErrRunning) {
		t.Fatalf("Start on a running stack: got %v, want ErrRunning", err)
	}

	// The attached stack controls servers it did not start: by pid file.
	victim, err := a.Proc("redis-3")
	if err != nil {
		t.Fatal(err)
	}
	pid := victim.Pid()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	orig, _ := s.Proc("redis-3")
	if victim.Running() || orig.Running() {
		t.Fatalf("redis-3 (pid %d) running after attached Kill: attached %v, starter %v", pid, victim.Running(), orig.Running())
	}
	if _, err := os.Stat(s.Dir() + "/pids/redis-3.pid"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after Kill: got %v, want it removed", err)
	}
	if err := victim.Kill(); !errors.Is(err, stack.ErrNotRunning) {
		t.Errorf("second Kill: got %v, want ErrNotRunning", err)
	}

	// Restarted by the attached stack, it rejoins as a replica, and the
	// starting stack sees it again through its pid file.
	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	master := s.Redis()[0]
	poll.Until(t, "redis-3 to rejoin as a replica", func() error {
		r, err := orig.Replication(ctx)
		if err != nil {
			return err
		}
		if r.Role != "slave" || r.MasterPort != master.Port || !r.LinkUp {
			return fmt.Errorf("redis-3: got %+v, want linked replica of port %d", r, master.Port)
		}
		return nil
	})
	if orig.Pid() != victim.Pid() || orig.Pid() == pid {
		t.Errorf("restarted redis-3: starter sees pid %d, attached %d, old %d", orig.Pid(), victim.Pid(), pid)
	}

	// A sentinel restarted from its rewritten config answers for the master.
	sent, _ := a.Proc("sentinel-2")
	if err := sent.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := a.Master(ctx); err != nil || m.Name != "redis-1" {
		t.Fatalf("master after sentinel restart: got %v, %v, want redis-1", m, err)
	}

	pids := runningPids(t, s)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, s, pids)
	for _, p := range s.Procs() {
		if p.Running() {
			t.Errorf("%s running after the attached Close", p)
		}
	}
}

// runningPids returns the pid of every running server, by name.
func runningPids(tb testing.TB, s *stack.Stack) map[string]int {
	tb.Helper()
	pids := map[string]int{}
	for _, p := range s.Procs() {
		if pid := p.Pid(); pid != 0 {
			pids[p.Name] = pid
		}
	}
	return pids
}

// assertGone checks that each pid has exited and each pid file is gone.
func assertGone(tb testing.TB, s *stack.Stack, pids map[string]int) {
	tb.Helper()
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(st), ") Z ") {
				tb.Errorf("%s (pid %d) still exists after Close: %s", name, pid, st)
			}
		}
		if _, err := os.Stat(s.Dir() + "/pids/" + name + ".pid"); !errors.Is(err, os.ErrNotExist) {
			tb.Errorf("%s pid file after Close: got %v, want none", name, err)
		}
	}
}

// TestPortTaken checks that Start names a port another program holds, and
// the process that wanted it, before it starts anything.
func TestPortTaken(t *testing.T) {
	stacktest.RequirePrograms(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err = stack.Start(ctx, stack.Config{Dir: dir, SentinelPorts: [3]int{0, port, 0}, KillWithParent: true})
	if !errors.Is(err, stack.ErrPortInUse) {
		t.Fatalf("Start with a taken port: got %v, want ErrPortInUse", err)
	}
	for _, want := range []string{"sentinel-2", ":" + strconv.Itoa(port), fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if pids, _ := os.ReadDir(dir + "/pids"); len(pids) > 0 {
		t.Errorf("Start left pid files after a port error: %v", pids)
	}
}
