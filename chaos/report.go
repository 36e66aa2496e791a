package chaos

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Report is what one scenario showed: the figures DESIGN.md asks of a
// chaos report, the checks of its failure-table row, and the raw series
// the chart is drawn from. It is written as JSON beside its Markdown.
type Report struct {
	Scenario string    `json:"scenario"`
	Fault    string    `json:"fault"`
	Expect   string    `json:"expect"`
	Does     string    `json:"does"`
	RunID    string    `json:"run_id"`
	Started  time.Time `json:"started"`
	Settings Settings  `json:"settings"`

	// Phases are warm-up, steady, fault and recovery, by intended send
	// time; the fault phase runs from the fault until its heal is done.
	Phases []Phase `json:"phases"`
	Total  Phase   `json:"total"`

	Events []Event `json:"events"`
	// Marks are the moments the figures are timed from, by name:
	// master_down, promoted, sentinels_back, redis_back, ready:<app>,
	// mysql_back.
	Marks map[string]time.Duration `json:"marks_ns"`
	// Failover is how long the sentinels took to promote a replica, timed
	// from FailoverFrom; nil when the scenario has no failover.
	Failover     *time.Duration `json:"failover_ns,omitempty"`
	FailoverFrom string         `json:"failover_from,omitempty"`
	// Recovery is how long service took to come back after the fault was
	// undone, as RecoveryWhat says; nil when not applicable or not seen.
	Recovery     *time.Duration `json:"recovery_ns,omitempty"`
	RecoveryWhat string         `json:"recovery_what,omitempty"`
	// BackOnRedis is, per app, how long after Redis was available again
	// (RedisBackAt) its Redis hits and fills moved again.
	RedisBackAt *time.Duration `json:"redis_back_at_ns,omitempty"`
	BackOnRedis []AppBack      `json:"back_on_redis,omitempty"`
	// MySQL is the lookup path's MySQL queries over the fault phase.
	MySQL MySQLLoad `json:"mysql"`

	Transitions   []Transition   `json:"breaker_transitions"`
	BreakerStates []BreakerState `json:"breaker_states"`

	Ledger      Ledger `json:"ledger"`
	LedgerError string `json:"ledger_error,omitempty"`

	// Outage is, for mysql-down, how creates and misses were answered
	// while MySQL was down.
	Outage *Outage `json:"outage,omitempty"`

	Errors  []ErrorCount `json:"errors"`
	Seconds []Second     `json:"seconds"`

	Checks []Check `json:"checks"`
	// Holds is true when every required check passed and the run had no
	// error: the row of DESIGN.md's failure table holds.
	Holds     bool     `json:"holds"`
	RunErrors []string `json:"run_errors,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// Settings are the run's settings, as the report states them.
type Settings struct {
	Rate           float64       `json:"rate"`
	CreateShare    float64       `json:"create_share"`
	MissShare      float64       `json:"miss_share"`
	Zipf           float64       `json:"zipf"`
	Links          int           `json:"links"`
	Timeout        time.Duration `json:"timeout_ns"`
	MaxInFlight    int           `json:"max_in_flight"`
	CreateAttempts int           `json:"create_attempts"`
	RedisTimeout   time.Duration `json:"redis_timeout_ns"`
	L1TTL          time.Duration `json:"l1_ttl_ns"`
	MySQLTimeout   time.Duration `json:"mysql_timeout_ns"`
	ScrapeEvery    time.Duration `json:"scrape_every_ns"`
}

// Phase is the figures of one phase, overall and per kind of request.
type Phase struct {
	Name      string     `json:"name"`
	Window    Window     `json:"window"`
	All       PhaseStats `json:"all"`
	Redirects PhaseStats `json:"redirects"`
	Creates   PhaseStats `json:"creates"`
	Misses    PhaseStats `json:"misses"`
}

// AppBack is how long one app took to use Redis again; nil when it did
// not within the run.
type AppBack struct {
	App   string         `json:"app"`
	Reads *time.Duration `json:"reads_ns"`
	Fills *time.Duration `json:"fills_ns"`
	// ReadsStalled and FillsStalled are the longest stretches of the fault
	// phase in which the app's Redis hits, or its fills, did not move.
	ReadsStalled time.Duration `json:"reads_stalled_ns"`
	FillsStalled time.Duration `json:"fills_stalled_ns"`
}

// MySQLLoad is what the lookup path asked of MySQL during the fault.
type MySQLLoad struct {
	Lookups float64 `json:"lookups"`
	Queries float64 `json:"queries"`
	// Bound is the most queries L1 and singleflight allow: per app, one per
	// distinct code per L1 TTL (plus one), and one per unknown code.
	Bound float64 `json:"bound"`
}

// Outage is how requests were answered while MySQL was down.
type Outage struct {
	Window Window `json:"window"`
	// CreateStatus counts the final answers of creates due in the outage,
	// after the client's retries; CreateFirstStatus the answers to their
	// first POST, and CreateFirst how long those took.
	CreateStatus      map[int]int `json:"create_status"`
	CreateFirstStatus map[int]int `json:"create_first_status"`
	CreateFirst       Latency     `json:"create_first_answer"`
	// MissStatus and Miss: the same for lookups no cache could answer.
	MissStatus map[int]int `json:"miss_status"`
	Miss       Latency     `json:"miss_latency"`
}

// ErrorCount is how often one error was seen.
type ErrorCount struct {
	Kind    string `json:"kind"`
	Phase   string `json:"phase"`
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// Check is one promise of the scenario's row, measured.
type Check struct {
	What string `json:"what"`
	Want string `json:"want"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
	// Required checks decide whether the row holds; the others are
	// reported for what they tell.
	Required bool `json:"required"`
}

// reportInput is everything a run collected.
type reportInput struct {
	sc        Scenario
	cfg       Config
	began     time.Time
	results   []Result
	samples   []Sample
	apps      []string
	phases    []Window // warm-up, steady, fault, recovery
	events    []Event
	marks     map[string]time.Duration
	errs      []error
	ledger    Ledger
	ledgerErr error
}

// phaseNames name the phases of a run, in order; reportInput.phases
// holds their windows in the same order.
func phaseNames() []string { return []string{"warm-up", "steady", "fault", "recovery"} }

func isKind(k Kind) func(Result) bool { return func(r Result) bool { return r.Kind == k } }
func anyKind(Result) bool             { return true }

// phaseOf returns the phase stats of results over w.
func phaseOf(name string, results []Result, w Window) Phase {
	return Phase{
		Name: name, Window: w,
		All:       phaseStats(results, w, anyKind),
		Redirects: phaseStats(results, w, isKind(Redirect)),
		Creates:   phaseStats(results, w, isKind(Create)),
		Misses:    phaseStats(results, w, isKind(Miss)),
	}
}

func dur(d time.Duration) *time.Duration { return &d }

// buildReport computes a report from a run's raw material.
func buildReport(in reportInput) *Report {
	c := in.cfg
	rep := &Report{
		Scenario: in.sc.Name, Fault: in.sc.Fault, Expect: in.sc.Expect, Does: in.sc.Does,
		RunID: c.RunID, Started: in.began.UTC(),
		Settings: Settings{
			Rate: c.Rate, CreateShare: c.CreateShare, MissShare: c.MissShare, Zipf: c.Zipf, Links: c.Links,
			Timeout: c.Timeout, MaxInFlight: c.MaxInFlight, CreateAttempts: c.CreateAttempts,
			RedisTimeout: c.RedisTimeout, L1TTL: c.L1TTL, MySQLTimeout: c.MySQLTimeout, ScrapeEvery: c.ScrapeEvery,
		},
		Events: in.events, Marks: in.marks, Ledger: in.ledger,
	}
	sort.SliceStable(rep.Events, func(i, j int) bool { return rep.Events[i].At < rep.Events[j].At })
	for i, w := range in.phases {
		rep.Phases = append(rep.Phases, phaseOf(phaseNames()[i], in.results, w))
	}
	end := in.phases[len(in.phases)-1].To
	rep.Total = phaseOf("total", in.results, Window{0, end + time.Hour})
	rep.Seconds = perSecond(in.results, end)
	rep.Transitions = transitions(in.samples, in.apps)
	rep.BreakerStates = breakerStates(in.samples, in.apps, []string{"read", "write"})
	if in.ledgerErr != nil {
		rep.LedgerError = in.ledgerErr.Error()
	}
	for _, err := range in.errs {
		rep.RunErrors = append(rep.RunErrors, err.Error())
	}
	rep.Errors = errorCounts(in.results, in.phases)
	fault := in.phases[2]

	// MySQL load over the fault phase, and the bound L1 + singleflight set.
	for _, app := range in.apps {
		rep.MySQL.Lookups += growth(in.samples, app, keyLookups, fault)
		rep.MySQL.Queries += growth(in.samples, app, keyMySQL, fault)
	}
	codes := map[int]bool{}
	misses := 0
	for _, r := range in.results {
		if !fault.contains(r.Intended) {
			continue
		}
		switch r.Kind {
		case Redirect:
			codes[r.Link] = true
		case Miss:
			misses++
		}
	}
	refills := math.Ceil(float64(fault.To-fault.From)/float64(c.L1TTL)) + 1
	rep.MySQL.Bound = float64(len(in.apps)) * (float64(len(codes))*refills + float64(misses))

	m := in.marks
	switch in.sc.target {
	case targetMaster:
		from, fromWhat := m[markMasterGone], "the master was taken away"
		if sb, ok := m[markSentBack]; ok {
			from, fromWhat = sb, "the sentinels were back (quorum restored)"
		}
		if p, ok := m[markPromoted]; ok {
			rep.Failover, rep.FailoverFrom = dur(p-from), fromWhat
		}
		backOnRedis(rep, in, "fills on every app moved again (writes reach the new master)", func(b AppBack) *time.Duration { return b.Fills })
	case targetRedis:
		backOnRedis(rep, in, "Redis hits on every app moved again", func(b AppBack) *time.Duration { return b.Reads })
	case targetApp:
		rep.RecoveryWhat = "from the restarted app answering /readyz to its first answer through nginx (slowest app)"
		var worst time.Duration
		restarted, all := 0, true
		for _, app := range in.apps {
			ready, ok := m[markAppReady+app]
			if !ok {
				continue
			}
			restarted++
			first, ok := firstDone(in.results, ready, func(r Result) bool { return r.ServedBy == app && r.Status < 500 && r.Status > 0 })
			if !ok {
				all = false
				continue
			}
			worst = max(worst, first-ready)
		}
		if restarted > 0 && all {
			rep.Recovery = dur(worst)
		}
	case targetMySQL:
		rep.RecoveryWhat = "from MySQL answering again to the first acknowledged create"
		if back, ok := m[markMySQLBack]; ok {
			if first, ok := firstDone(in.results, back, func(r Result) bool { return r.Kind == Create && r.Outcome == OK }); ok {
				rep.Recovery = dur(first - back)
			}
			rep.Outage = outage(in.results, Window{fault.From, back})
		}
	}
	rep.Checks = judge(in.sc, rep, c)
	first, last := edgeStates(rep.BreakerStates)
	if open := notClosed(first); len(open) > 0 {
		rep.Notes = append(rep.Notes, "At the start of the run these breakers were not closed, left so by an earlier scenario: "+strings.Join(open, ", ")+".")
	}
	if in.sc.target == targetMaster || in.sc.target == targetRedis {
		open := notClosed(last)
		rep.Checks = append(rep.Checks, Check{What: "breakers closed again by the end of the run", Want: "all closed",
			Got: map[bool]string{true: "all closed", false: strings.Join(open, ", ")}[len(open) == 0], OK: len(open) == 0})
	}
	rep.Holds = len(rep.RunErrors) == 0 && rep.LedgerError == ""
	for _, ch := range rep.Checks {
		if ch.Required && !ch.OK {
			rep.Holds = false
		}
	}
	rep.Notes = append(rep.Notes,
		"Clicks are not measured: the app does not count clicks yet (DESIGN.md, redirect step 3), so the failure table's clicks column cannot be checked.")
	return rep
}

// edgeStates returns each app's breakers' first and last states, keyed
// "app breaker".
func edgeStates(states []BreakerState) (first, last map[string]string) {
	first, last = map[string]string{}, map[string]string{}
	for _, s := range states {
		k := s.App + " " + s.Breaker
		if _, ok := first[k]; !ok {
			first[k] = s.State
		}
		last[k] = s.State
	}
	return first, last
}

// notClosed lists the breakers of m that are not closed, as "app1 write
// open", in order.
func notClosed(m map[string]string) []string {
	var out []string
	for k, st := range m {
		if st != "closed" {
			out = append(out, k+" "+st)
		}
	}
	sort.Strings(out)
	return out
}

// backOnRedis fills in the time each app took to use Redis again after
// the redis_back mark, and the recovery figure chosen by pick.
func backOnRedis(rep *Report, in reportInput, what string, pick func(AppBack) *time.Duration) {
	ref, ok := in.marks[markRedisBack]
	if !ok {
		return
	}
	rep.RedisBackAt = dur(ref)
	rep.RecoveryWhat = "from Redis being available again (" + map[bool]string{true: "the promotion", false: "the restart"}[in.sc.target == targetMaster] + ") until " + what
	var worst time.Duration
	all := true
	for _, app := range in.apps {
		fault := in.phases[2]
		b := AppBack{App: app,
			ReadsStalled: longestStall(in.samples, app, keyHits, fault),
			FillsStalled: longestStall(in.samples, app, keyFillsOK, fault)}
		if t, ok := movedAfter(in.samples, app, keyHits, ref); ok {
			b.Reads = dur(t - ref)
		}
		if t, ok := movedAfter(in.samples, app, keyFillsOK, ref); ok {
			b.Fills = dur(t - ref)
		}
		rep.BackOnRedis = append(rep.BackOnRedis, b)
		if d := pick(b); d != nil {
			worst = max(worst, *d)
		} else {
			all = false
		}
	}
	if all && len(in.apps) > 0 {
		rep.Recovery = dur(worst)
	}
}

// firstDone returns when the first result matching keep completed after
// from (completion = intended send time + latency).
func firstDone(results []Result, from time.Duration, keep func(Result) bool) (time.Duration, bool) {
	best, found := time.Duration(0), false
	for _, r := range results {
		done := r.Intended + r.Latency
		if r.Dropped || done < from || !keep(r) {
			continue
		}
		if !found || done < best {
			best, found = done, true
		}
	}
	return best, found
}

// outage describes how creates and misses due in w were answered.
func outage(results []Result, w Window) *Outage {
	o := &Outage{Window: w, CreateStatus: map[int]int{}, CreateFirstStatus: map[int]int{}, MissStatus: map[int]int{}}
	var first, miss []time.Duration
	for _, r := range results {
		if !w.contains(r.Intended) || r.Dropped {
			continue
		}
		switch r.Kind {
		case Create:
			o.CreateStatus[r.Status]++
			o.CreateFirstStatus[r.FirstStatus]++
			first = append(first, r.FirstAnswer)
		case Miss:
			o.MissStatus[r.Status]++
			miss = append(miss, r.Latency)
		}
	}
	o.CreateFirst, o.Miss = Summarise(first), Summarise(miss)
	return o
}

// errorCounts groups the failed and unknown requests by kind, phase and
// message, most frequent first.
func errorCounts(results []Result, phases []Window) []ErrorCount {
	type key struct{ kind, phase, msg string }
	n := map[key]int{}
	for _, r := range results {
		if r.Outcome == OK {
			continue
		}
		ph := "after"
		for i, w := range phases {
			if w.contains(r.Intended) {
				ph = phaseNames()[i]
			}
		}
		n[key{r.Kind.String(), ph, normalise(r.Err)}]++
	}
	out := make([]ErrorCount, 0, len(n))
	for k, c := range n {
		out = append(out, ErrorCount{Kind: k.kind, Phase: k.phase, Message: k.msg, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Kind+out[i].Phase+out[i].Message < out[j].Kind+out[j].Phase+out[j].Message
	})
	return out
}

// normalise strips what varies per request (URLs, ports of the client
// side) from an error so that equal causes group together.
func normalise(msg string) string {
	if i := strings.Index(msg, `"http://`); i >= 0 {
		if j := strings.Index(msg[i+1:], `"`); j >= 0 {
			msg = msg[:i] + `"…"` + msg[i+j+2:]
		}
	}
	if i := strings.Index(msg, "->"); i >= 0 {
		if j := strings.Index(msg[i:], ":"); j >= 0 {
			msg = msg[:i] + msg[i+j:]
		}
	}
	if i := strings.Index(msg, "with Location"); i >= 0 {
		msg = msg[:i] + "with a wrong Location"
	}
	return msg
}

func fmtAt(d time.Duration, ok bool) string {
	if !ok {
		return "never"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// ms formats d for people: milliseconds with sensible precision.
func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}
