package main

import (
	"errors"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// gcPercentLimited is the garbage collector's GOGC while a soft memory
// limit is in force and GOGC is not set.
//
// A collection marks the whole live heap, which the L1 keeps full (tens
// of MiB of pointers), and with Go's default of 100 one comes every time
// the program has allocated as much again: on hot links a tenth of the
// app's CPU went to it (docs/bench/findings.md, "the garbage
// collector"). At 400 a cycle comes a quarter as often; the memory
// limit, not GOGC, then bounds the heap, and the runtime collects sooner
// as the heap nears it.
const gcPercentLimited = 400

// tuneMemory gives the runtime a soft memory limit and, under one, a
// higher GOGC. The limit is GOMEMLIMIT when set, else 90% of the
// container's (cgroup's) memory limit when there is one (automemlimit;
// AUTOMEMLIMIT=off or another ratio overrides the 90%), else none. A GOGC
// in the environment is always left as Go read it. Without a limit
// nothing changes: a higher GOGC without one would let the heap grow to
// five times what is live. automemlimit reads GOMEMLIMIT and
// AUTOMEMLIMIT from the process's environment itself, as the runtime
// reads GOGC; getenv only tells whether GOGC was given.
func tuneMemory(getenv func(string) string, log *slog.Logger) {
	limit, err := memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup))
	if err != nil && !errors.Is(err, memlimit.ErrNoCgroup) {
		// No limit could be read (an unreadable cgroup): run as Go
		// would, and say so.
		log.Warn("no memory limit from the cgroup", "err", err)
	}
	gogc := getenv("GOGC")
	if p, ok := gcPercentFor(gogc != "", limit); ok {
		debug.SetGCPercent(p)
		gogc = strconv.Itoa(p)
	} else if gogc == "" {
		gogc = "100"
	}
	attrs := []any{"gogc", gogc}
	if limit > 0 && limit < math.MaxInt64 {
		attrs = append(attrs, "limit_mib", limit>>20)
	}
	log.Info("memory", attrs...)
}

// gcPercentFor is the GOGC tuneMemory sets, and whether it sets one:
// gcPercentLimited when a limit is in force and the environment names no
// GOGC.
func gcPercentFor(gogcSet bool, limit int64) (int, bool) {
	if gogcSet || limit <= 0 || limit == math.MaxInt64 {
		return 0, false
	}
	return gcPercentLimited, true
}
