package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 9, 5}, 5},
	} {
		in := append([]float64(nil), tt.xs...)
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.xs[i] {
				t.Errorf("median reordered its input: %v, was %v", tt.xs, in)
			}
		}
	}
}

// TestSummarise checks the medians of a row and that a ratio is the median
// of the per-round ratios, not the ratio of the medians.
func TestSummarise(t *testing.T) {
	rep := &report{
		Rows: []rowResult{
			{Name: "a", Runs: []measure{{RPS: 900, P99ms: 3, Requests: 9000, BadStatus: 1, CPUus: 50}, {RPS: 500, P99ms: 1, Requests: 5000, CPUus: 40}, {RPS: 800, P99ms: 2, Requests: 8000, CPUus: 60}}},
			{Name: "b", Runs: []measure{{RPS: 1000, CPUus: 40}, {RPS: 1000, CPUus: 40}, {RPS: 400, CPUus: 30}}},
		},
		Ratios: []ratioResult{{Name: "a/b", Num: "a", Den: "b", Min: 0.85}, {Name: "missing", Num: "a", Den: "zzz"}},
	}
	rep.summarise()
	a := rep.Rows[0].Median
	if a.RPS != 800 || a.P99ms != 2 || a.Requests != 22000 || a.BadStatus != 1 {
		t.Errorf("row a median: got %+v, want RPS 800, p99 2, 22000 requests, 1 bad", a)
	}
	q := rep.Ratios[0]
	if want := []float64{0.9, 0.5, 2}; len(q.PerRound) != 3 || q.PerRound[0] != want[0] || q.PerRound[1] != want[1] || q.PerRound[2] != want[2] {
		t.Errorf("per-round ratios: got %v, want %v", q.PerRound, want)
	}
	if q.Value != 0.9 {
		t.Errorf("ratio: got %v, want 0.9 (median of 0.9, 0.5, 2)", q.Value)
	}
	if q.CPU != 0.8 {
		t.Errorf("CPU ratio: got %v, want 0.8 (median of 40/50, 40/40, 30/60)", q.CPU)
	}
	if rep.Ratios[1].Value != 0 || rep.Ratios[1].PerRound != nil {
		t.Errorf("ratio against a row that did not run: got %+v, want zero", rep.Ratios[1])
	}
}

func TestVerdict(t *testing.T) {
	for _, tt := range []struct {
		v, min float64
		want   string
	}{{0.9, 0.85, "met"}, {0.85, 0.85, "met"}, {0.84, 0.85, "**missed**"}, {5, 0, ""}} {
		if got := verdict(tt.v, tt.min); got != tt.want {
			t.Errorf("verdict(%v, %v) = %q, want %q", tt.v, tt.min, got, tt.want)
		}
	}
}

func TestReportWriters(t *testing.T) {
	rep := &report{
		Started: time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC), Took: "9m",
		Machine:  machine{CPU: "Test CPU", Cores: 2, Versions: map[string]string{"nginx": "nginx version: nginx/1.22.1"}},
		Settings: map[string]string{"rounds": "2"},
		Rows: []rowResult{
			{Name: "redirect/nginx/app", What: "w", Runs: []measure{{RPS: 850}, {RPS: 870}}},
			{Name: "redirect/nginx/minimal", What: "w", Runs: []measure{{RPS: 1000}, {RPS: 1000}}},
			{Name: "create/nginx", What: "c", Floor: 3000, Runs: []measure{{RPS: 100, BadStatus: 5}, {RPS: 120}}},
		},
		Ratios: []ratioResult{{Name: "through nginx", Num: "redirect/nginx/app", Den: "redirect/nginx/minimal", Min: 0.85}},
		Memory: []memSample{{When: "start", App: "app1", RSSBytes: 30 << 20}},
		Notes:  []string{"shared machine"},
	}
	rep.summarise()
	var md bytes.Buffer
	if err := rep.writeMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# make bench, 2026-12-03 17:00 UTC", "2 round(s)",
		"| through nginx (`redirect/nginx/app` / `redirect/nginx/minimal`) | 0.86 | 0.85 | 0.85, 0.87 | met | 0.00 |",
		"| `create/nginx` requests/s | 110 | 3000 | 100, 120 | **missed** | |",
		"| start | app1 | 30.0 |", "Test CPU, 2 cores", "nginx/1.22.1", "- rounds: 2", "- shared machine",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := rep.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("json does not read back: %v", err)
	}
	if len(back.Rows) != 3 || back.Rows[2].Median.BadStatus != 5 || back.Ratios[0].Value != rep.Ratios[0].Value {
		t.Errorf("json read back: got %+v", back)
	}
}

func TestParseWrk(t *testing.T) {
	out := `Running 10s test @ http://127.0.0.1:8080
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.71ms    1.02ms  30.04ms   93.60%
  180000 requests in 10.00s, 40.00MB read
  Non-2xx or 3xx responses: 2000
Requests/sec:  18000.00
BENCH {"requests":180000,"duration_us":10000000,"connect":0,"read":3,"write":0,"status":2000,"timeout":1,"p50_us":1500,"p99_us":5250,"max_us":30040}
`
	m, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	want := measure{Requests: 180000, Seconds: 10, RPS: 17800, Errors: 4, BadStatus: 2000, P50ms: 1.5, P99ms: 5.25, MaxMs: 30.04}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
	for _, bad := range []string{"", "Requests/sec: 5\n", "BENCH {not json}\n", `BENCH {"requests":5,"duration_us":0}` + "\n"} {
		if _, err := parseWrk(bad); err == nil {
			t.Errorf("parseWrk(%q) succeeded, want an error", bad)
		}
	}
}

// TestPermute checks that the Zipf ranks map one to one onto the links.
func TestPermute(t *testing.T) {
	for _, n := range []int{1, 1000, 1_000_000} {
		seen := make([]bool, n)
		for r := range n {
			i := permute(r, n)
			if i < 0 || i >= n || seen[i] {
				t.Fatalf("permute(%d, %d) = %d: out of range or seen twice", r, n, i)
			}
			seen[i] = true
		}
	}
}

// TestPickers checks the shape of the draws: uniform spreads evenly, Zipf
// concentrates on a few links, and both stay in range and repeat with the
// seed.
func TestPickers(t *testing.T) {
	const n, draws = 1000, 200_000
	for _, tt := range []struct {
		name       string
		pick       func(*rand.Rand) picker
		top10Share [2]float64 // the 10 most drawn links' share of all draws
	}{
		{"uniform", func(r *rand.Rand) picker { return uniform(r, n) }, [2]float64{0.005, 0.02}},
		{"zipf", func(r *rand.Rand) picker { return zipf(r, 1.1, n) }, [2]float64{0.3, 0.7}},
	} {
		counts := make([]int, n)
		p := tt.pick(rand.New(rand.NewPCG(1, 2)))
		for range draws {
			i := p()
			if i < 0 || i >= n {
				t.Fatalf("%s: drew %d, want [0, %d)", tt.name, i, n)
			}
			counts[i]++
		}
		top := append([]int(nil), counts...)
		for i := range 10 { // partial selection sort: the 10 largest first
			for j := i + 1; j < n; j++ {
				if top[j] > top[i] {
					top[i], top[j] = top[j], top[i]
				}
			}
		}
		sum := 0
		for _, c := range top[:10] {
			sum += c
		}
		share := float64(sum) / draws
		if share < tt.top10Share[0] || share > tt.top10Share[1] {
			t.Errorf("%s: the 10 most drawn links got %.3f of the draws, want %v", tt.name, share, tt.top10Share)
		}
		var a, b bytes.Buffer
		writeCodes(&a, 50, tt.pick(rand.New(rand.NewPCG(7, 7))))
		writeCodes(&b, 50, tt.pick(rand.New(rand.NewPCG(7, 7))))
		if a.String() != b.String() || strings.Count(a.String(), "\n") != 50 || !strings.HasPrefix(a.String(), codePrefix) {
			t.Errorf("%s: lists from one seed differ or are malformed:\n%s", tt.name, a.String()[:min(80, a.Len())])
		}
	}
}

func TestSelectRows(t *testing.T) {
	all := rows(1000, 1_000_000)
	if got := selectRows(all, ""); len(got) != len(all) {
		t.Errorf("no filter: got %d rows, want %d", len(got), len(all))
	}
	got := selectRows(all, "redirect/direct/, create/")
	var names []string
	for _, r := range got {
		names = append(names, r.name)
	}
	if strings.Join(names, " ") != "redirect/direct/app redirect/direct/minimal create/nginx create/stack" {
		t.Errorf("filtered rows: got %v", names)
	}
	seen := map[string]bool{}
	for _, r := range all {
		if seen[r.name] {
			t.Errorf("row %q twice", r.name)
		}
		seen[r.name] = true
	}
	for _, q := range ratios() {
		if !seen[q.num] || !seen[q.den] || q.min <= 0 || math.IsNaN(q.min) {
			t.Errorf("ratio %q reads rows that do not exist or has no minimum", q.name)
		}
	}
}

func TestCapacityEnv(t *testing.T) {
	app1 := []string{"PATH=/bin", "SHORTENER_ADDR=127.0.0.1:8081", "SHORTENER_NODE_ID=1", "SHORTENER_INSTANCE=app1",
		"SHORTENER_MYSQL_DSN=d", "SHORTENER_CLICKS_DIR=/s/app1/clicks", "SHORTENER_CREATE_RATE=100", "SHORTENER_API_KEY=k"}
	got := strings.Join(capacityEnv(app1, "off1", "127.0.0.1:9", "/w/off1", "SHORTENER_CLICKS=false"), " ")
	want := "PATH=/bin SHORTENER_MYSQL_DSN=d SHORTENER_API_KEY=k SHORTENER_ADDR=127.0.0.1:9 SHORTENER_NODE_ID=auto SHORTENER_INSTANCE=off1 " +
		"SHORTENER_CLICKS_DIR=/w/off1/clicks SHORTENER_CREATE_RATE=0 SHORTENER_KEY_CREATE_RATE=0 SHORTENER_CLICKS=false"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, &bytes.Buffer{})
	if err != nil || o.rounds != 3 || o.links != 1_000_000 || o.out != "docs/bench" {
		t.Errorf("defaults: got %+v, %v", o, err)
	}
	for _, args := range [][]string{{"-zipf", "1"}, {"-hot", "10", "-links", "5"}, {"-rounds", "0"}, {"extra"}} {
		if _, err := parseOptions(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseOptions(%q) succeeded, want an error", args)
		}
	}
}

// TestRoundOrder: every row runs once a round, a ratio's two rows next to
// each other, the first of them alternating from round to round.
func TestRoundOrder(t *testing.T) {
	all := rows(1000, 1000000)
	names := func(n int) []string {
		var out []string
		for _, i := range roundOrder(all, n) {
			out = append(out, all[i].name)
		}
		return out
	}
	for _, q := range ratios() {
		for n, first := range []string{q.num, q.den, q.num} {
			order := names(n)
			if len(order) != len(all) {
				t.Fatalf("round %d runs %d rows, want %d", n, len(order), len(all))
			}
			i := slices.Index(order, q.num)
			j := slices.Index(order, q.den)
			if i < 0 || j < 0 || i-j != 1 && j-i != 1 {
				t.Errorf("round %d: %s at %d and %s at %d, want them adjacent", n, q.num, i, q.den, j)
			}
			if got := order[min(i, j)]; got != first {
				t.Errorf("round %d: %s runs first, want %s", n, got, first)
			}
		}
	}
	if sel := selectRows(all, "create/"); !slices.Equal(roundOrder(sel, 1), []int{0, 1}) {
		t.Errorf("rows of no ratio are reordered: %v", roundOrder(sel, 1))
	}
}

// TestAgainstPrevious: a run reads the bench.json the run before wrote,
// and its report says per target how far it moved and whether both runs
// met it.
func TestAgainstPrevious(t *testing.T) {
	dir := t.TempDir()
	run := func(appRPS, creates float64) *report {
		r := &report{Started: time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC), Settings: map[string]string{"commit": "abc"},
			Rows: []rowResult{
				{Name: "redirect/nginx/app", Runs: []measure{{RPS: appRPS}}},
				{Name: "redirect/nginx/minimal", Runs: []measure{{RPS: 1000}}},
				{Name: "create/nginx", Floor: 3000, Runs: []measure{{RPS: creates}}},
			},
			Ratios: []ratioResult{{Name: "through nginx", Num: "redirect/nginx/app", Den: "redirect/nginx/minimal", Min: 0.9}},
		}
		r.summarise()
		return r
	}
	if readPrevious(dir) != nil {
		t.Fatal("a previous run read from an empty directory")
	}
	if err := writeReport(dir, run(950, 2900)); err != nil {
		t.Fatal(err)
	}
	second := run(880, 3100)
	second.Previous = readPrevious(dir)
	if second.Previous == nil || second.Previous.Targets["through nginx"] != 0.95 {
		t.Fatalf("previous run: %+v", second.Previous)
	}
	var md bytes.Buffer
	if err := second.writeMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| through nginx | 0.95 | 0.88 | -7% | 0.90 | no |",
		"| `create/nginx` requests/s | 2900 | 3100 | +7% | 3000 | no |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// TestBuildGolink: a binary path is used as it is, a missing one or an
// empty spec is an error that names why (the row is then left out).
func TestBuildGolink(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "golink")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := buildGolink(t.Context(), bin, dir); err != nil || got != bin {
		t.Errorf("a built binary: got %q, %v; want it as it is", got, err)
	}
	for _, spec := range []string{"", filepath.Join(dir, "missing")} {
		if _, err := buildGolink(t.Context(), spec, dir); err == nil {
			t.Errorf("buildGolink(%q) succeeded, want an error", spec)
		}
	}
	// The report names a binary without its path: it is committed.
	if got := golinkSetting(bin); strings.Contains(got, dir) {
		t.Errorf("golinkSetting(%q) = %q, names the machine's path", bin, got)
	}
	if got := golinkSetting(golinkModule); got != golinkModule {
		t.Errorf("golinkSetting(%q) = %q, want the module as it is", golinkModule, got)
	}
}
