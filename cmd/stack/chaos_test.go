package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/chaos"
)

// The short chaos check: two scenarios of the chaos matrix (cmd/chaos),
// the Redis master's SIGKILL and an app's SIGKILL, each about 20 s at a
// modest rate, against the whole stack as "stack up" runs it. It fails
// when any redirect fails or goes unanswered, or when any acknowledged
// create is lost, duplicated or does not resolve afterwards. The full
// matrix, with its reports, is `make chaos`.
func TestChaosCheck(t *testing.T) {
	s := startFullStack(t)
	cfg := chaos.DefaultConfig()
	// 200 requests/s leaves CPU to the stack and to the other packages'
	// tests running beside this one on a small machine; 5% creates stay
	// well below nginx's 100 creates/s per client address.
	cfg.Rate = 200
	cfg.Links = 200
	// make test runs every package's tests at once, each with its own
	// servers, on as few as two cores: the machine itself stalls for
	// seconds at times. The check is about answers, not latency (the
	// chaos reports measure that), so a request gets 10 s before it counts
	// as unanswered, and the in-flight bound covers that long a stall.
	cfg.Timeout = 10 * time.Second
	cfg.MaxInFlight = 4000
	cfg.Warmup, cfg.Steady, cfg.Fault, cfg.Recovery = 2*time.Second, 4*time.Second, 8*time.Second, 6*time.Second
	live := &testLog{tb: t}
	defer live.close()
	r, err := chaos.NewRunner(s, cfg, live)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kill-master", "kill-app"} {
		sc, err := chaos.ScenarioNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Run(ctx, sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkChaos(t, rep)
	}
}

// checkChaos fails the test for a failed or unanswered redirect, and for
// an acknowledged create the ledger cannot account for.
func checkChaos(tb testing.TB, rep *chaos.Report) {
	tb.Helper()
	t, l := rep.Total, rep.Ledger
	fault := rep.Phases[2].All.Latency
	tb.Logf("%s: %d requests (%d redirects, %d creates), %d failed, %d unknown; fault phase p99 %s max %s; "+
		"ledger: %d acknowledged, %d stored, %d retried, %d replayed",
		rep.Scenario, t.All.Sent, t.Redirects.Sent, t.Creates.Sent, t.All.Failed, t.All.Unknown,
		fault.P99, fault.Max, l.Acknowledged, l.Stored, l.Retried, l.Replayed)
	for _, e := range rep.RunErrors {
		tb.Errorf("%s: %s", rep.Scenario, e)
	}
	if rep.LedgerError != "" {
		tb.Errorf("%s: ledger: %s", rep.Scenario, rep.LedgerError)
	}
	if n := t.Redirects.Failed + t.Redirects.Unknown; n > 0 || l.WrongLocation > 0 {
		tb.Errorf("%s: %d of %d redirects failed or went unanswered (%d with a wrong Location), want 0; errors: %s",
			rep.Scenario, n, t.Redirects.Sent, l.WrongLocation, errorList(rep))
	}
	if l.Acknowledged == 0 {
		tb.Errorf("%s: no create was acknowledged: the check checked nothing", rep.Scenario)
	}
	for what, ps := range map[string][]chaos.Problem{
		"lost": l.Lost, "stored with another URL": l.Mismatched, "stored twice": l.Duplicated,
		"not resolving through nginx": l.Unresolved, "with a key naming another code": l.KeyMismatched,
	} {
		if len(ps) > 0 {
			tb.Errorf("%s: %d acknowledged creates %s, want 0; first: %+v", rep.Scenario, len(ps), what, ps[0])
		}
	}
}

func errorList(rep *chaos.Report) string {
	var parts []string
	for _, e := range rep.Errors[:min(5, len(rep.Errors))] {
		parts = append(parts, fmt.Sprintf("%s %s ×%d: %s", e.Kind, e.Phase, e.Count, e.Message))
	}
	return strings.Join(parts, "; ")
}

// testLog turns the runner's live lines into test log lines until closed:
// a test may not log once it has finished.
type testLog struct {
	mu     sync.Mutex
	tb     testing.TB
	closed bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.tb.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLog) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
