package chaos

import (
	"net/http"
	"strings"
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
		got, ok := e.Figure(label)
		if !ok || !strings.HasPrefix(got, want) {
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
