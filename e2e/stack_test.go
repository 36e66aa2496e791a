package e2e

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/internal/topology"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// startFullStack starts what "stack up" starts, with the same code, on
// free ports in a temporary directory; it stops with the test. edit, if
// any, changes the stack's configuration first.
func startFullStack(tb testing.TB, edit ...func(*stack.Config)) *stack.Stack {
	tb.Helper()
	stacktest.RequirePrograms(tb)
	bin := stacktest.AppBinary(tb)
	return stacktest.StartWith(tb, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		cfg := topology.Config(dir, bin, false, true, log)
		for _, e := range edit {
			e(&cfg)
		}
		return topology.Start(ctx, cfg)
	})
}
