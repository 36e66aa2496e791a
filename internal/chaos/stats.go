package chaos

import (
	"math"
	"slices"
	"time"
)

// Latency summarises a set of latencies. Percentiles use the nearest-rank
// method: P99 is the smallest latency that at least 99% of the set do not
// exceed, always a latency that was measured, never an interpolation
// between two, so a report can point at the request behind every figure.
type Latency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P95 time.Duration `json:"p95_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Summarise returns the percentiles of lat, which it does not modify.
func Summarise(lat []time.Duration) Latency {
	if len(lat) == 0 {
		return Latency{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return Latency{
		N:   len(s),
		P50: Percentile(s, 0.50),
		P95: Percentile(s, 0.95),
		P99: Percentile(s, 0.99),
		Max: s[len(s)-1],
	}
}

// Percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted,
// which must be in ascending order: the element at rank ceil(p·n). It
// returns 0 for an empty slice, and the minimum for p <= 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon keeps p·n from landing just above an integer through
	// floating-point error (0.95·100 is 95.00000000000001), which would skip
	// a rank.
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}

// Counts are what happened to a set of requests. Every request sent (or
// due to be sent) is in exactly one of Succeeded, Failed or Unknown, so
// Sent = Succeeded + Failed + Unknown always: nothing drops out of the
// arithmetic.
type Counts struct {
	Sent      int `json:"sent"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Unknown are requests whose outcome the client cannot know: timed out,
	// or never sent because the in-flight bound was reached (Dropped).
	Unknown int `json:"unknown"`
	Dropped int `json:"dropped"`
}

// Window is a span of a run, as offsets from the start of the load.
type Window struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// contains reports whether t falls in [From, To).
func (w Window) contains(t time.Duration) bool { return t >= w.From && t < w.To }

// PhaseStats are the figures of one phase (or of the whole run) for one
// kind of request, or for all of them.
type PhaseStats struct {
	Counts
	Latency Latency `json:"latency"`
}

// tally gathers the figures of a set of results. Dropped requests were
// never sent, so they count as unknown but have no latency; timed-out
// requests count with the time they waited.
type tally struct {
	Counts
	lat []time.Duration
}

func (t *tally) add(r Result) {
	t.Sent++
	switch r.Outcome {
	case OK:
		t.Succeeded++
	case Failed:
		t.Failed++
	default:
		t.Unknown++
		if r.Dropped {
			t.Dropped++
			return
		}
	}
	t.lat = append(t.lat, r.Latency)
}

func (t *tally) stats() PhaseStats { return PhaseStats{t.Counts, Summarise(t.lat)} }

// phaseOf computes the figures of the results whose intended send time
// falls in w, overall and per kind, in one pass.
func phaseOf(name string, results []Result, w Window) Phase {
	var all tally
	var kinds [3]tally // by Kind
	for _, r := range results {
		if w.contains(r.Intended) {
			all.add(r)
			kinds[r.Kind].add(r)
		}
	}
	return Phase{Name: name, Window: w, All: all.stats(),
		Redirects: kinds[Redirect].stats(), Creates: kinds[Create].stats(), Misses: kinds[Miss].stats()}
}

// Second is one second of a run, by intended send time: what was due,
// what came of it, and its latencies. The chart is drawn from these.
type Second struct {
	T int `json:"t"`
	Counts
	Latency
}

// perSecond buckets results by the second of their intended send time,
// over the whole seconds in [0, end); a last, partial second would read as
// a drop in throughput.
func perSecond(results []Result, end time.Duration) []Second {
	// One pass over the results, not phaseOf per second: a run's
	// seconds times its results grows too fast for long runs (a 5-minute
	// run at 1,000/s took 0.54 s that way).
	tallies := make([]tally, int(end/time.Second))
	for _, r := range results {
		if i := int(r.Intended / time.Second); r.Intended >= 0 && i < len(tallies) {
			tallies[i].add(r)
		}
	}
	secs := make([]Second, len(tallies))
	for i, t := range tallies {
		secs[i] = Second{T: i, Counts: t.Counts, Latency: Summarise(t.lat)}
	}
	return secs
}
