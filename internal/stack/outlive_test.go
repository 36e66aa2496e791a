package stack_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// starterEnv tells a re-executed test binary to act as "stack up": start a
// stack in the named directory and exit, leaving it running.
const starterEnv = "STACK_TEST_STARTER_DIR"

func TestServersOutliveStarter(t *testing.T) {
	if dir := os.Getenv(starterEnv); dir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if _, err := stack.Start(ctx, stack.Config{Dir: dir}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	stacktest.RequirePrograms(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServersOutliveStarter$", "-test.count=1")
	cmd.Env = append(os.Environ(), starterEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter process: %v\n%s", err, out)
	}

	// The starter is gone; a new "invocation" finds its servers running.
	a, err := stack.Attach(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range a.Procs() {
				t.Logf("--- %s:\n%s", p, p.LogTail(20))
			}
		}
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, p := range a.Procs() {
		if !p.Running() {
			t.Errorf("%s not running after the starter exited", p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if m, err := a.Master(ctx); err != nil || m.Name != "redis-1" {
		t.Fatalf("master: got %v, %v, want redis-1", m, err)
	}
	if out, err := runSQL(ctx, a.MySQLDSN(), "SELECT 1"); err != nil || out != "1" {
		t.Fatalf("MariaDB: got %q, %v", out, err)
	}

	pids := runningPids(t, a)
	begin := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped servers of an exited starter in %v", time.Since(begin).Round(time.Millisecond))
	assertGone(t, a, pids)
}
