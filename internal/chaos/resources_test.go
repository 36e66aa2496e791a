package chaos

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestCheckClicks(t *testing.T) {
	links := []Link{{Code: "a"}, {Code: "b"}, {Code: "c"}}
	served, unknown := []int64{10, 5, 3}, []int64{0, 1, 2}
	before := map[string]int64{"a": 100}
	for _, tc := range []struct {
		name         string
		after        map[string]int64
		drain        error
		lost, double int64
		ok           bool
	}{
		{"all stored", map[string]int64{"a": 110, "b": 5, "c": 3}, nil, 0, 0, true},
		{"unknown ones may be counted", map[string]int64{"a": 110, "b": 6, "c": 5}, nil, 0, 0, true},
		{"lost", map[string]int64{"a": 107, "b": 5, "c": 3}, nil, 3, 0, false},
		{"double", map[string]int64{"a": 110, "b": 7, "c": 3}, nil, 0, 1, false},
		{"not shipped", map[string]int64{"a": 110, "b": 5, "c": 3}, errors.New("journals not shipped"), 0, 0, false},
	} {
		e, tally := checkClicks(links, served, unknown, before, tc.after, tc.drain)
		if tally.Lost != tc.lost || tally.Double != tc.double || tally.Served != 18 {
			t.Errorf("%s: got lost %d double %d served %d, want %d, %d, 18", tc.name, tally.Lost, tally.Double, tally.Served, tc.lost, tc.double)
		}
		if ok := len(failing(e)) == 0; ok != tc.ok {
			t.Errorf("%s: check ok %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

// dropsRun is a run whose clicks account found lost and double clicks,
// and whose app1 counted drops, disk_full among them, across a restart.
func dropsRun(lost, double int64, diskFull float64) *Run {
	smp := func(at time.Duration, up bool, all, full float64) Sample {
		return Sample{At: at, App: "app1", Up: up, Values: map[string]float64{keyDropped: all, keyDroppedBy + "disk_full": full}}
	}
	return &Run{
		Apps:   []string{"app1"},
		Clicks: &ClicksTally{Served: 100, Stored: 100 - lost, Lost: lost, Double: double},
		Samples: []Sample{
			smp(0, true, 0, 0), smp(time.Second, false, 0, 0), // restarted with the tmpfs
			smp(2*time.Second, true, 0, 0), smp(3*time.Second, true, 5+diskFull, diskFull),
			smp(4*time.Second, true, 0, 0), // restarted back on disk: the counter begins again
		},
	}
}

func TestClicksExplainedByDrops(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lost, double int64
		diskFull     float64
		failing      []string
	}{
		{"lost within the drops", 20, 0, 20, nil},
		{"none lost, drops counted", 0, 0, 20, nil},
		{"more lost than dropped", 30, 0, 20, []string{"clicks.explained"}},
		{"double", 0, 1, 20, []string{"clicks.explained"}},
		{"no disk_full drop: the fault did not happen", 0, 0, 0, []string{"clicks.dropped"}},
	} {
		var failed []string
		for _, c := range ClicksExplainedByDrops("disk_full")(dropsRun(tc.lost, tc.double, tc.diskFull)) {
			if !c.OK {
				failed = append(failed, c.ID)
			}
		}
		if !slices.Equal(failed, tc.failing) {
			t.Errorf("%s: failing checks %v, want %v", tc.name, failed, tc.failing)
		}
	}
	if c := ClicksExplainedByDrops("disk_full")(&Run{}); len(c) != 2 || c[1].OK {
		t.Errorf("without the clicks account's tally: got %+v, want a failed clicks.explained", c)
	}
}

func TestCheckDeletes(t *testing.T) {
	fault := Window{From: 10 * time.Second, To: 30 * time.Second}
	dels := []deletion{
		{code: "a", at: 12 * time.Second, status: http.StatusNoContent},
		{code: "b", at: 14 * time.Second, status: http.StatusNoContent},
		{code: "c", at: 16 * time.Second, status: http.StatusServiceUnavailable},
	}
	held := []probe{
		{code: "a", via: "nginx", at: 13 * time.Second, status: http.StatusGone},
		{code: "a", via: "app2", at: 13 * time.Second}, // no answer during the fault: not a breach
		{code: "b", via: "app1", at: 15 * time.Second, status: http.StatusNotFound},
		{code: "c", via: "app1", at: 17 * time.Second, status: http.StatusFound}, // never acknowledged
		{code: "a", via: "app1", at: 50 * time.Second, status: http.StatusGone, final: true},
	}
	for _, tc := range []struct {
		name    string
		probes  []probe
		failing []string
	}{
		{"held", held, []string{"deletes.acknowledged"}},
		{"stale within the grace", append(slices.Clone(held), probe{code: "b", via: "app2", at: 14*time.Second + deletesGrace, status: http.StatusFound}),
			[]string{"deletes.at-once", "deletes.acknowledged"}},
		{"resurrected", append(slices.Clone(held), probe{code: "b", via: "app2", at: 20 * time.Second, status: http.StatusFound}),
			[]string{"deletes", "deletes.at-once", "deletes.acknowledged"}},
		{"unanswered after the heal", append(slices.Clone(held), probe{code: "b", via: "app2", at: 50 * time.Second, status: 502, final: true}),
			[]string{"deletes", "deletes.acknowledged"}},
	} {
		e := checkDeletes(3, dels, tc.probes, fault)
		if got := failing(e); !slices.Equal(got, tc.failing) {
			t.Errorf("%s: failing %v, want %v", tc.name, got, tc.failing)
		}
	}
	e := checkDeletes(3, dels, held, fault)
	if got := figure(t, e, "deletes sent / acknowledged (204)"); got != "3 / 2 (2 acknowledged within the fault phase)" {
		t.Errorf("deletes figure: got %q", got)
	}
	if got := figure(t, e, "deletes not acknowledged"); got != "503 ×1" {
		t.Errorf("not acknowledged: got %q", got)
	}
}

func TestRedirectP99NearSteady(t *testing.T) {
	steady := &Report{Phases: []Phase{{}, {Redirects: PhaseStats{Latency: Latency{P99: 5 * time.Millisecond}}}}}
	run := func(slow time.Duration) *Run {
		r := &Run{Config: Config{RedisTimeout: 50 * time.Millisecond}, Report: steady,
			Marks: map[string]time.Duration{markSlow: time.Second, markSlowEnd: 2 * time.Second}}
		for i := range 100 {
			lat := 2 * time.Millisecond
			if i == 99 {
				lat = slow // the 100th of 100: p99 is the 99th
			}
			r.Results = append(r.Results, Result{Kind: Redirect, Intended: time.Second + time.Duration(i)*time.Millisecond, Latency: lat})
		}
		r.Results = append(r.Results, Result{Kind: Redirect, Intended: 3 * time.Second, Latency: time.Hour}) // after the window
		return r
	}
	if c := RedirectP99NearSteady(markSlow, markSlowEnd)(run(time.Second))[0]; !c.OK {
		t.Errorf("one slow redirect of 100: got %+v, want the p99 to ignore it", c)
	}
	r := run(0)
	for i := 90; i < 100; i++ {
		r.Results[i].Latency = 60 * time.Millisecond
	}
	if c := RedirectP99NearSteady(markSlow, markSlowEnd)(r)[0]; c.OK {
		t.Errorf("ten redirects of 100 at 60 ms: got %+v, want p99 over 55 ms to fail", c)
	}
}

func TestCheckEdits(t *testing.T) {
	fault := Window{From: 10 * time.Second, To: 30 * time.Second}
	edits := []edit{
		{code: "a", version: 1, sent: 12 * time.Second, answered: 12*time.Second + 50*time.Millisecond, status: http.StatusOK},
		{code: "a", version: 2, sent: 16 * time.Second, answered: 16*time.Second + 50*time.Millisecond, status: http.StatusOK},
		{code: "b", version: 1, sent: 14 * time.Second, status: http.StatusServiceUnavailable},
	}
	fine := []sighting{
		{code: "a", via: "nginx", at: 11 * time.Second, status: 302, version: 0},
		{code: "a", via: "app1", at: 12*time.Second + 500*time.Millisecond, status: 302, version: 0}, // within the grace
		{code: "a", via: "app2", at: 14 * time.Second, status: 302, version: 1},
		{code: "a", via: "app2", at: 15 * time.Second, version: -2},             // no answer during the fault
		{code: "b", via: "app1", at: 20 * time.Second, status: 302, version: 0}, // its edit was refused
		{code: "a", via: "app1", at: 50 * time.Second, status: 302, version: 2, final: true},
		{code: "b", via: "app1", at: 50 * time.Second, status: 302, version: 0, final: true},
	}
	for _, tc := range []struct {
		name    string
		extra   sighting
		failing []string
	}{
		{"held", sighting{code: "a", via: "nginx", at: 17 * time.Second, status: 302, version: 2},
			[]string{"edits.at-once", "edits.acknowledged"}},
		{"old past the grace", sighting{code: "a", via: "app2", at: 18 * time.Second, status: 302, version: 1},
			[]string{"edits", "edits.at-once", "edits.acknowledged"}},
		{"first version back long after", sighting{code: "a", via: "app1", at: 25 * time.Second, status: 302, version: 0},
			[]string{"edits", "edits.at-once", "edits.acknowledged"}},
		{"unknown destination", sighting{code: "a", via: "app1", at: 13 * time.Second, status: 302, version: -1},
			[]string{"edits", "edits.at-once", "edits.acknowledged"}},
		{"not the latest after the heal", sighting{code: "a", via: "app2", at: 16*time.Second + 500*time.Millisecond, status: 302, version: 1, final: true},
			[]string{"edits", "edits.at-once", "edits.acknowledged"}},
		{"no redirect after the heal", sighting{code: "b", via: "app2", at: 50 * time.Second, status: 502, version: -2, final: true},
			[]string{"edits", "edits.at-once", "edits.acknowledged"}},
	} {
		e := checkEdits(2, edits, append(slices.Clone(fine), tc.extra), fault)
		if got := failing(e); !slices.Equal(got, tc.failing) {
			t.Errorf("%s: failing %v, want %v", tc.name, got, tc.failing)
		}
	}
	if got := figure(t, checkEdits(2, edits, fine, fault), "edits sent / acknowledged (200)"); got != "3 / 2 (2 acknowledged within the fault phase)" {
		t.Errorf("edits figure: got %q", got)
	}
}
