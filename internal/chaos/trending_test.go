package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTrendingEntry(t *testing.T) {
	links := []Link{{Code: "a"}, {Code: "b"}, {Code: "c"}}
	var results []Result
	for i, n := range []int{5, 3, 1} {
		for range n {
			results = append(results, Result{Kind: Redirect, Link: i, Status: 302})
		}
	}
	results = append(results, Result{Kind: Redirect, Link: 2, Status: 302, WrongLocation: true})
	run := &Run{Results: results, Phases: []Window{{0, time.Second}, {time.Second, 2 * time.Second},
		{2 * time.Second, 4 * time.Second}, {4 * time.Second, 8 * time.Second}}}
	ms := time.Millisecond
	answers := []trendingAnswer{
		{at: 2500 * ms, latency: 2 * ms, status: http.StatusOK, source: "local", codes: []string{"a", "b", "c"}},
		{at: 3 * time.Second, latency: 4 * ms, status: http.StatusOK, source: "local", codes: []string{"a", "b"}},
		{at: 3500 * ms, latency: 30 * ms, status: 0},
		{at: 7 * time.Second, latency: ms, status: http.StatusOK, source: "redis", codes: []string{"c", "b", "a"}},
	}
	e := trendingEntry(run, links, answers)
	for label, want := range map[string]string{
		"trending Jaccard@10 during the fault": "0.833 (2 answers)",
		"trending Jaccard@10 after recovery":   "1.000 (1 answers)",
		"trending p99 / max during the fault":  "30",
	} {
		if got := figure(t, e, label); !strings.HasPrefix(got, want) {
			t.Errorf("%s = %q, want %q…", label, got, want)
		}
	}
	for _, c := range e.Checks {
		if c.ID == "trending.failed" && (c.OK || c.Got != "1") {
			t.Errorf("check %s: %+v, want 1 failed", c.ID, c)
		}
		if c.ID == "trending.quality" && c.OK {
			t.Errorf("check %s passed with 0.833 during the fault", c.ID)
		}
	}
}

// TestAwaitQuietTrending: a run waits while trending's 5m window holds
// links of an earlier run, and starts at once when it is empty or when
// trending does not answer.
func TestAwaitQuietTrending(t *testing.T) {
	var asked, busy atomic.Int32
	busy.Store(1) // answers with links before the window empties
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/trending" || r.URL.Query().Get("window") != "5m" {
			http.NotFound(w, r)
			return
		}
		links := `[]`
		if asked.Add(1) <= busy.Load() {
			links = `[{"code":"old1"},{"code":"old2"}]`
		}
		fmt.Fprintf(w, `{"source":"redis","links":%s}`, links)
	}))
	defer srv.Close()
	r := &Runner{t: Target{BaseURL: srv.URL}, client: srv.Client(), cfg: DefaultConfig()}

	var log bytes.Buffer
	if err := r.AwaitQuietTrending(context.Background(), &log); err != nil {
		t.Fatal(err)
	}
	if got := asked.Load(); got != 2 {
		t.Errorf("asked %d times, want 2 (until the window was empty)", got)
	}
	if !strings.Contains(log.String(), "waiting for earlier clicks") || strings.Count(log.String(), "\n") != 1 {
		t.Errorf("log %q: want one line saying it waits", log.String())
	}

	asked.Store(0)
	busy.Store(0)
	log.Reset()
	if err := r.AwaitQuietTrending(context.Background(), &log); err != nil || asked.Load() != 1 || log.Len() != 0 {
		t.Errorf("empty window: err %v, asked %d, log %q; want no wait and no line", err, asked.Load(), log.String())
	}

	r.t.BaseURL = srv.URL + "/nothing-here"
	log.Reset()
	if err := r.AwaitQuietTrending(context.Background(), &log); err != nil || !strings.Contains(log.String(), "did not answer") {
		t.Errorf("no trending: err %v, log %q; want a line and no wait", err, log.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.t.BaseURL = srv.URL
	busy.Store(1 << 30)
	if err := r.AwaitQuietTrending(ctx, &log); err == nil {
		t.Error("cancelled while waiting: no error, want the context's")
	}
}
