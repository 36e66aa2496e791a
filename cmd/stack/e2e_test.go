package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// The end-to-end tests run the whole topology of docs/design.md — MariaDB,
// Redis with Sentinel, two shortener binaries, nginx — as "stack up" does,
// on free ports, and break it under load through nginx (chaos_test.go).

// binDir holds the shortener binary the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stack-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// shortenerBinary builds cmd/shortener once per test binary, on first use,
// so that tests that need no app do not wait for the build.
func shortenerBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(binDir, "shortener")
	buildOnce.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("find the go command to build the app: %w", err)
			return
		}
		out, err := exec.Command(goCmd, "build", "-o", bin, "shortener/cmd/shortener").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build shortener/cmd/shortener: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return bin
}

// startFullStack starts what "stack up" starts, with the same code, on
// free ports in a temporary directory; it stops with the test.
func startFullStack(tb testing.TB) *stack.Stack {
	tb.Helper()
	stacktest.RequirePrograms(tb)
	bin := shortenerBinary(tb)
	return stacktest.StartWith(tb, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		return startStack(ctx, stackConfig(dir, bin, false, true, log))
	})
}
