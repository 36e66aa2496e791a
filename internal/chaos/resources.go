package chaos

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The measures of the resource and gray faults: a journal volume that
// fills, a Redis master that refuses writes, Redis nodes that answer
// late, a state file found corrupt. Each reads the run (its results,
// scrapes and marks) the way the measures of checks.go do.

// whole is a window over every scrape of a run, warm-up to draining.
var whole = Window{From: 0, To: math.MaxInt64}

// ClicksExplainedByDrops is the clicks check of a row whose promise is
// "served = stored + counted drops" rather than "0 lost": a journal that
// cannot write drops the click, counts it in
// shortener_clicks_dropped_total and still answers the redirect. The
// scenario waives the clicks account's own check ("clicks"); this one
// requires every click lost, per code, to be covered by the drops the
// apps counted (all reasons, every app, over the whole run: a restarted
// app's counter begins again at 0, which growth reads as growth), none
// counted twice, and, so that the row cannot hold without its fault,
// drops for reason. Drops an app counted in its last moment before an
// exit, after its last scrape, are not seen: the check errs towards
// failing.
func ClicksExplainedByDrops(reason string) Measure {
	return func(r *Run) []Check {
		var all, by float64
		for _, a := range r.Apps {
			all += growth(r.Samples, a, keyDropped, whole)
			by += growth(r.Samples, a, keyDroppedBy+reason, whole)
		}
		happened := Check{ID: "clicks.dropped", What: fmt.Sprintf("clicks the journals dropped and counted, all reasons and %q (the fault happened)", reason),
			Want: "> 0 and > 0", Got: fmt.Sprintf("%.0f, of them %.0f %s", all, by, reason), OK: all > 0 && by > 0, Required: true}
		t := r.Clicks
		if t == nil {
			return []Check{happened, {ID: "clicks.explained", What: "clicks lost, explained by counted drops", Want: "lost ≤ dropped, 0 double",
				Got: "the clicks account did not settle", Required: true}}
		}
		got := fmt.Sprintf("%d lost, %.0f dropped, %d double (%d served, %d stored)", t.Lost, all, t.Double, t.Served, t.Stored)
		if t.Drained != nil {
			got += "; " + t.Drained.Error()
		}
		return []Check{happened, {ID: "clicks.explained",
			What: "per code, clicks lost (served − stored) covered by the clicks the journals counted as dropped; none counted twice",
			Want: "lost ≤ dropped, 0 double", Got: got, OK: float64(t.Lost) <= all && t.Double == 0 && t.Drained == nil, Required: true}}
	}
}

// ServesThroughout checks each app that has a window of its own, from
// the mark from+app to the mark to+app (or the end of the fault phase):
// it answered every scrape of /metrics in it and answered requests
// through the target in it. A fault of an app's own resources (its disk
// full) must not take the app down.
func ServesThroughout(from, to string) Measure {
	return func(r *Run) []Check {
		var out []Check
		for _, app := range r.Apps {
			f, ok := r.Marks[from+app]
			if !ok {
				continue
			}
			t, ok := r.Marks[to+app]
			if !ok {
				t = r.Fault().To
			}
			var scrapes, up, served int
			for _, s := range r.Samples {
				if s.App == app && s.At >= f && s.At <= t {
					scrapes++
					if s.Up {
						up++
					}
				}
			}
			for _, res := range r.Results {
				if done := res.Intended + res.Latency; res.ServedBy == app && res.Status > 0 && res.Status < 500 && done >= f && done <= t {
					served++
				}
			}
			out = append(out, Check{ID: "serves-throughout", What: fmt.Sprintf("%s up and serving from %.1f s to %.1f s (the fault on it)", app, f.Seconds(), t.Seconds()),
				Want: "every scrape answered; requests answered through the target",
				Got:  fmt.Sprintf("%d of %d scrapes answered; %d requests answered", up, scrapes, served),
				OK:   scrapes > 0 && up == scrapes && served > 0, Required: true})
		}
		return out
	}
}

// RedirectP99NearSteady checks docs/design.md's promise for slow Redis nodes:
// the p99 of the redirects due between the marks from and to stays within
// one Redis deadline of the steady phase's p99. A lookup that Redis does
// not answer in time falls back to MySQL after one deadline, and a
// breaker that opens skips Redis altogether, so one deadline is all a
// slow Redis may add.
func RedirectP99NearSteady(from, to string) Measure {
	return func(r *Run) []Check {
		f, okF := r.Marks[from]
		t, okT := r.Marks[to]
		var lat []time.Duration
		for _, res := range r.Results {
			if res.Kind == Redirect && !res.Dropped && res.Intended >= f && res.Intended < t {
				lat = append(lat, res.Latency)
			}
		}
		got := Summarise(lat)
		steady := r.Report.Phases[1].Redirects.Latency.P99
		limit := steady + r.Config.RedisTimeout
		return []Check{{ID: "p99-near-steady", What: fmt.Sprintf("p99 of the redirects due from %s to %s", fmtAt(f, okF), fmtAt(t, okT)),
			Want: fmt.Sprintf("≤ steady p99 + one Redis deadline = %s + %s = %s", ms(steady), ms(r.Config.RedisTimeout), ms(limit)),
			Got:  fmt.Sprintf("%s (%d redirects, max %s)", ms(got.P99), got.N, ms(got.Max)),
			OK:   okF && okT && got.N > 0 && got.P99 <= limit, Required: true, Timing: true}}
	}
}

// RedisRefusedWrites checks that a fault meant to make Redis refuse
// writes did, between the marks from and to: the apps' fills of Redis
// that failed grew. Without it a row could hold with no fault at all.
func RedisRefusedWrites(from, to string) Measure {
	return func(r *Run) []Check {
		f, okF := r.Marks[from]
		t, okT := r.Marks[to]
		var failed, ok float64
		var per []string
		for _, a := range r.Apps {
			n := growth(r.Samples, a, keyFillsErr, Window{f, t})
			failed += n
			ok += growth(r.Samples, a, keyFillsOK, Window{f, t})
			per = append(per, fmt.Sprintf("%s %.0f", a, n))
		}
		return []Check{{ID: "redis-refused", What: "fills of Redis that failed while the master refused writes (the fault happened)",
			Want: "> 0", Got: fmt.Sprintf("%.0f (%s); %.0f fills written", failed, strings.Join(per, ", "), ok),
			OK: okF && okT && failed > 0, Required: true}}
	}
}

// NoFailover reports whether the sentinels promoted anyone: a gray
// failure (nodes slow, not dead) should not make them, and a scenario
// that sees a promotion notes it under markPromoted.
func NoFailover(r *Run) []Check {
	p, ok := r.Marks[markPromoted]
	got := "no promotion"
	if ok {
		got = "a promotion at " + fmtAt(p, ok)
	}
	return []Check{{ID: "no-failover", What: "the sentinels failed nothing over", Want: "no promotion", Got: got, OK: !ok}}
}

// StateFileSetAside checks that the apps found a corrupt state file
// (file, as shortener_state_files_set_aside_total labels it), set it
// aside and counted it, instead of failing to start or using it.
func StateFileSetAside(file string) Measure {
	return func(r *Run) []Check {
		var n float64
		for _, a := range r.Apps {
			n += growth(r.Samples, a, keySetAside+file, whole)
		}
		return []Check{{ID: "set-aside", What: fmt.Sprintf("corrupt %s files set aside and counted at start", file),
			Want: "> 0", Got: fmt.Sprintf("%.0f", n), OK: n > 0, Required: true}}
	}
}
