package cache

import (
	"log/slog"

	"shortener/sentinel"
)

// RouteLibraryLogs is sentinel.RouteLibraryLogs, which owns go-redis's
// logger; main and the benchmarks still call it here.
func RouteLibraryLogs(log *slog.Logger) { sentinel.RouteLibraryLogs(log) }
