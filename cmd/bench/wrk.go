package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The load is wrk's (Debian's package): a closed loop of keep-alive
// connections in C, light enough on two shared cores that what it
// measures is the server, not itself. The requests come from bench.lua.
//
//go:embed bench.lua
var benchLua []byte

// wrk runs one load against one target.
type wrk struct {
	bin      string
	script   string // bench.lua, written out once
	threads  int
	conns    int
	duration time.Duration
	timeout  time.Duration
}

// newWrk finds wrk and writes the script into dir.
func newWrk(dir string, threads, conns int, duration, timeout time.Duration) (*wrk, error) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return nil, errors.New("wrk is not installed: apt-get install wrk (Debian's package)")
	}
	script := filepath.Join(dir, "bench.lua")
	if err := os.WriteFile(script, benchLua, 0o644); err != nil {
		return nil, fmt.Errorf("write bench.lua: %w", err)
	}
	return &wrk{bin: bin, script: script, threads: threads, conns: conns, duration: duration, timeout: timeout}, nil
}

// run loads url for d (the configured duration when 0) with the script's
// args and returns wrk's summary.
func (w *wrk) run(ctx context.Context, url string, d time.Duration, args ...string) (measure, error) {
	if d == 0 {
		d = w.duration
	}
	argv := []string{
		"-t", strconv.Itoa(w.threads), "-c", strconv.Itoa(w.conns),
		"-d", strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))) + "s",
		"--timeout", strconv.Itoa(max(1, int(w.timeout/time.Second))) + "s",
		"-s", w.script, url, "--",
	}
	// Bounded: wrk stops itself after d; the context is the backstop.
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, w.bin, append(argv, args...)...).CombinedOutput()
	if err != nil {
		return measure{}, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	m, err := parseWrk(string(out))
	if err != nil {
		return measure{}, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	return m, nil
}

// wrkSummary is the line bench.lua's done() prints.
type wrkSummary struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Connect    int64 `json:"connect"`
	Read       int64 `json:"read"`
	Write      int64 `json:"write"`
	Status     int64 `json:"status"`
	Timeout    int64 `json:"timeout"`
	P50US      int64 `json:"p50_us"`
	P99US      int64 `json:"p99_us"`
	MaxUS      int64 `json:"max_us"`
}

// parseWrk reads the "BENCH {json}" line out of wrk's output.
func parseWrk(out string) (measure, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "BENCH ")
		if !ok {
			continue
		}
		var s wrkSummary
		if err := json.Unmarshal([]byte(rest), &s); err != nil {
			return measure{}, fmt.Errorf("parse summary: %w", err)
		}
		if s.DurationUS <= 0 {
			return measure{}, errors.New("parse summary: no duration")
		}
		secs := float64(s.DurationUS) / 1e6
		return measure{
			Requests: s.Requests,
			Seconds:  secs,
			RPS:      float64(s.Requests-s.Status) / secs, // answered well

			Errors:    s.Connect + s.Read + s.Write + s.Timeout,
			BadStatus: s.Status,
			P50ms:     float64(s.P50US) / 1e3,
			P99ms:     float64(s.P99US) / 1e3,
			MaxMs:     float64(s.MaxUS) / 1e3,
		}, nil
	}
	return measure{}, errors.New("no BENCH summary line in wrk's output")
}
