package chaos

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// scrapeText scrapes text served as an app's /metrics.
func scrapeText(text string) (Metrics, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, text) }))
	defer srv.Close()
	return Scrape(context.Background(), srv.Client(), srv.URL)
}

const exposition = `# HELP shortener_lookups_total Redirect lookups (Resolve calls).
# TYPE shortener_lookups_total counter
shortener_lookups_total 1200
shortener_redis_lookups_total{result="hit",role="replica"} 700
shortener_redis_lookups_total{result="hit",role="master"} 50
shortener_redis_lookups_total{result="miss",role="replica"} 9
shortener_redis_fills_total{result="ok"} 31
shortener_redis_fills_total{result="skipped"} 4
shortener_redis_fills_total{result="error"} 6
shortener_clicks_dropped_total{reason="full"} 0
shortener_clicks_dropped_total{reason="disk_full"} 40
shortener_clicks_dropped_total{reason="closed"} 2
shortener_state_files_set_aside_total{file="trending_spool"} 1
shortener_mysql_queries_total{result="found"} 12
shortener_mysql_queries_total{result="error"} 3
shortener_breaker_state{breaker="read"} 0
shortener_breaker_state{breaker="write"} 1
shortener_breaker_transitions_total{breaker="write",from="closed",to="open"} 2
shortener_sentinel_events_total{event="switch_master"} 1
# TYPE shortener_redis_lookup_duration_seconds histogram
shortener_redis_lookup_duration_seconds_bucket{le="0.05"} 90
shortener_redis_lookup_duration_seconds_bucket{le="0.0625"} 98
shortener_redis_lookup_duration_seconds_bucket{le="+Inf"} 100
shortener_redis_lookup_duration_seconds_sum 1.2
shortener_redis_lookup_duration_seconds_count 100
# TYPE shortener_stall_seconds histogram
shortener_stall_seconds_bucket{le="0.0125"} 497
shortener_stall_seconds_bucket{le="+Inf"} 500
shortener_stall_seconds_sum 0.3
shortener_stall_seconds_count 500
go_gc_duration_seconds{quantile="0.5"} 1.5e-05
some_other{label="with \"quotes\", and a comma"} 3
`

func TestScrapeKeepsTheSeriesARunReads(t *testing.T) {
	m, err := scrapeText(exposition)
	if err != nil {
		t.Fatal(err)
	}
	got := m.keep()
	want := map[string]float64{
		keyLookups: 1200, keyHits: 750, keyFillsOK: 31, keyFillsErr: 6, keyMySQL: 15,
		keyDropped: 42, keyDroppedBy + "full": 0, keyDroppedBy + "disk_full": 40, keyDroppedBy + "closed": 2,
		keySetAside + "trending_spool": 1,
		keyState + "read":              0, keyState + "write": 1,
		keyTrans + "write/closed/open": 2,
		keyWaitOver + "0.05":           10, keyWaitOver + "0.0625": 2, keyWaitOver + "+Inf": 0,
		keyStallOver + "0.0125": 3, keyStallOver + "+Inf": 0,
	}
	if len(got) != len(want) {
		t.Errorf("got %d series %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if got := m.Sum("shortener_redis_lookups_total", "result", "hit", "role", "master"); got != 50 {
		t.Errorf("Sum of master hits = %v, want 50", got)
	}
}

func TestScrapeRejectsGarbage(t *testing.T) {
	for _, text := range []string{"novalue\n", "x{a=\"b} 1\n", "x{a=\"b\"} notanumber\n"} {
		if _, err := scrapeText(text); err == nil {
			t.Errorf("Scrape of %q: no error, want one", text)
		}
	}
}

// series builds samples of one app, one every 200 ms, from values of key
// (a negative value means the scrape failed: the app was down).
func series(app, key string, vals ...float64) []Sample {
	var out []Sample
	for i, v := range vals {
		s := Sample{At: time.Duration(i) * 200 * time.Millisecond, App: app}
		if v >= 0 {
			s.Up, s.Values = true, map[string]float64{key: v}
		}
		out = append(out, s)
	}
	return out
}

func TestMovedAfter(t *testing.T) {
	// Fills stall from 0.4 s to 1.0 s, then move again.
	ss := series("app1", keyFillsOK, 1, 2, 3, 3, 3, 3, 5, 6)
	if got := movedAfter(ss, "app1", keyFillsOK, 700*time.Millisecond); got == nil || *got != 500*time.Millisecond {
		t.Errorf("movedAfter(0.7 s) = %v, want 0.5 s (at 1.2 s)", optMS(got))
	}
	if got := movedAfter(ss, "app1", keyFillsOK, 1500*time.Millisecond); got != nil {
		t.Errorf("movedAfter(after the last scrape) = %v, want none", *got)
	}
	if got := movedAfter(ss, "app2", keyFillsOK, 0); got != nil {
		t.Errorf("movedAfter(app without samples) = %v, want none", *got)
	}
	if got := longestStall(ss, "app1", keyFillsOK, Window{0, 2 * time.Second}); got != 600*time.Millisecond {
		t.Errorf("longestStall = %v, want 600ms", got)
	}
}

// TestCountersOfARestartedApp: an app that restarts begins its counters
// at zero; its first scrape after the restart is growth, not a drop.
func TestCountersOfARestartedApp(t *testing.T) {
	ss := series("app1", keyTrans+"read/closed/open", 3, 3, -1, -1, 1, 1)
	tr := transitions(ss, []string{"app1"})
	if len(tr) != 1 || tr[0].Count != 1 || tr[0].At != 800*time.Millisecond || tr[0].From != "closed" || tr[0].To != "open" {
		t.Errorf("transitions = %+v, want one closed→open at 800ms", tr)
	}
	if d := delta(5, 2); d != 2 {
		t.Errorf("delta(5, 2) = %v, want 2 (a reset)", d)
	}
}

func TestBreakerStates(t *testing.T) {
	ss := series("app1", keyState+"read", 0, 0, 1, 2, -1, 0)
	got := breakerStates(ss, []string{"app1"}, []string{"read"})
	want := []string{"closed", "open", "half-open", "down", "closed"}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want states %v", got, want)
	}
	for i, w := range want {
		if got[i].State != w {
			t.Errorf("state %d = %s, want %s", i, got[i].State, w)
		}
	}
}

func TestGrowthOverAWindow(t *testing.T) {
	ss := series("app1", keyMySQL, 10, 10, 14, 20, 20, 30)
	// Scrapes at 0.2 … 0.8 s: growth from 10 (at 0.2 s) to 20 (at 0.8 s).
	if got := growth(ss, "app1", keyMySQL, Window{200 * time.Millisecond, 900 * time.Millisecond}); got != 10 {
		t.Errorf("growth = %v, want 10", got)
	}
}

// TestRedisWaitPastOneDeadline: the check reads the first histogram bound
// past one deadline, over the fault phase only, on every app.
func TestRedisWaitPastOneDeadline(t *testing.T) {
	over := keyWaitOver + "0.0625"
	ss := append(series("app1", over, 0, 3, 3, 3, 5), series("app2", over, 0, 0, 0, 1, 1)...)
	for i := range ss {
		ss[i].Values[keyWaitOver+"0.05"] = 100 // at the deadline: allowed
	}
	phases := []Window{{0, 0}, {0, 300 * time.Millisecond}, {300 * time.Millisecond, 700 * time.Millisecond}, {700 * time.Millisecond, time.Second}}
	run := func() *Run {
		return &Run{Config: Config{RedisTimeout: 50 * time.Millisecond}, Samples: ss, Apps: []string{"app1", "app2"},
			Phases: phases, Report: &Report{Phases: make([]Phase, 4)}}
	}
	got := WithinOneDeadline(run())[0]
	if got.OK || !strings.HasPrefix(got.Got, "1 ") {
		t.Errorf("check = %+v, want 1 lookup over (app2 at 0.6 s; app1's 3 came before the fault)", got)
	}
	ss = series("app1", over, 0, 3, 3, 3, 5)
	if got := WithinOneDeadline(run())[0]; !got.OK {
		t.Errorf("check = %+v, want it to hold", got)
	}
	ss = series("app1", keyLookups, 0, 1, 2, 3, 4)
	if got := WithinOneDeadline(run())[0]; got.OK {
		t.Errorf("check without the histogram = %+v, want it to fail", got)
	}

	// A stall of the app over a quarter deadline (12.5 ms) in the fault
	// phase allows that app's lookups up to two deadlines (100 ms), not
	// beyond, and not another app's. Per app, five scrapes 200 ms apart:
	// lookups above 62.5 ms, above 100 ms, stalls above 12.5 ms.
	app := func(name string, above, beyond, stalls [5]float64) []Sample {
		out := series(name, over, 0, 0, 0, 0, 0)
		for i := range out {
			out[i].Values[over] = above[i]
			out[i].Values[keyWaitOver+"0.1"] = beyond[i]
			out[i].Values[keyStallOver+"0.0125"] = stalls[i]
		}
		return out
	}
	two, one, none := [5]float64{0, 0, 0, 2, 2}, [5]float64{0, 0, 0, 1, 1}, [5]float64{}
	for _, tc := range []struct {
		name string
		ss   []Sample
		ok   bool
		got  string
	}{
		{"a stall allows up to two deadlines", app("app1", two, none, one), true,
			"0 above 62.5 ms (the first bucket past one deadline); 2 more up to 100 ms in apps that stalled over 12.5 ms in the phase (their stall probe), allowed"},
		{"not beyond two deadlines", app("app1", two, one, one), false, "1 above 62.5 ms (the first bucket past one deadline); 1 more"},
		{"a stall before the fault", app("app1", two, none, [5]float64{0, 1, 1, 1, 1}), false, "2 above 62.5 ms (the first bucket past one deadline)"},
		{"another app's stall", append(app("app1", two, none, none), app("app2", none, none, one)...), false, "2 above 62.5 ms (the first bucket past one deadline)"},
	} {
		ss = tc.ss
		if got := WithinOneDeadline(run())[0]; got.OK != tc.ok || !strings.HasPrefix(got.Got, tc.got) {
			t.Errorf("%s: check = %+v, want ok %v and %q", tc.name, got, tc.ok, tc.got)
		}
	}
}
