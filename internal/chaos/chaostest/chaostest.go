// Package chaostest runs chaos scenarios from integration tests: a short
// run of each named scenario against a test's stack, failing the test
// when a scenario's row does not hold. Timing checks are reported, never
// asserted (chaos.Config.EnforceTiming is off): a test must pass on a busy
// machine, and `make chaos` measures time on a quiet one.
package chaostest

import (
	"context"
	"strings"
	"testing"
	"time"

	"shortener/internal/chaos"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// Config is the short run tests use: 200 requests/s (CPU for the stack and
// for the other packages' tests running beside it on a small machine),
// 200 links, and 20 s of phases. make test runs every package at once on
// as few as two cores, where the machine itself stalls for seconds at
// times: a request gets 10 s before it counts as unanswered, and the
// in-flight bound covers that long a stall.
func Config() chaos.Config {
	cfg := chaos.DefaultConfig()
	cfg.Rate = 200
	cfg.Links = 200
	cfg.Timeout = 10 * time.Second
	cfg.MaxInFlight = 4000
	cfg.Warmup, cfg.Steady, cfg.Fault, cfg.Recovery = 2*time.Second, 4*time.Second, 8*time.Second, 6*time.Second
	cfg.EnforceTiming = false
	return cfg
}

// Run runs the named scenarios in order against target on s with cfg and
// the ledger's accounts plus extra, logs each report's figures, fails the
// test for every row that does not hold, and returns the reports.
func Run(tb testing.TB, s *stack.Stack, target chaos.Target, cfg chaos.Config, extra []chaos.Account, names ...string) []*chaos.Report {
	tb.Helper()
	r, err := chaos.NewRunner(s, target, cfg, stacktest.LogWriter(tb))
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	for _, a := range extra {
		r.AddAccount(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(names)+1)*3*time.Minute)
	defer cancel()
	if err := r.Setup(ctx); err != nil {
		tb.Fatal(err)
	}
	var out []*chaos.Report
	for _, name := range names {
		sc, err := chaos.ScenarioNamed(name)
		if err != nil {
			tb.Fatal(err)
		}
		rep, err := r.Run(ctx, sc)
		if rep != nil {
			logReport(tb, rep)
			out = append(out, rep)
		}
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

// logReport logs the figures of rep and fails the test unless its row
// holds.
func logReport(tb testing.TB, rep *chaos.Report) {
	tb.Helper()
	t := rep.Total
	fault := rep.Phases[2].All.Latency
	tb.Logf("%s: %d requests (%d redirects, %d creates), %d failed, %d unknown; fault phase p99 %s max %s",
		rep.Scenario, t.All.Sent, t.Redirects.Sent, t.Creates.Sent, t.All.Failed, t.All.Unknown, fault.P99, fault.Max)
	for _, c := range rep.Checks {
		tb.Logf("%s: check %s: want %s, got %s (ok %v, required %v)", rep.Scenario, c.What, c.Want, c.Got, c.OK, c.Required)
	}
	if !rep.Holds {
		var errs []string
		for _, e := range rep.Errors[:min(5, len(rep.Errors))] {
			errs = append(errs, e.Kind+" "+e.Phase+": "+e.Message)
		}
		tb.Errorf("%s: the row does not hold: %s; errors: %s", rep.Scenario, strings.Join(rep.Failures(), " "), strings.Join(errs, "; "))
	}
}
