package trending

import (
	"context"
	"shortener"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDistinctPairs: a (client, link) pair counts once a minute; another
// client, another link or the next minute counts again; a click without a
// client always counts; a late click of the minute before is still
// checked, an older one counted.
func TestDistinctPairs(t *testing.T) {
	d := newDistinct()
	for _, tc := range []struct {
		name   string
		client uint64
		code   string
		minute int64
		want   bool
	}{
		{"first", 7, "a", 100, true},
		{"repeat", 7, "a", 100, false},
		{"another link", 7, "b", 100, true},
		{"another client", 8, "a", 100, true},
		{"no client", 0, "a", 100, true},
		{"no client again", 0, "a", 100, true},
		{"next minute", 7, "a", 101, true},
		{"late, the minute before", 7, "a", 100, false},
		{"late, a new pair of the minute before", 9, "a", 100, true},
		{"older than remembered", 7, "a", 99, true},
		{"a gap", 7, "a", 105, true},
		{"after the gap, nothing remembered", 7, "a", 104, true},
	} {
		if got := d.first(tc.client, tc.code, tc.minute); got != tc.want {
			t.Errorf("%s: first(%d, %q, %d) = %v, want %v", tc.name, tc.client, tc.code, tc.minute, got, tc.want)
		}
	}
}

// TestOneClientIsNotATrend: one client following a link 1,500 times
// counts once in its minute and stays below the public threshold, 300
// clicks of 150 people put their link first, and bots count for nothing.
// Redis is unreachable here: the answers are the local ones.
func TestOneClientIsNotATrend(t *testing.T) {
	rc := offlineRedis()
	rc.BreakerFailures, rc.BreakerWindow, rc.BreakerDelay, rc.BreakerSuccesses = 1, 1, time.Hour, 1
	cfg := Config{Redis: rc, Node: "n1", Prefix: "t:",
		Tick: time.Second, Refresh: time.Second, Capacity: 100, MaxQueued: 1000, MinClients: 5}
	c := &clock{t: time.Date(2026, 12, 5, 12, 0, 10, 0, time.UTC)}
	r := newRanking(t, cfg, &links{}, c.now)
	var clicks []shortener.Click
	at := c.now()
	for range 1500 {
		clicks = append(clicks, shortener.Click{Code: "l1", At: at, Agent: shortener.AgentBrowser, Client: 1})
	}
	for p := range uint64(150) {
		for range 2 {
			clicks = append(clicks, shortener.Click{Code: "l2", At: at, Agent: shortener.AgentBrowser, Client: 1000 + p})
		}
	}
	for p := range uint64(50) {
		clicks = append(clicks, shortener.Click{Code: "l3", At: at, Agent: shortener.AgentBot, Client: 5000 + p})
	}
	r.Observe(clicks)
	r.step(context.Background())
	top, err := r.Top("5m", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Links) != 1 || top.Links[0].Link.Code != "l2" || top.Links[0].Clicks != 150 {
		t.Fatalf("5m answer %+v, want only l2 with 150 (l1's one client is below 5, l3's bots count nothing)", top.Links)
	}
	for reason, want := range map[string]float64{"bot": 50, "repeat": 1499 + 150} {
		if got := testutil.ToFloat64(r.m.ignored.WithLabelValues(reason)); got != want {
			t.Errorf("ignored{%s} = %v, want %v", reason, got, want)
		}
	}
}
