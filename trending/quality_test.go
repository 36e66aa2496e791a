package trending

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"shortener"
	"strings"
	"testing"
	"time"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// The quality test replays the field report's measurement (Jaccard
// similarity of a top-k against the truth while Redis is out), extended:
// Zipf s = 1.1 and 1.2 over 1,000 and 10,000 links, top 5 and top 10, two
// instances sharing the clicks round-robin as nginx does, and four
// answers side by side at four moments of an outage.
//
// Time is simulated (the Rankings run on a test clock, one loop step per
// simulated second), so 12 minutes of traffic take seconds; Redis is real.
// The outage is the breaker forced open on both instances: what Redis
// faults do to the breaker is the chaos runs' business; this test measures
// what the answer is worth once it is open.
//
// The truth is the exact count of the clicks sent in the window, which is
// what MySQL's click counts hold for it (the clicks package ships every
// click exactly once; its ledger checks that per code). The "MySQL query"
// answer is what the fallback the field report rejected can do here:
// MySQL keeps clicks per link and hour, so the best query for a window
// ranks the clicks since the start of the hour the window begins in.
const (
	qInstances = 2               // instances sharing them
	qHealthy   = 5 * time.Minute // before the outage: fills the 5m window
	qOutage    = 4 * time.Minute
	qAfter     = 30 * time.Second
	qStep      = 2 * time.Second // simulated time per loop step
)

// Moments of the outage, the table's columns.
const (
	momentBefore = iota
	momentOpened // the first 5 s after the breaker opened
	momentMid    // the middle half of the outage
	momentAfter  // the minute after recovery
	moments
)

// Answers compared, the table's rows.
const (
	answerRedis    = iota // the served answer while Redis is healthy
	answerMySQL           // the hour-bucket query
	answerBare            // local without the snapshot
	answerSnapshot        // local with the snapshot: what is served
	answers
)

var answerNames = [answers]string{"Redis (served while healthy)", "MySQL hour-count query", "local, no snapshot", "local + Redis snapshot (served)"}

// qualityRun is one configuration's Jaccard sums and sample counts.
type qualityRun struct {
	s     float64
	links int
	rate  int                          // clicks per simulated second, all instances
	sum   [2][answers][moments]float64 // [k: 5, 10]
	n     [2][answers][moments]int
}

func (q *qualityRun) add(k, a, m int, j float64) {
	q.sum[k][a][m] += j
	q.n[k][a][m]++
}

func (q *qualityRun) mean(k, a, m int) (float64, bool) {
	if q.n[k][a][m] == 0 {
		return 0, false
	}
	return q.sum[k][a][m] / float64(q.n[k][a][m]), true
}

func TestQuality(t *testing.T) {
	s := stacktest.Shared(t)
	var runs []*qualityRun
	for _, rate := range qualityRates() {
		for _, links := range qualityLinks() {
			for _, exp := range []float64{1.1, 1.2} {
				began := time.Now()
				runs = append(runs, runQuality(t, s, exp, links, rate))
				t.Logf("links %d, s %.1f, %d clicks/s: ran in %s", links, exp, rate, time.Since(began).Round(time.Millisecond))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| clicks/s, links, s, k | answer | before the outage | right after the breaker opens | mid-outage | after recovery |\n|---|---|---|---|---|---|\n")
	for _, q := range runs {
		for ki, k := range []int{5, 10} {
			for a := range answers {
				fmt.Fprintf(&b, "| %d, %d, %.1f, top %d | %s |", q.rate, q.links, q.s, k, answerNames[a])
				for m := range moments {
					if v, ok := q.mean(ki, a, m); ok {
						fmt.Fprintf(&b, " %.3f |", v)
					} else {
						fmt.Fprintf(&b, " — |")
					}
				}
				b.WriteString("\n")
			}
		}
	}
	t.Logf("Jaccard against the truth, 5m window, %d instances:\n%s", qInstances, b.String())
	if path := os.Getenv("TRENDING_QUALITY_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, q := range runs {
		for ki, k := range []int{5, 10} {
			if v, _ := q.mean(ki, answerRedis, momentAfter); v != 1 {
				t.Errorf("links %d, s %.1f: top %d after the merge-back: Jaccard %.3f, want 1", q.links, q.s, k, v)
			}
		}
		// The goal holds where a window has clicks enough to rank its top
		// 10 (the busy rate); at the quiet rate the table shows how far
		// the half of the clicks this instance never sees moves it.
		if v, _ := q.mean(1, answerSnapshot, momentMid); q.links == 1_000 && q.rate >= 400 && v < 0.9 {
			t.Errorf("%d clicks/s, links %d, s %.1f: top 10 mid-outage: Jaccard %.3f, want >= 0.9", q.rate, q.links, q.s, v)
		}
	}
}

// runQuality runs one configuration: healthy, outage, recovery.
func runQuality(t *testing.T, s *stack.Stack, exp float64, nLinks, rate int) *qualityRun {
	ctx := context.Background()
	q := &qualityRun{s: exp, links: nLinks, rate: rate}
	start := time.Date(2026, 12, 3, 10, 2, 0, 0, time.UTC)
	clk := &clock{t: start}
	prefix := stacktest.KeyPrefix(t) // the instances share theirs
	var rs []*Ranking
	for i := range qInstances {
		cfg := stackConfig(t, s, fmt.Sprintf("app%d", i+1))
		cfg.Prefix, cfg.Redis.BreakerDelay, cfg.Redis.Timeout = prefix, time.Hour, time.Second
		rs = append(rs, newRanking(t, cfg, &links{}, clk.now))
	}
	r0 := rs[0]
	rnd := rand.New(rand.NewPCG(uint64(nLinks), uint64(exp*10)))
	zipf := rand.NewZipf(rnd, exp, 1, uint64(nLinks-1))
	perMinute := map[int64]map[string]uint64{} // the truth: every click sent, by minute
	w := windows()[0]

	outageAt, recoverAt := start.Add(qHealthy), start.Add(qHealthy+qOutage)
	end := recoverAt.Add(qAfter)
	next := 0
	for now := start; now.Before(end); {
		// One step of clicks, round-robin over the instances.
		batches := make([][]shortener.Click, qInstances)
		n := rate * int(qStep/time.Second)
		for i := range n {
			code := fmt.Sprintf("l%d", zipf.Uint64())
			at := now.Add(time.Duration(i) * qStep / time.Duration(n))
			batches[next] = append(batches[next], shortener.Click{Code: code, At: at})
			next = (next + 1) % qInstances
			m := at.Unix() / 60
			if perMinute[m] == nil {
				perMinute[m] = map[string]uint64{}
			}
			perMinute[m][code]++
		}
		for i, r := range rs {
			r.Observe(batches[i])
		}
		clk.add(qStep)
		now = clk.now()
		if now.Equal(outageAt) {
			for _, r := range rs {
				r.master.Breaker().Open()
			}
		}
		if now.Equal(recoverAt) {
			for _, r := range rs {
				r.master.Breaker().Close()
			}
		}
		for _, r := range rs {
			r.step(ctx)
		}

		moment := -1
		switch {
		case now.Before(outageAt) && now.After(outageAt.Add(-time.Minute)):
			moment = momentBefore
		case !now.Before(outageAt) && now.Before(outageAt.Add(5*time.Second)):
			moment = momentOpened
		case !now.Before(outageAt.Add(qOutage/4)) && now.Before(outageAt.Add(3*qOutage/4)):
			moment = momentMid
		case now.After(recoverAt):
			// From the second step after recovery: by then every instance
			// has merged its outage back (right at recovery, an instance
			// that merged first still reads Redis without the others').
			moment = momentAfter
		}
		if moment < 0 {
			continue
		}
		// Measure once every instance has sent this step's clicks: a Redis
		// answer otherwise lags the others by their last tick, which is
		// propagation (up to Tick + Refresh), not ranking quality.
		r0.publish(ctx, now)
		// The truth: clicks sent in the window's period.
		first := now.Unix()/60 - w.buckets + 1
		truth := map[string]uint64{}
		for mm := first; mm <= now.Unix()/60; mm++ {
			for code, n := range perMinute[mm] {
				truth[code] += n
			}
		}
		hourly := map[string]uint64{}
		for mm, counts := range perMinute {
			if mm >= first/60*60 {
				for code, n := range counts {
					hourly[code] += n
				}
			}
		}
		for ki, k := range []int{5, 10} {
			want := exactTop(truth, k)
			top, _ := r0.Top("5m", k)
			served := make([]string, len(top.Links))
			for i, tr := range top.Links {
				served[i] = tr.Link.Code
			}
			q.add(ki, answerMySQL, moment, Jaccard(exactTop(hourly, k), want))
			switch top.Source {
			case sourceRedis:
				if moment == momentBefore || moment == momentAfter {
					if j := Jaccard(served, want); j < 1 && os.Getenv("QDEBUG") != "" {
						var ts []string
						for _, tr := range top.Links {
							ts = append(ts, fmt.Sprintf("%s=%d/%d", tr.Link.Code, tr.Clicks, truth[tr.Link.Code]))
						}
						var ws []string
						for _, c := range want {
							ws = append(ws, fmt.Sprintf("%s=%d", c, truth[c]))
						}
						t.Logf("%s k=%d served %v want %v synced %s from %s", now.Format("15:04:05"), k, ts, ws, top.Synced.Format("15:04:05"), top.From.Format("15:04:05"))
					}
					q.add(ki, answerRedis, moment, Jaccard(served, want))
				}
			case sourceLocal:
				if moment == momentOpened || moment == momentMid {
					q.add(ki, answerSnapshot, moment, Jaccard(served, want))
					bare := r0.estimate(0, w, now, false)
					q.add(ki, answerBare, moment, Jaccard(keys(bare[:min(k, len(bare))]), want))
				}
			}
		}
	}
	// After recovery the merge-back must have made Redis's counts exact.
	got := redisCounts(t, r0, "5m", clk.now())
	first := clk.now().Unix()/60 - w.buckets + 1
	diff := 0
	for mm := first; mm <= clk.now().Unix()/60; mm++ {
		for code := range perMinute[mm] {
			var want uint64
			for m2 := first; m2 <= clk.now().Unix()/60; m2++ {
				want += perMinute[m2][code]
			}
			if got[code] != want {
				diff++
			}
		}
	}
	if diff > 0 {
		t.Errorf("links %d, s %.1f: after the merge-back %d links' Redis counts differ from the clicks sent", nLinks, exp, diff)
	}
	t.Logf("links %d, s %.1f: share measured %.3f, queue %d", nLinks, exp, r0.share, r0.q.slots)
	return q
}

// qualityRates are the click rates measured: a busy service, where a
// window holds enough clicks to rank its top 10 firmly, and a quiet one
// (the field report's regime), where counts near the cut are close and
// any missing share of the clicks shows. TRENDING_QUALITY_RATES overrides
// them ("40,400").
func qualityRates() []int {
	v := os.Getenv("TRENDING_QUALITY_RATES")
	if v == "" {
		return []int{40, 400}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// qualityLinks are the link counts measured; TRENDING_QUALITY_LINKS
// overrides them ("1000").
func qualityLinks() []int {
	v := os.Getenv("TRENDING_QUALITY_LINKS")
	switch {
	case v == "" && raceEnabled:
		return []int{1_000}
	case v == "":
		return []int{1_000, 10_000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
