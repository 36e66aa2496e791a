package sentinel

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// libraryLogger sends go-redis's own messages (dial failures, sentinel
// switches) to slog, so they land in the JSON log with everything else.
type libraryLogger struct{ log *slog.Logger }

func (l libraryLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.InfoContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// RouteLibraryLogs sends go-redis's messages to log. go-redis has one
// logger per process, so only main (and a test binary's TestMain) calls
// this.
func RouteLibraryLogs(log *slog.Logger) { redis.SetLogger(libraryLogger{log}) }
