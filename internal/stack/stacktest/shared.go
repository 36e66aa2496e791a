package stacktest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortener/internal/stack"
)

// shared is the test package's one stack, started on first use.
var shared struct {
	once sync.Once
	s    *stack.Stack
	err  error
}

// Shared returns the test package's stack (MariaDB, Redis, Sentinels; no
// apps), started on first use and stopped by Main after the last test, so
// that a package's tests pay for one start instead of one each. A test
// that uses it must not break a server (see the package comment), and
// keeps its data apart with Database and KeyPrefix. If the test fails,
// the end of every server's log is printed, as Start does.
//
// The package's TestMain must run Main. Without the server binaries
// Shared skips the test, as Start does.
func Shared(tb testing.TB) *stack.Stack {
	tb.Helper()
	RequirePrograms(tb)
	requireMain(tb)
	shared.once.Do(func() { shared.s, shared.err = startShared() })
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			logTails(tb, shared.s)
		}
	})
	return shared.s
}

// startShared starts the shared stack in a temporary directory and has
// Main stop it and remove the directory. Its progress is not logged: no
// test owns it; a failing test prints the servers' own logs instead.
func startShared() (*stack.Stack, error) {
	root, err := os.MkdirTemp("", "stacktest-shared-")
	if err != nil {
		return nil, fmt.Errorf("start the shared stack: %w", err)
	}
	tries := 0
	newDir := func() string { tries++; return filepath.Join(root, strconv.Itoa(tries)) }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, dir, err := startFresh(ctx, newDir, log, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		return stack.Start(ctx, stack.Config{Dir: dir, KillWithParent: true, Log: log})
	})
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("start the shared stack in %s: %w", dir, err)
	}
	atEnd(func() error {
		defer os.RemoveAll(root)
		if err := s.Close(); err != nil {
			return fmt.Errorf("stop the shared stack: %w", err)
		}
		return nil
	})
	return s, nil
}

// databases numbers the databases of Database, so that names are unique
// however a test is named.
var databases atomic.Int64

// notName is what a database name may not hold.
var notName = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// Database adds an empty MariaDB database of the test's own to s (the
// application user's, as the stack's own database is), drops it when the
// test ends, and returns its DSN.
func Database(tb testing.TB, s *stack.Stack) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", databases.Add(1), notName.ReplaceAllString(tb.Name(), "_"))
	name = name[:min(len(name), 64)] // MariaDB's longest name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := s.AddDatabase(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.DropDatabase(ctx, name); err != nil {
			tb.Errorf("drop the test's database: %v", err)
		}
	})
	return dsn
}

// prefixes numbers the prefixes of KeyPrefix.
var prefixes atomic.Int64

// KeyPrefix returns a Redis key prefix no other test of the binary gets,
// for code that takes one (trending.Config.Prefix), ending in ":".
func KeyPrefix(tb testing.TB) string {
	return fmt.Sprintf("test%d:", prefixes.Add(1))
}
