package chaos

import (
	"fmt"
	"net/http"
	"time"
)

// The verdict: each scenario's row of DESIGN.md's failure table turned
// into checks with a want and a got, so a reader sees the measurement
// behind "holds" and a failed check names the promise it broke. Checks
// that DESIGN.md does not promise (a breaker left open, creates failing
// while an app is down) are kept but not required: they inform without
// moving the verdict.

// judge measures the scenario's promises.
func judge(sc Scenario, rep *Report, c Config) []Check {
	var out []Check
	add := func(required, ok bool, what, want, got string) {
		out = append(out, Check{What: what, Want: want, Got: got, OK: ok, Required: required})
	}
	t := rep.Total
	badRedirects := t.Redirects.Failed + t.Redirects.Unknown
	add(true, badRedirects == 0, "redirects failed or unanswered", "0",
		fmt.Sprintf("%d of %d (%d failed, %d unknown)", badRedirects, t.Redirects.Sent, t.Redirects.Failed, t.Redirects.Unknown))
	add(true, rep.Ledger.WrongLocation == 0, "redirects with a wrong Location", "0", fmt.Sprint(rep.Ledger.WrongLocation))

	badCreates := t.Creates.Failed + t.Creates.Unknown
	createsGot := fmt.Sprintf("%d of %d (%d failed, %d unknown)", badCreates, t.Creates.Sent, t.Creates.Failed, t.Creates.Unknown)
	switch sc.target {
	case targetMySQL:
		add(false, true, "creates failed or unanswered (expected: MySQL is down)", "reported", createsGot)
	case targetApp:
		add(sc.Name == "term-app", badCreates == 0, "creates failed or unanswered after the client's retries", "0", createsGot)
	default:
		add(true, badCreates == 0, "creates failed or unanswered", "0", createsGot)
	}
	l := rep.Ledger
	add(true, len(l.Lost) == 0, "acknowledged creates lost (no row in MySQL)", "0", fmt.Sprintf("%d of %d", len(l.Lost), l.Acknowledged))
	add(true, len(l.Mismatched) == 0, "acknowledged codes stored with another URL", "0", fmt.Sprint(len(l.Mismatched)))
	add(true, len(l.Duplicated) == 0, "idempotency keys that made two links", "0", fmt.Sprint(len(l.Duplicated)))
	add(true, len(l.KeyMismatched) == 0, "acknowledged creates whose key names another code", "0", fmt.Sprint(len(l.KeyMismatched)))
	add(true, len(l.Unresolved) == 0, "acknowledged creates that do not redirect to their URL through nginx after the run", "0",
		fmt.Sprintf("%d of %d", len(l.Unresolved), l.Acknowledged))

	steady, fault := rep.Phases[1], rep.Phases[2]
	switch sc.Name {
	case "kill-master":
		got := "not seen"
		if rep.Recovery != nil {
			got = ms(*rep.Recovery)
		}
		add(true, rep.Recovery != nil && *rep.Recovery <= time.Second+c.ScrapeEvery,
			"back on Redis after the promotion (fills moving on every app)", fmt.Sprintf("≤ 1 s (+ one scrape interval, %s)", ms(c.ScrapeEvery)), got)
	case "freeze-master", "partition-master":
		for _, k := range []struct {
			name          string
			steady, fault PhaseStats
		}{{"redirect", steady.Redirects, fault.Redirects}, {"create", steady.Creates, fault.Creates}} {
			limit := k.steady.Latency.Max + c.RedisTimeout
			add(true, k.fault.Latency.Max <= limit,
				fmt.Sprintf("slowest %s during the fault", k.name),
				fmt.Sprintf("≤ steady max + one Redis deadline = %s", ms(limit)), ms(k.fault.Latency.Max))
		}
	case "redis-down":
		add(true, rep.MySQL.Queries <= rep.MySQL.Bound, "MySQL queries of the lookup path during the fault",
			fmt.Sprintf("≤ %.0f (L1 + singleflight bound)", rep.MySQL.Bound),
			fmt.Sprintf("%.0f for %.0f lookups", rep.MySQL.Queries, rep.MySQL.Lookups))
	case "sentinels-minority":
		p, okP := rep.Marks[markPromoted]
		b, okB := rep.Marks[markSentBack]
		add(true, okP && okB && p >= b, "no promotion before the quorum returned", "promotion after the sentinels' restart",
			fmt.Sprintf("sentinels back at %s, promotion at %s", fmtAt(b, okB), fmtAt(p, okP)))
	case "mysql-down":
		if o := rep.Outage; o != nil {
			limit := c.MySQLTimeout + 500*time.Millisecond
			// A 429 is a fast refusal too: the load's own retries of those
			// 503s push one client address past the create rate limit,
			// which answers before MySQL is asked, so nothing is written.
			// A 201 is a create that beat the kill or followed the
			// restart; the ledger checks it like any other.
			n503, n := o.CreateFirstStatus[http.StatusServiceUnavailable]+o.CreateFirstStatus[http.StatusTooManyRequests]+
				o.CreateFirstStatus[http.StatusCreated], 0
			for _, v := range o.CreateFirstStatus {
				n += v
			}
			add(true, n503 == n && o.CreateFirst.Max <= limit, "creates during the outage: fast answers (first POST of each)",
				fmt.Sprintf("503, or 429 from the rate limit, or 201 around the kill and restart; within MySQL timeout + 500 ms = %s", ms(limit)),
				fmt.Sprintf("%s, max %s", statusList(o.CreateFirstStatus), ms(o.CreateFirst.Max)))
			// A 404 is the right answer whenever MySQL answers: at the
			// window's edges, around the kill and the restart.
			m503, m := o.MissStatus[http.StatusServiceUnavailable]+o.MissStatus[http.StatusNotFound], 0
			for _, v := range o.MissStatus {
				m += v
			}
			add(true, m503 == m && o.Miss.Max <= limit, "uncached lookups during the outage: fast answers",
				fmt.Sprintf("503 (or 404 around the kill and restart) within %s", ms(limit)), fmt.Sprintf("%s, max %s", statusList(o.MissStatus), ms(o.Miss.Max)))
		}
		add(true, l.FailedStored == 0, "creates that failed for the client but were stored (half-written)", "0", fmt.Sprint(l.FailedStored))
	}
	if sc.target != targetMySQL {
		bad := t.Misses.Failed + t.Misses.Unknown
		add(false, bad == 0, "lookups of unknown codes answered other than 404", "0", fmt.Sprintf("%d of %d", bad, t.Misses.Sent))
	}
	return out
}
