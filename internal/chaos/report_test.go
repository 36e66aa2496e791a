package chaos

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// syntheticRun is a kill-master run made by hand: 30 s at 10 requests/s,
// the fault from 10 s to 20 s, one redirect failed during it, the
// promotion at 12 s and fills back on Redis at 12.4 s.
func syntheticRun(t *testing.T) reportInput {
	t.Helper()
	sc, err := ScenarioNamed("kill-master")
	if err != nil {
		t.Fatal(err)
	}
	var results []Result
	for i := range 300 {
		r := Result{Seq: i, Kind: Redirect, Intended: time.Duration(i) * 100 * time.Millisecond, Latency: time.Millisecond, Outcome: OK, Status: 302, ServedBy: "app1"}
		if i%10 == 0 {
			r.Kind, r.Key, r.URL, r.Code, r.Status, r.Attempts = Create, "k"+string(rune('a'+i/10)), "https://x/"+string(rune('a'+i/10)), "c"+string(rune('a'+i/10)), 201, 1
		}
		if i == 151 {
			r.Outcome, r.Status, r.Err = Failed, 502, "GET: 502, want 302"
		}
		results = append(results, r)
	}
	var samples []Sample
	for i := range 150 {
		at := time.Duration(i) * 200 * time.Millisecond
		fills := float64(i)
		if at > 10*time.Second && at < 12400*time.Millisecond {
			fills = 50 // stalled while the master is gone
		} else if at >= 12400*time.Millisecond {
			fills = float64(i)
		}
		state := 0.0
		if at > 10*time.Second && at < 12*time.Second {
			state = 1
		}
		samples = append(samples, Sample{At: at, App: "app1", Up: true, Values: map[string]float64{
			keyFillsOK: fills, keyHits: float64(10 * i), keyState + "write": state,
		}})
	}
	stored, keys, resolved := map[string]string{}, map[string]string{}, map[string]string{}
	for _, r := range results {
		if r.Kind == Create && r.Key != "kq" {
			stored[r.Code] = r.URL
			keys[r.Key], resolved[r.Code] = r.Code, ""
		}
	}
	run := &Run{
		Config: DefaultConfig(), Scenario: sc, Results: results, Samples: samples, Apps: []string{"app1"},
		Phases: []Window{{0, 5 * time.Second}, {5 * time.Second, 10 * time.Second}, {10 * time.Second, 20 * time.Second}, {20 * time.Second, 30 * time.Second}},
		Marks:  map[string]time.Duration{markMasterGone: 10 * time.Second, markPromoted: 12 * time.Second},
	}
	return reportInput{
		run: run, began: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		events: []Event{{10 * time.Second, "SIGKILL redis-1 (master)"}, {12 * time.Second, "sentinels promoted redis-2"}},
		ledger: []Entry{checkCreates(results, stored, keys, resolved)},
	}
}

func TestReportOfAFailedRun(t *testing.T) {
	rep := buildReport(syntheticRun(t))
	if rep.Holds {
		t.Error("a run with a failed redirect and a lost create holds, want not")
	}
	if rep.Failover == nil || *rep.Failover != 2*time.Second {
		t.Errorf("failover = %v, want 2s (kill at 10 s, promotion at 12 s)", rep.Failover)
	}
	if rep.Recovery == nil || *rep.Recovery != 400*time.Millisecond {
		t.Errorf("recovery = %v, want 400ms (first scrape after 12 s with fills moving: 12.4 s)", rep.Recovery)
	}
	fault := rep.Phases[2].Redirects
	if fault.Failed != 1 || fault.Sent != 90 {
		t.Errorf("fault phase redirects: %+v, want 90 sent, 1 failed", fault.Counts)
	}
	failed := map[string]bool{}
	for _, c := range rep.Checks {
		if c.Required && !c.OK {
			failed[c.What] = true
		}
	}
	for _, want := range []string{"redirects failed or unanswered", "acknowledged creates lost (no row in MySQL)"} {
		if !failed[want] {
			t.Errorf("check %q did not fail; failed: %v", want, failed)
		}
	}
	if len(rep.Transitions) != 0 {
		t.Errorf("transitions %+v from samples without transition counters, want none", rep.Transitions)
	}

	md := rep.markdown("kill-master.svg")
	for _, want := range []string{"does not hold", "| lost (acknowledged, no row) | 1 |", "lost: `cq` kq https://x/q", "![", "kill-master.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	checkXML(t, []byte(rep.chart()))
}

func TestNormaliseGroupsEqualCauses(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`GET: Get "http://127.0.0.1:8080/abc": context deadline exceeded`, `GET: Get "…": context deadline exceeded`},
		{"GET: read tcp 127.0.0.1:54321->127.0.0.1:8080: read: connection reset by peer",
			"GET: read tcp 127.0.0.1:8080: read: connection reset by peer"},
		{`GET: 302 with Location "https://x/1", want "https://x/2"`, "GET: 302 with a wrong Location"},
		{"POST: 503 from app1", "POST: 503 from app1"},
	} {
		if got := normalise(tt.in); got != tt.want {
			t.Errorf("normalise(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// checkXML fails unless b is well-formed XML: a browser shows nothing of
// a malformed SVG.
func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
}

// TestSummaryKeepsPeoplesText: the table is rewritten between its markers;
// the analysis around it stays.
func TestSummaryKeepsPeoplesText(t *testing.T) {
	dir := t.TempDir()
	rep := buildReport(syntheticRun(t))
	if err := WriteFiles(dir, rep); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	before := "# Chaos\n\nIntro.\n\n" + summaryBegin + "\nold table\n" + summaryEnd + "\n\n## Analysis\n\nKept.\n"
	if err := os.WriteFile(readme, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"Intro.", "## Analysis\n\nKept.", "[kill-master](kill-master.md)", "**does not hold**"} {
		if !strings.Contains(got, want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old table") {
		t.Errorf("README still has the old table:\n%s", got)
	}
}
