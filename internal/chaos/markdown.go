package chaos

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// maxListed bounds the problems and errors a Markdown report lists; the
// JSON has all of them.
const maxListed = 15

// markdown renders r as a Markdown page that embeds chart (the SVG's file
// name, relative to the page).
func (r *Report) markdown(chart string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# Chaos: %s (%s)\n\n", r.Scenario, r.Fault)
	if r.Holds {
		p("**Verdict: the row holds.** Every required check below passed.\n\n")
	} else {
		p("**Verdict: the row does not hold.** %s\n\n", strings.Join(r.Failures(), " "))
	}
	p("- **docs/design.md promises:** %s.\n", r.Expect)
	p("- **What the run did:** %s.\n", r.Does)
	s := r.Settings
	p("- **Load:** %.0f requests/s, open model (constant arrival rate, latency timed from each request's intended send time): "+
		"%.0f%% creates (each with its own Idempotency-Key, up to %d POSTs on connection errors, timeouts and 502/503/504), "+
		"%.0f%% lookups of unknown codes, the rest redirects to %d links chosen by Zipf's law (s = %.2f), never followed. "+
		"Client timeout %s; at most %d requests in flight (beyond that a request counts as unknown).\n",
		s.Rate, 100*s.CreateShare, s.CreateAttempts, 100*s.MissShare, s.Links, s.Zipf, ms(s.Timeout), s.MaxInFlight)
	p("- **Run:** `%s`, started %s.\n\n", s.RunID, r.Started.Format(time.RFC3339))
	p("![throughput, latency, errors and breaker states of %s](%s)\n\n", r.Scenario, chart)

	// The checks come first: they are the answer to "does the row hold",
	// and each names its want and got so that a FAIL needs no digging.
	p("## Checks\n\n| check | want | got | result |\n|---|---|---|---|\n")
	for _, c := range r.Checks {
		res := "pass"
		switch {
		case !c.OK && c.Required:
			res = "**FAIL**"
		case !c.OK:
			res = "noted"
		case !c.Required:
			res = "info"
		}
		if c.Timing && !r.Settings.EnforceTiming {
			res += " (timing, reported)"
		}
		p("| %s | %s | %s | %s |\n", c.What, c.Want, c.Got, res)
	}
	for _, e := range r.RunErrors {
		p("\nRun error: %s\n", e)
	}

	// By intended send time, not completion: a request due during the
	// fault belongs to the fault even if its answer came after the heal.
	p("\n## Requests by phase\n\nPhases are by intended send time; the fault phase runs from the fault until its heal completed.\n\n")
	p("| phase | from | to | sent | succeeded | failed | unknown | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, ph := range append(r.Phases, r.Total) {
		to := min(ph.Window.To, r.Phases[len(r.Phases)-1].Window.To) // the total's window runs on, for the draining
		row(&b, ph.All, ph.Name, fmt.Sprintf("%.1f s", ph.Window.From.Seconds()), fmt.Sprintf("%.1f s", to.Seconds()))
	}
	p("\n| kind | phase | sent | succeeded | failed | unknown | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range []string{"redirects", "creates", "misses"} {
		for _, ph := range r.Phases[1:] {
			row(&b, map[string]PhaseStats{"redirects": ph.Redirects, "creates": ph.Creates, "misses": ph.Misses}[k], k, ph.Name)
		}
	}

	p("\n## Failover and recovery\n\n")
	if r.Failover != nil {
		p("- Sentinels promoted a replica **%s** after %s.\n", ms(*r.Failover), r.FailoverFrom)
	}
	if r.SecondFailover != nil {
		p("- After the promoted master was killed too, the sentinels promoted the last node **%s** later.\n", ms(*r.SecondFailover))
	}
	if r.RedisBackAt != nil {
		p("- Redis available again at %.2f s. Per app, time until its counters moved again (an app restarted after that: from its first answer through nginx; read from /metrics every %s, so up to that late):\n\n",
			r.RedisBackAt.Seconds(), ms(s.ScrapeEvery))
		p("  | app | Redis hits moving again | Redis fills moving again | longest stall of hits in the fault phase | of fills |\n  |---|---|---|---|---|\n")
		for _, a := range r.BackOnRedis {
			p("  | %s | %s | %s | %s | %s |\n", a.App, optMS(a.Reads), optMS(a.Fills), ms(a.ReadsStalled), ms(a.FillsStalled))
		}
		p("\n")
	}
	if r.RecoveryWhat != "" {
		p("- Recovery, %s: **%s**.\n", r.RecoveryWhat, optMS(r.Recovery))
	}
	p("- Lookup path during the fault phase: %.0f lookups, %.0f MySQL queries (L1 + singleflight bound %.0f).\n",
		r.MySQL.Lookups, r.MySQL.Queries, r.MySQL.Bound)
	if o := r.Outage; o != nil {
		p("- While MySQL was down (%.1f s to %.1f s): the first POST of each create was answered %s (p99 %s, max %s), "+
			"and after the client's retries %s; lookups of unknown codes answered %s (p99 %s, max %s). "+
			"docs/design.md expects 503s here: failed creates are reported, not counted against the row.\n",
			o.Window.From.Seconds(), o.Window.To.Seconds(), statusList(o.CreateFirstStatus), ms(o.CreateFirst.P99), ms(o.CreateFirst.Max),
			statusList(o.CreateStatus), statusList(o.MissStatus), ms(o.Miss.P99), ms(o.Miss.Max))
	}

	p("\n## Timeline\n\nNumbered as on the chart's dashed lines.\n\n| # | at | event |\n|---|---|---|\n")
	phases := r.Phases[1:]
	begins := func(before time.Duration) { // the phases that began before, unnumbered
		for ; len(phases) > 0 && phases[0].Window.From < before; phases = phases[1:] {
			p("|  | %.2f s | %s phase begins |\n", phases[0].Window.From.Seconds(), phases[0].Name)
		}
	}
	for i, e := range r.Events { // in time order, as buildReport sorted them
		begins(e.At)
		p("| %d | %.2f s | %s |\n", i+1, e.At.Seconds(), e.Text)
	}
	begins(math.MaxInt64)

	p("\n## Breaker transitions\n\nFrom `shortener_breaker_transitions_total{breaker,from,to}` on each app's /metrics; a transition happened at or up to one scrape interval before the time shown.\n\n")
	if len(r.Transitions) == 0 {
		p("None.\n")
	} else {
		p("| at | app | breaker | transition | count |\n|---|---|---|---|---|\n")
		for _, t := range r.Transitions {
			p("| %.2f s | %s | %s | %s → %s | %d |\n", t.At.Seconds(), t.App, t.Breaker, t.From, t.To, t.Count)
		}
	}

	// The ledger is shown whole, zeros included: "0 lost" is a measured
	// figure, and its absence would read as "not checked".
	p("\n## Ledger\n\n")
	if r.LedgerError != "" {
		p("Not checked: %s\n", r.LedgerError)
	}
	for _, e := range r.Ledger {
		p("**%s**, checked against MySQL (read-only user) and through nginx after the run:\n\n| | count |\n|---|---|\n", e.Account)
		for _, f := range e.Figures {
			p("| %s | %s |\n", f.Label, f.Value)
		}
		if len(e.Problems) > 0 {
			p("\nProblems (first %d of %d):\n\n", min(maxListed, len(e.Problems)), len(e.Problems))
			for _, pr := range e.Problems[:min(maxListed, len(e.Problems))] {
				p("- %s: `%s` %s %s: %s\n", pr.Kind, pr.Code, pr.Key, pr.URL, pr.Why)
			}
		}
		p("\n")
	}

	p("\n## Errors\n\n")
	if len(r.Errors) == 0 {
		p("None: every request got the answer it wanted.\n")
	} else {
		p("Failed and unknown requests grouped by cause (first %d of %d groups):\n\n| kind | phase | count | error |\n|---|---|---|---|\n",
			min(maxListed, len(r.Errors)), len(r.Errors))
		for _, e := range r.Errors[:min(maxListed, len(r.Errors))] {
			p("| %s | %s | %d | %s |\n", e.Kind, e.Phase, e.Count, strings.ReplaceAll(e.Message, "|", `\|`))
		}
	}
	return b.String()
}

// Failures lists the required checks that failed and the run's errors:
// why the row does not hold, empty when it does.
func (r *Report) Failures() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Required && !c.OK {
			out = append(out, fmt.Sprintf("%s: got %s, want %s.", c.What, c.Got, c.Want))
		}
	}
	for _, e := range r.RunErrors {
		out = append(out, "Run error: "+e+".")
	}
	if r.LedgerError != "" {
		out = append(out, "Ledger: "+r.LedgerError+".")
	}
	return out
}

// row writes a table row of cells followed by st's counts and latencies.
func row(b *strings.Builder, st PhaseStats, cells ...string) {
	cells = append(cells, fmt.Sprint(st.Sent), fmt.Sprint(st.Succeeded), fmt.Sprint(st.Failed), unknownCell(st.Counts))
	if st.Latency.N == 0 {
		cells = append(cells, "–", "–", "–", "–")
	} else {
		cells = append(cells, ms(st.Latency.P50), ms(st.Latency.P95), ms(st.Latency.P99), ms(st.Latency.Max))
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

func unknownCell(c Counts) string {
	if c.Dropped > 0 {
		return fmt.Sprintf("%d (%d not sent)", c.Unknown, c.Dropped)
	}
	return fmt.Sprint(c.Unknown)
}

func optMS(d *time.Duration) string {
	if d == nil {
		return "not seen"
	}
	return ms(*d)
}

// statusList renders status counts as "503 ×12, 0 ×1" (0: no answer).
func statusList(m map[int]int) string {
	if len(m) == 0 {
		return "nothing (none due)"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := fmt.Sprint(k)
		if k == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", name, m[k]))
	}
	return strings.Join(parts, ", ")
}
