package stack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"shortener/internal/poll"
)

// attachEmpty writes a stack.json for a stack that never started and
// attaches to it: enough to exercise pid files without any server.
func attachEmpty(tb testing.TB) *Stack {
	tb.Helper()
	cfg, err := Config{
		Dir:       tb.TempDir(),
		Apps:      []App{{Name: "app1", NodeID: 1}, {Name: "app2", NodeID: 2}},
		AppBinary: "/opt/build/shortener",
		NginxConf: func(NginxLayout) ([]byte, error) { return nil, nil },
	}.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	st, err := newState(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "pids"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := writeState(cfg.Dir, st); err != nil {
		tb.Fatal(err)
	}
	s, err := Attach(cfg.Dir)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// startProcess starts argv in its own process group and reaps it at the end.
func startProcess(tb testing.TB, argv ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

func TestStalePidFile(t *testing.T) {
	s := attachEmpty(t)
	p, err := s.Proc("redis-1")
	if err != nil {
		t.Fatal(err)
	}

	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	other := startProcess(t, "sleep", "60")

	for _, tc := range []struct {
		name    string
		content string
	}{
		{"no pid file", ""},
		{"garbage", "not a pid\n"},
		{"process gone", strconv.Itoa(exited.Process.Pid)},
		{"pid reused by another program", strconv.Itoa(other.Process.Pid)},
		{"pid of this test binary", strconv.Itoa(os.Getpid())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(p.pidFile())
			if tc.content != "" {
				if err := os.WriteFile(p.pidFile(), []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if pid := p.Pid(); pid != 0 {
				t.Fatalf("Pid: got %d, want 0", pid)
			}
			if p.Running() {
				t.Fatal("Running: got true, want false")
			}
			for name, control := range map[string]func() error{"Kill": p.Kill, "Term": p.Term, "Stop": p.Stop, "Cont": p.Cont} {
				if err := control(); !errors.Is(err, ErrNotRunning) {
					t.Errorf("%s: got %v, want ErrNotRunning", name, err)
				}
			}
			if !alive(other.Process.Pid) || frozen(other.Process.Pid) {
				t.Fatalf("the unrelated process %d was signalled", other.Process.Pid)
			}
		})
	}

	// Close clears a stale pid file so the next start begins clean.
	if err := os.WriteFile(p.pidFile(), []byte(strconv.Itoa(other.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.pidFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale pid file after Close: got %v, want removed", err)
	}
	if !alive(other.Process.Pid) {
		t.Error("Close killed an unrelated process")
	}
}

// TestPidFileOfOtherProcess checks control of a server this process did not
// start (as after Attach from a new CLI invocation): a stand-in whose
// command line reads like redis-1's is found through the pid file, frozen,
// thawed and killed with its process group.
func TestPidFileOfOtherProcess(t *testing.T) {
	s := attachEmpty(t)
	p, err := s.Proc("redis-1")
	if err != nil {
		t.Fatal(err)
	}
	// A shell named redis-server whose $0 names redis-1's address; it
	// forks a sleep, as redis-server forks for replication.
	fake := filepath.Join(t.TempDir(), "redis-server")
	if err := os.Symlink("/bin/sh", fake); err != nil {
		t.Fatal(err)
	}
	cmd := startProcess(t, fake, "-c", "sleep 60; true", "127.0.0.1:"+strconv.Itoa(p.Port))
	pid := cmd.Process.Pid
	if err := writePidFile(p.pidFile(), pid); err != nil {
		t.Fatal(err)
	}
	// The shell starts sleep with vfork and waits, unstoppable, until the
	// child has exec'd; a SIGSTOP to the group in between stops the child
	// before its exec and so leaves the shell in that wait for good. Wait
	// until sleep runs: a real server is past its start-up by now.
	poll.Until(t, "the stand-in to start sleep", func() error {
		for _, m := range groupMembers(pid) {
			if argv := cmdline(m); len(argv) > 0 && argv[0] == "sleep" {
				return nil
			}
		}
		return fmt.Errorf("its group runs %v", groupMembers(pid))
	})

	if got := p.Pid(); got != pid {
		t.Fatalf("Pid: got %d, want %d (cmdline %q)", got, pid, cmdline(pid))
	}
	if q, _ := s.Proc("redis-2"); q.Pid() != 0 {
		t.Fatalf("redis-2 claims pid %d of redis-1's stand-in", q.Pid())
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Frozen() {
		t.Fatal("Frozen after Stop: got false")
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("Running after Kill: got true")
	}
	if _, err := os.Stat(p.pidFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after Kill: got %v, want removed", err)
	}
	// The group kill took the forked sleep along.
	cmd.Wait()
	for _, m := range groupMembers(pid) {
		t.Errorf("pid %d (%q) of the killed group still alive", m, cmdline(m))
	}
}

// groupMembers returns the live processes of process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pgrp, err := procStat(pid); err == nil && pgrp == pgid && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestKindMatches(t *testing.T) {
	s := attachEmpty(t)
	redis1, _ := s.Proc("redis-1")
	mysql, _ := s.Proc("mysql")
	app1, _ := s.Proc("app1")
	app2, _ := s.Proc("app2")
	ngx, _ := s.Proc("nginx")
	port := strconv.Itoa(redis1.Port)
	app1Addr := "-addr=127.0.0.1:" + strconv.Itoa(app1.Port)
	for _, tc := range []struct {
		name string
		p    *Proc
		argv []string
		want bool
	}{
		{"redis title", redis1, []string{"redis-server 127.0.0.1:" + port}, true},
		{"redis before title", redis1, []string{"/usr/bin/redis-server", filepath.Join(redis1.dir(), "redis.conf")}, true},
		{"redis other port", redis1, []string{"redis-server 127.0.0.1:" + port + "1"}, false},
		{"sentinel title on redis port", redis1, []string{"redis-sentinel 127.0.0.1:" + port + " [sentinel]"}, false},
		{"mariadbd", mysql, []string{"/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + mysqlDataDir(mysql), "--port=" + strconv.Itoa(mysql.Port)}, true},
		{"mariadbd other stack", mysql, []string{"/usr/sbin/mariadbd", "--no-defaults", "--datadir=/elsewhere/mysql/data", "--port=1"}, false},
		{"other program", redis1, []string{"sleep", "127.0.0.1:" + port}, false},
		{"empty (zombie)", redis1, nil, false},
		{"app", app1, []string{"/opt/build/shortener", app1Addr}, true},
		{"app's port, other app", app2, []string{"/opt/build/shortener", app1Addr}, false},
		{"other binary on app's port", app1, []string{"/usr/bin/python3", app1Addr}, false},
		{"nginx master", ngx, []string{"nginx: master process /usr/sbin/nginx -p " + ngx.dir() + "/ -c " + nginxConf(ngx) + " -e stderr -g daemon off;"}, true},
		{"nginx of another stack", ngx, []string{"nginx: master process /usr/sbin/nginx -p /elsewhere/nginx/ -c /elsewhere/nginx/nginx.conf"}, false},
	} {
		if got := tc.p.k.matches(tc.p, tc.argv); got != tc.want {
			t.Errorf("%s: matches(%q): got %v, want %v", tc.name, tc.argv, got, tc.want)
		}
	}
}
