package cache

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// redisLogger sends go-redis's own messages (dial failures, sentinel
// switches) to slog, so they land in the JSON log with everything else.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.InfoContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// RouteLibraryLogs sends go-redis's messages to log. go-redis has one
// logger per process, so only main calls this.
func RouteLibraryLogs(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }
