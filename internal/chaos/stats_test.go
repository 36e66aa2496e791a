package chaos

import (
	"testing"
	"time"
)

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// oneTo returns 1 ms, 2 ms, … n ms, shuffled so Summarise must sort.
func oneTo(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = msd((i*7)%n + 1) // 7 is prime to the sizes used: a permutation
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = msd(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"one value is every percentile", []time.Duration{msd(7)}, 0.5, msd(7)},
		{"one value, p99", []time.Duration{msd(7)}, 0.99, msd(7)},
		{"p50 of 1..100", hundred, 0.50, msd(50)},
		{"p95 of 1..100 (0.95·100 is not quite 95 in floating point)", hundred, 0.95, msd(95)},
		{"p99 of 1..100", hundred, 0.99, msd(99)},
		{"p100 is the max", hundred, 1, msd(100)},
		{"p0 is the min", hundred, 0, msd(1)},
		// Ten values: rank ceil(9.9) = 10, so p99 is the slowest, not an
		// interpolation between the two slowest.
		{"p99 of ten is the max", hundred[:10], 0.99, msd(10)},
		{"p50 of ten is the fifth", hundred[:10], 0.50, msd(5)},
		{"p50 of four is the second", []time.Duration{1, 2, 3, 4}, 0.5, 2},
		{"p75 of four is the third", []time.Duration{1, 2, 3, 4}, 0.75, 3},
		{"p76 of four is the fourth", []time.Duration{1, 2, 3, 4}, 0.76, 4},
	}
	for _, tt := range tests {
		if got := Percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: Percentile(p=%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestSummariseSortsACopy(t *testing.T) {
	in := oneTo(100)
	first := in[0]
	got := Summarise(in)
	want := Latency{N: 100, P50: msd(50), P95: msd(95), P99: msd(99), Max: msd(100)}
	if got != want {
		t.Errorf("Summarise(1..100 shuffled) = %+v, want %+v", got, want)
	}
	if in[0] != first {
		t.Errorf("Summarise reordered its input: in[0] = %v, want %v", in[0], first)
	}
	if got := Summarise(nil); got != (Latency{}) {
		t.Errorf("Summarise(nil) = %+v, want zero", got)
	}
}

// TestPhaseStatsCountsEveryRequest: a phase's figures include failures and
// unknowns, dropped requests count as unknown without a latency, and
// requests outside the window or of another kind are left out.
func TestPhaseStatsCountsEveryRequest(t *testing.T) {
	results := []Result{
		{Kind: Redirect, Intended: msd(100), Latency: msd(1), Outcome: OK},
		{Kind: Redirect, Intended: msd(200), Latency: msd(2), Outcome: OK},
		{Kind: Redirect, Intended: msd(300), Latency: msd(40), Outcome: Failed},
		{Kind: Redirect, Intended: msd(400), Latency: 2 * time.Second, Outcome: Unknown},
		{Kind: Redirect, Intended: msd(500), Outcome: Unknown, Dropped: true},
		{Kind: Create, Intended: msd(600), Latency: msd(5), Outcome: OK},
		{Kind: Redirect, Intended: msd(1000), Latency: msd(9), Outcome: Failed}, // outside
	}
	w := Window{0, time.Second}
	ph := phaseOf("", results, w)
	got := ph.Redirects
	want := PhaseStats{
		Counts:  Counts{Sent: 5, Succeeded: 2, Failed: 1, Unknown: 2, Dropped: 1},
		Latency: Latency{N: 4, P50: msd(2), P95: 2 * time.Second, P99: 2 * time.Second, Max: 2 * time.Second},
	}
	if got != want {
		t.Errorf("redirects in [0, 1s):\ngot  %+v\nwant %+v", got, want)
	}
	if c := got.Counts; c.Sent != c.Succeeded+c.Failed+c.Unknown {
		t.Errorf("sent %d != succeeded %d + failed %d + unknown %d", c.Sent, c.Succeeded, c.Failed, c.Unknown)
	}
	all := ph.All
	if all.Sent != 6 || all.Succeeded != 3 {
		t.Errorf("all kinds: sent %d succeeded %d, want 6 and 3", all.Sent, all.Succeeded)
	}
}

func TestPerSecondBucketsByIntendedTime(t *testing.T) {
	results := []Result{
		// Due in second 0, answered in second 3: it belongs to second 0,
		// where the stall began.
		{Intended: msd(900), Latency: msd(2500), Outcome: OK},
		{Intended: msd(100), Latency: msd(1), Outcome: OK},
		{Intended: msd(1500), Latency: msd(3), Outcome: Failed},
		{Intended: msd(2500), Outcome: Unknown, Dropped: true},
		{Intended: msd(3200), Latency: msd(1), Outcome: OK}, // the partial last second is left out
	}
	got := perSecond(results, msd(3500))
	if len(got) != 3 {
		t.Fatalf("got %d seconds, want 3 (whole seconds only): %+v", len(got), got)
	}
	want := []Second{
		{T: 0, Counts: Counts{Sent: 2, Succeeded: 2}, Latency: Latency{N: 2, P50: msd(1), P95: msd(2500), P99: msd(2500), Max: msd(2500)}},
		{T: 1, Counts: Counts{Sent: 1, Failed: 1}, Latency: Latency{N: 1, P50: msd(3), P95: msd(3), P99: msd(3), Max: msd(3)}},
		{T: 2, Counts: Counts{Sent: 1, Unknown: 1, Dropped: 1}},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("second %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
