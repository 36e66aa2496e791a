package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shortener/internal/stack"
)

// Scenario is one fault of docs/design.md's failure table (or none, for the
// baseline): what it does to the stack at the start of the fault phase,
// how it puts things back at its end, and the checks its row promises.
type Scenario struct {
	// Name is what -scenario takes: "kill-master", …
	Name string
	// Fault is the row of docs/design.md's failure table it exercises.
	Fault string
	// Expect is what that row promises, in its words.
	Expect string
	// Does says what the run does, step by step, for the report.
	Does string
	// Inject breaks the stack at the start of the fault phase; Heal puts
	// it back at the end (the run heals whatever is left afterwards).
	Inject, Heal func(ctx context.Context, sc *Scene) error
	// Checks measure the scenario's own promises, on top of the common
	// checks and the ledger's.
	Checks []Measure
	// Waive names common or ledger checks (Check.ID) that this scenario
	// reports without requiring, because docs/design.md expects them to fail
	// here: creates while MySQL is down, say; a measure of Checks may
	// state the row's own version of the promise instead.
	Waive []string
	// Require names checks that are reported, not required, in general
	// and that this scenario's row promises: trending's quality while
	// Redis is slow, say.
	Require []string
	// Needs is the database the row runs on: NeedsAny, NeedsSingle (one
	// MariaDB: mysql-down kills it) or NeedsGalera (the Galera rows).
	Needs Needs
}

// Needs says which stacks a scenario runs on.
type Needs int

const (
	NeedsAny    Needs = iota // any stack
	NeedsSingle              // a stack with one MariaDB
	NeedsGalera              // a stack with a three-node Galera cluster
)

// Fits reports whether sc runs on s.
func (sc Scenario) Fits(s *stack.Stack) bool {
	switch sc.Needs {
	case NeedsSingle:
		return !s.Galera()
	case NeedsGalera:
		return s.Galera()
	}
	return true
}

// MatrixFor is the scenarios a full run takes on s: on a single MariaDB
// every row but the Galera ones; on a Galera stack the baseline and the
// Galera rows (the Redis and app rows do not touch the database's
// topology, and run on the default stack).
func MatrixFor(s *stack.Stack) []Scenario {
	var out []Scenario
	for _, sc := range Scenarios() {
		if sc.Fits(s) && (!s.Galera() || sc.Needs == NeedsGalera || sc.Name == "baseline") {
			out = append(out, sc)
		}
	}
	return out
}

// Scene is a scenario's view of the run while it breaks and heals the
// stack: the stack, the load (to see an app serve again) and the timeline
// it writes its steps into.
type Scene struct {
	Stack *stack.Stack
	Load  *Load

	mu     sync.Mutex
	events []Event
	marks  map[string]time.Duration

	// master is the Redis master when the fault began; promotion waits
	// for its successor (watchPromotion).
	master *stack.Proc
	// mysqlNode is the Galera node a Galera row took away (galera.go).
	mysqlNode *stack.Proc
	promotion func() (*stack.Proc, error)
	watches   sync.WaitGroup
}

// Event is a step of a run, at an offset from the start of the load.
type Event struct {
	At   time.Duration `json:"at_ns"`
	Text string        `json:"text"`
}

// Names of marks: moments a scenario records for the checks to measure
// from.
const (
	markPromoted      = "promoted"   // the sentinels named a new master that reports role master
	markRedisBack     = "redis_back" // all Redis nodes restarted (redis-down)
	markAppReady      = "ready:"     // + app: the restarted (or thawed) app is back
	markMySQLBack     = "mysql_back" // MariaDB restarted and ready
	markSentBack      = "sentinels_back"
	markMasterGone    = "master_down"     // the Redis master was taken away
	markSecondGone    = "master_down_2"   // the promoted master was taken away too
	markPromotedAgain = "promoted_second" // … and the last node promoted
	markSlow          = "slow"            // every Redis node began its freeze cycle (redis-slow)
	markSlowEnd       = "slow_end"        // … and was thawed for good
	markOOM           = "oom"             // the Redis master began to refuse writes (redis-oom)
	markOOMEnd        = "oom_end"         // … and its settings were put back
	markFilled        = "filled:"         // + app: its journal volume is full (disk-full)
	markFullStop      = "full_stop:"      // + app: … and it was stopped, still full, to start on it
)

// Note records an event now, and under mark (if not "") as a mark.
func (s *Scene) Note(mark, format string, args ...any) {
	at := time.Since(s.Load.Start())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, Event{At: at, Text: fmt.Sprintf(format, args...)})
	if mark != "" {
		s.marks[mark] = at
	}
}

// takeMaster records the current master as the one this fault takes away.
func (s *Scene) takeMaster(ctx context.Context) (*stack.Proc, error) {
	m, err := s.Stack.Master(ctx)
	if err != nil {
		return nil, err
	}
	s.master = m
	return m, nil
}

// watchPromotion waits in the background, until ctx (the fault's) ends,
// for the sentinels to name a master other than old, notes the moment
// under mark, and returns the wait, for its answer. The run waits for
// every watch before it reports, so the last note is in.
func (s *Scene) watchPromotion(ctx context.Context, old *stack.Proc, mark string) func() (*stack.Proc, error) {
	wait := sync.OnceValues(func() (*stack.Proc, error) {
		p, err := s.Stack.WaitMaster(ctx, old)
		if err != nil {
			s.Note("", "no promotion after %s: %v", old.Name, err)
		} else {
			s.Note(mark, "sentinels promoted %s; it reports role master", p.Name)
		}
		return p, err
	})
	s.watches.Go(func() { wait() })
	return wait
}

// takeMasterWith returns an Inject that takes the current master away
// with do, notes it under markMasterGone (format gets its name), and
// watches for its successor.
func takeMasterWith(format string, do func(*stack.Proc, context.Context) error) func(context.Context, *Scene) error {
	return func(ctx context.Context, s *Scene) error {
		m, err := s.takeMaster(ctx)
		if err != nil {
			return err
		}
		s.Note(markMasterGone, format, m.Name)
		if err := do(m, ctx); err != nil {
			return err
		}
		s.promotion = s.watchPromotion(ctx, m, markPromoted)
		return nil
	}
}

// healOldMaster returns a Heal that waits for the sentinels' promotion,
// then brings the old master back with fix and notes it (format gets the
// master's name). A healed master must not restart before the sentinels
// have named its successor: it would ask them who the master is and hear
// its own name. When no promotion comes, healAnyway says whether the old
// master is still brought back (a frozen or cut-off master must be, or it
// stays broken for the next scenario); the wait's error is returned
// either way.
func healOldMaster(healAnyway bool, fix func(*stack.Proc, context.Context) error, format string) func(context.Context, *Scene) error {
	return func(ctx context.Context, s *Scene) error {
		if s.master == nil {
			return errNotInjected
		}
		_, werr := s.waitPromotion()
		if werr != nil && !healAnyway {
			return werr
		}
		if err := fix(s.master, ctx); err != nil {
			return err
		}
		s.Note("", format, s.master.Name)
		return werr
	}
}

// noCtx adapts a process control that takes no context to the ones that
// do, for takeMasterWith and healOldMaster.
func noCtx(f func(*stack.Proc) error) func(*stack.Proc, context.Context) error {
	return func(p *stack.Proc, _ context.Context) error { return f(p) }
}

// errNotInjected is a heal's error when its fault never happened: the run
// heals the stack whole on its own afterwards.
var errNotInjected = errors.New("nothing to heal: the fault was not injected")

// waitPromotion waits for the promotion the fault is watching for.
func (s *Scene) waitPromotion() (*stack.Proc, error) {
	if s.promotion == nil {
		return nil, errNotInjected
	}
	return s.promotion()
}

// pause waits d, or until ctx ends: a step of a schedule (a fault's, the
// run's phases, a create's retries), not synchronisation.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// others returns procs, which it reuses, without those named in not.
func others(procs []*stack.Proc, not ...*stack.Proc) []*stack.Proc {
	return slices.DeleteFunc(procs, func(q *stack.Proc) bool {
		return slices.ContainsFunc(not, func(p *stack.Proc) bool { return p.Name == q.Name })
	})
}

// waitFor polls cond every 20 ms until it holds, limit passes or ctx ends.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return stack.Poll(ctx, 20*time.Millisecond, func(context.Context) error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

// ScenarioNamed returns the scenario called name.
func ScenarioNamed(name string) (Scenario, error) {
	var names []string
	for _, sc := range Scenarios() {
		if sc.Name == name {
			return sc, nil
		}
		names = append(names, sc.Name)
	}
	return Scenario{}, fmt.Errorf("no scenario %q; scenarios: %s", name, strings.Join(names, ", "))
}
