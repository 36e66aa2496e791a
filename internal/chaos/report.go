package chaos

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Report is what one scenario showed: the figures docs/design.md asks of a
// chaos report, the checks of its failure-table row, and the raw series
// the chart is drawn from. It is written as JSON beside its Markdown.
type Report struct {
	Scenario string    `json:"scenario"`
	Fault    string    `json:"fault"`
	Expect   string    `json:"expect"`
	Does     string    `json:"does"`
	Started  time.Time `json:"started"`
	Settings Config    `json:"settings"`

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
	// SecondFailover, for a scenario that kills the promoted master too,
	// is timed from that second kill.
	Failover       *time.Duration `json:"failover_ns,omitempty"`
	FailoverFrom   string         `json:"failover_from,omitempty"`
	SecondFailover *time.Duration `json:"second_failover_ns,omitempty"`
	// Recovery is how long service took to come back after the fault was
	// undone, as RecoveryWhat says; nil when not applicable or not seen.
	Recovery     *time.Duration `json:"recovery_ns,omitempty"`
	RecoveryWhat string         `json:"recovery_what,omitempty"`
	// BackOnRedis is, per app, how long after Redis was available again
	// (RedisBackAt) its Redis hits and fills moved again.
	RedisBackAt *time.Duration `json:"redis_back_at_ns,omitempty"`
	BackOnRedis []AppBack      `json:"back_on_redis,omitempty"`

	MySQL MySQLLoad `json:"mysql"`

	Transitions   []Transition   `json:"breaker_transitions"`
	BreakerStates []BreakerState `json:"breaker_states"`

	// Ledger is every account's entry (Accounts, Runner.AddAccount).
	Ledger      []Entry `json:"ledger"`
	LedgerError string  `json:"ledger_error,omitempty"`

	Outage *Outage `json:"outage,omitempty"`

	Errors  []ErrorCount `json:"errors"`
	Seconds []Second     `json:"seconds"`

	Checks []Check `json:"checks"`
	// Holds is true when every required check passed and the run had no
	// error: the row of docs/design.md's failure table holds.
	Holds     bool     `json:"holds"`
	RunErrors []string `json:"run_errors,omitempty"`
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
	// Bound is the most queries L1 and singleflight allow (MySQLBounded).
	Bound float64 `json:"bound"`
}

// Outage is, for mysql-down, how requests were answered while MySQL was
// down.
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

// reportInput is everything a run collected.
type reportInput struct {
	run       *Run
	began     time.Time
	events    []Event
	errs      []error
	ledger    []Entry
	ledgerErr error
}

// phaseNames name the phases of a run, in order; Run.Phases holds their
// windows in the same order.
func phaseNames() []string { return []string{"warm-up", "steady", "fault", "recovery"} }

func dur(d time.Duration) *time.Duration { return &d }

// buildReport computes a report from a run's raw material: its phases,
// timeline and ledger, then the common checks, the ledger's and the
// scenario's own, and the verdict.
func buildReport(in reportInput) *Report {
	run := in.run
	c, sc := run.Config, run.Scenario
	rep := &Report{
		Scenario: sc.Name, Fault: sc.Fault, Expect: sc.Expect, Does: sc.Does,
		Started: in.began.UTC(), Settings: c,
		Events: in.events, Marks: run.Marks, Ledger: in.ledger,
	}
	run.Report = rep
	slices.SortStableFunc(rep.Events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	for i, w := range run.Phases {
		rep.Phases = append(rep.Phases, phaseOf(phaseNames()[i], run.Results, w))
	}
	end := run.Phases[len(run.Phases)-1].To
	rep.Total = phaseOf("total", run.Results, Window{0, end + time.Hour})
	rep.Seconds = perSecond(run.Results, end)
	rep.Transitions = transitions(run.Samples, run.Apps)
	rep.BreakerStates = breakerStates(run.Samples, run.Apps, []string{"read", "write"})
	if in.ledgerErr != nil {
		rep.LedgerError = in.ledgerErr.Error()
	}
	for _, err := range in.errs {
		rep.RunErrors = append(rep.RunErrors, err.Error())
	}
	rep.Errors = errorCounts(run.Results, run.Phases)
	for _, app := range run.Apps {
		rep.MySQL.Lookups += growth(run.Samples, app, keyLookups, run.Fault())
		rep.MySQL.Queries += growth(run.Samples, app, keyMySQL, run.Fault())
	}

	rep.Checks = commonChecks(run)
	for _, e := range rep.Ledger {
		rep.Checks = append(rep.Checks, e.Checks...)
	}
	for _, m := range sc.Checks {
		rep.Checks = append(rep.Checks, m(run)...)
	}
	verdict(rep, sc, c)
	return rep
}

// firstDone returns how long after from the first result matching keep
// completed (at its intended send time + latency), or nil if none did.
func firstDone(results []Result, from time.Duration, keep func(Result) bool) *time.Duration {
	var first *time.Duration
	for _, r := range results {
		if after := r.Intended + r.Latency - from; !r.Dropped && after >= 0 && (first == nil || after < *first) && keep(r) {
			first = &after
		}
	}
	return first
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
	n := map[ErrorCount]int{} // by kind, phase and message
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
		n[ErrorCount{Kind: r.Kind.String(), Phase: ph, Message: normalise(r.Err)}]++
	}
	out := make([]ErrorCount, 0, len(n))
	for e, c := range n {
		e.Count = c
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Kind+a.Phase+a.Message, b.Kind+b.Phase+b.Message))
	})
	return out
}

// What varies per request in an error: the URL, the client's side of a
// connection ("127.0.0.1:54321->"), a wrong Location.
var (
	quotedURL     = regexp.MustCompile(`"http://[^"]*"`)
	clientSide    = regexp.MustCompile(`\S+->`)
	wrongLocation = regexp.MustCompile(`with Location.*`)
)

// normalise strips what varies per request from an error so that equal
// causes group together.
func normalise(msg string) string {
	msg = quotedURL.ReplaceAllString(msg, `"…"`)
	msg = clientSide.ReplaceAllString(msg, "")
	return wrongLocation.ReplaceAllString(msg, "with a wrong Location")
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
