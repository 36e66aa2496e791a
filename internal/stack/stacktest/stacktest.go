// Package stacktest starts local stacks (MariaDB, Redis, Sentinels, and
// when asked the apps and nginx) for integration tests.
//
// A test that breaks a server (kills, freezes, stops or partitions it,
// flushes Redis, changes a server's configuration) starts a stack of its
// own with Start, or StartRedis when it needs no MariaDB, torn down with
// the test. Every other test shares its
// package's one stack (Shared), started on first use and stopped after
// the package's last test (Main), and keeps out of the other tests' way:
// a MariaDB database of its own (Database), Redis keys under a prefix of
// its own (KeyPrefix) where the code under test takes one, or keys no
// other test of the package uses where it does not (cache and the apps
// name theirs without a prefix).
package stacktest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/internal/stack"
)

// startTimeout bounds a stack's start-up; it normally takes a few seconds,
// most of it the sentinels finding each other.
const startTimeout = 90 * time.Second

// logTail is how many lines of each server's log a failed test prints.
const logTail = 25

// Start starts a stack in a temporary directory and stops it when the test
// ends, printing the end of every server's log first if the test failed.
//
// Without the server binaries it skips the test, saying how to run it,
// unless SHORTENER_INTEGRATION=1, where it fails: CI must not pass by
// skipping.
func Start(tb testing.TB) *stack.Stack {
	tb.Helper()
	return StartWith(tb, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		return stack.Start(ctx, stack.Config{Dir: dir, KillWithParent: true, Log: log})
	})
}

// StartRedis is Start without MariaDB (stack.Config.WithoutMySQL): Redis
// and the sentinels alone, for a test of the Redis tier that needs a
// stack of its own and no database, at a fraction of the CPU time.
func StartRedis(tb testing.TB) *stack.Stack {
	tb.Helper()
	return StartWith(tb, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		return stack.Start(ctx, stack.Config{Dir: dir, KillWithParent: true, Log: log, WithoutMySQL: true})
	})
}

// StartGalera is Start with MariaDB as a three-node Galera cluster
// (stack.Config.Galera), for the tests of what a node's loss, freeze or
// partition does; without the Galera programs it skips, or fails under
// SHORTENER_INTEGRATION=1, as Start does without the servers.
func StartGalera(tb testing.TB) *stack.Stack {
	tb.Helper()
	RequireGalera(tb)
	return StartWith(tb, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		return stack.Start(ctx, stack.Config{Dir: dir, KillWithParent: true, Log: log, Galera: true})
	})
}

// StartWith is Start with the caller's way of starting the stack: start
// gets a fresh temporary directory and a logger that writes to the test
// log, and must set stack.Config.KillWithParent, so that a crashed test
// leaves no server behind. The end-to-end tests (e2e) start the whole
// stack through it with the code "stack up" runs (package topology).
func StartWith(tb testing.TB, start func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error)) *stack.Stack {
	tb.Helper()
	RequirePrograms(tb)

	// Registered before the stack's cleanup, so it runs after it: Close
	// still logs, and nothing may log once the test has finished.
	w := LogWriter(tb)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, dir, err := startFresh(ctx, tb.TempDir, log, start)
	if err != nil {
		// Start has stopped what it started; the logs tell why.
		if a, aerr := stack.Attach(dir); aerr == nil {
			logTails(tb, a)
		}
		tb.Fatalf("start stack in %s: %v", dir, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			logTails(tb, s)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close stack: %v", err)
		}
	})
	return s
}

// startFresh runs start in a directory newDir makes. The stack picks
// free ports and its servers bind them a moment later; another test's
// server may take one in between (seen beside a CPU hog: MariaDB "Address
// already in use"). A fresh start in a fresh directory picks fresh ports;
// anything else fails at once. It returns the last directory tried.
func startFresh(ctx context.Context, newDir func() string, log *slog.Logger, start func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error)) (*stack.Stack, string, error) {
	dir := newDir()
	s, err := start(ctx, dir, log)
	for try := 1; err != nil && try < 3 && strings.Contains(err.Error(), "Address already in use"); try++ {
		log.Warn("a port was taken between its choice and its bind; starting again", "err", err)
		dir = newDir()
		s, err = start(ctx, dir, log)
	}
	return s, dir, err
}

// RequirePrograms skips the test unless the programs a stack runs
// (stack.Programs) are installed, saying how to get them; with
// SHORTENER_INTEGRATION=1 it fails the test instead, because CI must not
// pass by skipping.
func RequirePrograms(tb testing.TB) {
	tb.Helper()
	requireInstalled(tb, "integration test needs the stack's servers", stack.MissingPrograms())
}

// RequireGalera skips the test unless what a Galera cluster needs
// besides the stack's servers (stack.GaleraPrograms) is installed, saying
// how to get it; with SHORTENER_INTEGRATION=1 it fails the test instead.
func RequireGalera(tb testing.TB) {
	tb.Helper()
	requireInstalled(tb, "Galera test needs its programs", stack.MissingGaleraPrograms())
}

// requireInstalled is Unavailable, saying what needs which of miss,
// unless nothing is missing.
func requireInstalled(tb testing.TB, what string, miss []stack.Program) {
	tb.Helper()
	if err := stack.MissingError(miss); err != nil {
		Unavailable(tb, fmt.Sprintf("%s; install them or run `make test`: %v", what, err))
	}
}

// RequireRoot skips the test unless it runs as root, as iptables (a
// partition) needs; with SHORTENER_INTEGRATION=1 it fails instead.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Unavailable(tb, "test needs root for iptables (stack partitions); run `make test` as root, as CI does")
	}
}

// Unavailable fails the test under SHORTENER_INTEGRATION=1 and skips it
// otherwise, with the same message.
func Unavailable(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv("SHORTENER_INTEGRATION") == "1" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// logTails prints the end of each server's log to the test log.
func logTails(tb testing.TB, s *stack.Stack) {
	tb.Helper()
	for _, p := range s.Procs() {
		tb.Logf("--- %s: last lines of %s:\n%s", p, p.LogFile(), p.LogTail(logTail))
	}
}

// LogWriter returns a writer that sends each write to the test log, as a
// line, until the test's cleanup runs: a test may not log once it has
// finished, and servers and runs may still write then.
func LogWriter(tb testing.TB) io.Writer {
	w := &tbWriter{tb: tb}
	tb.Cleanup(w.close)
	return w
}

// tbWriter sends log lines to the test log until the test ends.
type tbWriter struct {
	mu     sync.Mutex
	tb     testing.TB
	closed bool
}

func (w *tbWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.tb.Log(strings.TrimSuffix(string(b), "\n"))
	}
	return len(b), nil
}

func (w *tbWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
