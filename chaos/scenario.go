package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"shortener/stack"
)

// What a scenario breaks, which decides the figures its report computes
// and the checks its verdict makes.
const (
	targetNone   = "none"
	targetMaster = "redis-master" // the master fails over to a replica
	targetRedis  = "redis-all"    // no Redis at all for a while
	targetApp    = "app"
	targetMySQL  = "mysql"
)

// Scenario is one fault of DESIGN.md's failure table (or none, for the
// baseline): what it does to the stack at the start of the fault phase,
// and how it puts things back at its end.
type Scenario struct {
	// Name is what -scenario takes: "kill-master", …
	Name string
	// Fault is the row of DESIGN.md's failure table it exercises.
	Fault string
	// Expect is what that row promises, in its words.
	Expect string
	// Does says what the run does, step by step, for the report.
	Does   string
	target string
	inject func(ctx context.Context, f *faultRun) error
	heal   func(ctx context.Context, f *faultRun) error
}

// faultRun is a scenario's view of the run while it breaks and heals the
// stack: the stack, the load (to see an app serve again) and the timeline
// it writes its steps into.
type faultRun struct {
	s    *stack.Stack
	load *Load

	mu     sync.Mutex
	events []Event
	marks  map[string]time.Duration

	// The Redis master when the fault began, and the watch for its
	// successor, for the scenarios that take the master away.
	master   *stack.Proc
	promoted chan struct{} // closed when the watch ends
	newName  string
	watchErr error
}

// Event is a step of a run, at an offset from the start of the load.
type Event struct {
	At   time.Duration `json:"at_ns"`
	Text string        `json:"text"`
}

// Names of marks: moments a scenario records for the report to measure
// from.
const (
	markPromoted   = "promoted"   // the sentinels named a new master that reports role master
	markRedisBack  = "redis_back" // Redis is available again: the moment "back on Redis" is timed from
	markAppReady   = "ready:"     // + app: the restarted app answers /readyz
	markMySQLBack  = "mysql_back" // MariaDB restarted and ready
	markSentBack   = "sentinels_back"
	markMasterGone = "master_down" // the Redis master was taken away
)

// note records an event now, and under name (if not "") as a mark.
func (f *faultRun) note(name, format string, args ...any) {
	at := time.Since(f.load.Start())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, Event{At: at, Text: fmt.Sprintf(format, args...)})
	if name != "" {
		f.marks[name] = at
	}
}

// takeMaster records the current master as the one this fault takes away.
func (f *faultRun) takeMaster(ctx context.Context) (*stack.Proc, error) {
	m, err := f.s.Master(ctx)
	if err != nil {
		return nil, err
	}
	f.master = m
	return m, nil
}

// watchPromotion waits in the background for the sentinels to name a
// master other than f.master, and marks the moment.
func (f *faultRun) watchPromotion(ctx context.Context) {
	f.promoted = make(chan struct{})
	go func() {
		defer close(f.promoted)
		m, err := f.s.WaitMaster(ctx, f.master)
		if err != nil {
			f.watchErr = err
			f.note("", "no promotion: %v", err)
			return
		}
		f.newName = m.Name
		f.note(markPromoted, "sentinels promoted %s; it reports role master", m.Name)
	}()
}

// waitPromotion waits for watchPromotion's answer. A healed master must
// not restart before the sentinels have named its successor: it would ask
// them who the master is and hear its own name.
func (f *faultRun) waitPromotion(ctx context.Context) error {
	select {
	case <-f.promoted:
		return f.watchErr
	case <-ctx.Done():
		return fmt.Errorf("wait promotion: %w", ctx.Err())
	}
}

// Scenarios returns every scenario in the order a full run takes them:
// the baseline first, as the yardstick, and MySQL last.
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name:   "baseline",
			Fault:  "none",
			Expect: "no request fails; the figures every other scenario is compared with",
			Does:   "nothing: the load runs through all four phases",
			target: targetNone,
			inject: func(context.Context, *faultRun) error { return nil },
			heal:   func(context.Context, *faultRun) error { return nil },
		},
		{
			Name:   "kill-master",
			Fault:  "Redis master SIGKILL",
			Expect: "redirects 0 failed, back on Redis within 1 s of the new master; creates 0 failed, 0 lost",
			Does:   "SIGKILL the Redis master; wait for the sentinels to promote a replica; at the end of the fault phase restart the old master (it rejoins as a replica)",
			target: targetMaster,
			inject: func(ctx context.Context, f *faultRun) error {
				m, err := f.takeMaster(ctx)
				if err != nil {
					return err
				}
				f.note(markMasterGone, "SIGKILL %s (master)", m.Name)
				if err := m.Kill(); err != nil {
					return err
				}
				f.watchPromotion(ctx)
				return nil
			},
			heal: func(ctx context.Context, f *faultRun) error {
				return f.healOldMaster(ctx, false, f.master.Restart, "restarted %s; it rejoins as a replica")
			},
		},
		{
			Name:   "freeze-master",
			Fault:  "Redis master frozen (SIGSTOP)",
			Expect: "redirects 0 failed, no request waits more than one Redis deadline; creates 0 failed, 0 lost",
			Does:   "SIGSTOP the Redis master (its sockets stay open, nothing answers); wait for the promotion; at the end of the fault phase SIGCONT it (the sentinels demote it to a replica)",
			target: targetMaster,
			inject: func(ctx context.Context, f *faultRun) error {
				m, err := f.takeMaster(ctx)
				if err != nil {
					return err
				}
				f.note(markMasterGone, "SIGSTOP %s (master)", m.Name)
				if err := m.Stop(); err != nil {
					return err
				}
				f.watchPromotion(ctx)
				return nil
			},
			heal: func(ctx context.Context, f *faultRun) error {
				return f.healOldMaster(ctx, true, func(context.Context) error { return f.master.Cont() }, "SIGCONT %s")
			},
		},
		{
			Name:   "partition-master",
			Fault:  "Redis master black-holed",
			Expect: "redirects 0 failed, no request waits more than one Redis deadline; creates 0 failed, 0 lost",
			Does:   "drop every packet to the Redis master's port with iptables (connections hang, nothing is refused); wait for the promotion; at the end of the fault phase remove the rule",
			target: targetMaster,
			inject: func(ctx context.Context, f *faultRun) error {
				m, err := f.takeMaster(ctx)
				if err != nil {
					return err
				}
				f.note(markMasterGone, "partition %s (master): its port drops every packet", m.Name)
				if err := m.Partition(ctx); err != nil {
					return err
				}
				f.watchPromotion(ctx)
				return nil
			},
			heal: func(ctx context.Context, f *faultRun) error {
				return f.healOldMaster(ctx, true, f.master.Heal, "healed %s")
			},
		},
		{
			Name:   "redis-down",
			Fault:  "all Redis nodes down",
			Expect: "redirects 0 failed, MySQL load bounded by L1 + singleflight; creates 0 failed",
			Does:   "SIGKILL all three Redis nodes; at the end of the fault phase restart them, the master the sentinels name first (each starts empty: the stack removes the dump.rdb a replication sync leaves)",
			target: targetRedis,
			inject: func(ctx context.Context, f *faultRun) error {
				m, err := f.takeMaster(ctx)
				if err != nil {
					return err
				}
				var names []string
				for _, p := range append([]*stack.Proc{m}, others(f.s.Redis(), m)...) {
					if err := p.Kill(); err != nil {
						return err
					}
					names = append(names, p.Name)
				}
				f.note("", "SIGKILL %s: no Redis node left", strings.Join(names, ", "))
				return nil
			},
			heal: func(ctx context.Context, f *faultRun) error {
				for _, p := range append([]*stack.Proc{f.master}, others(f.s.Redis(), f.master)...) {
					if err := p.Restart(ctx); err != nil {
						return err
					}
				}
				f.note(markRedisBack, "restarted all Redis nodes, %s as master", f.master.Name)
				return nil
			},
		},
		{
			Name:   "sentinels-minority",
			Fault:  "2 of 3 sentinels down, then master killed",
			Expect: "redirects 0 failed (no failover possible: MySQL path until quorum returns); creates 0 failed",
			Does:   "SIGKILL two sentinels; 2 s later SIGKILL the Redis master (one sentinel cannot reach quorum, so nothing is promoted); at the end of the fault phase restart the sentinels, wait for the promotion, restart the old master",
			target: targetMaster,
			inject: func(ctx context.Context, f *faultRun) error {
				m, err := f.takeMaster(ctx)
				if err != nil {
					return err
				}
				sent := f.s.Sentinels()
				for _, p := range sent[1:] {
					if err := p.Kill(); err != nil {
						return err
					}
				}
				f.note("", "SIGKILL %s and %s: one sentinel of three left", sent[1].Name, sent[2].Name)
				// A step of the fault schedule, not synchronisation: the
				// apps run a while on one sentinel before the master goes.
				select {
				case <-time.After(2 * time.Second):
				case <-ctx.Done():
					return ctx.Err()
				}
				f.note(markMasterGone, "SIGKILL %s (master)", m.Name)
				return m.Kill()
			},
			heal: func(ctx context.Context, f *faultRun) error {
				if m, err := f.s.Master(ctx); err == nil {
					f.note("", "before the sentinels return, the one left still names %s", m.Name)
				}
				sent := f.s.Sentinels()
				var wg sync.WaitGroup
				errs := make([]error, len(sent))
				for i, p := range sent[1:] {
					wg.Go(func() { errs[i] = p.Restart(ctx) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						return err
					}
				}
				f.note(markSentBack, "restarted %s and %s: quorum is back", sent[1].Name, sent[2].Name)
				f.watchPromotion(ctx)
				return f.healOldMaster(ctx, false, f.master.Restart, "restarted %s; it rejoins as a replica")
			},
		},
		{
			Name:   "kill-app",
			Fault:  "app SIGKILL",
			Expect: "0 failed GETs (nginx retries); POST retried by the client with its Idempotency-Key: 0 lost, 0 duplicated",
			Does:   "SIGKILL app1; at the end of the fault phase restart it",
			target: targetApp,
			inject: func(ctx context.Context, f *faultRun) error {
				a := f.s.Apps()[0]
				f.note("", "SIGKILL %s", a.Name)
				return a.Kill()
			},
			heal: func(ctx context.Context, f *faultRun) error {
				a := f.s.Apps()[0]
				if err := a.Restart(ctx); err != nil {
					return err
				}
				f.note(markAppReady+a.Name, "restarted %s; it answers /readyz", a.Name)
				return nil
			},
		},
		{
			Name:   "term-app",
			Fault:  "app SIGTERM (rolling restart)",
			Expect: "redirects 0 failed; creates 0 failed, 0 lost",
			Does:   "rolling restart: SIGTERM app1, wait for it to drain and exit, restart it, wait until nginx sends it requests again; then the same for app2",
			target: targetApp,
			inject: func(ctx context.Context, f *faultRun) error {
				for _, a := range f.s.Apps() {
					f.note("", "SIGTERM %s", a.Name)
					if err := a.Term(); err != nil {
						return err
					}
					f.note("", "%s drained and exited", a.Name)
					if err := a.Restart(ctx); err != nil {
						return err
					}
					f.note(markAppReady+a.Name, "restarted %s; it answers /readyz", a.Name)
					ready := time.Now()
					if err := waitFor(ctx, 30*time.Second, func() bool { return f.load.LastServed(a.Name).After(ready) }); err != nil {
						return fmt.Errorf("%s never served through nginx after its restart: %w", a.Name, err)
					}
					f.note("", "%s serves through nginx again", a.Name)
				}
				return nil
			},
			heal: func(context.Context, *faultRun) error { return nil },
		},
		{
			Name:   "mysql-down",
			Fault:  "MySQL down",
			Expect: "redirects of cached links 0 failed, uncached fast 503; creates fast 503, nothing half-written",
			Does:   "SIGKILL MariaDB; at the end of the fault phase restart it (InnoDB recovers its log)",
			target: targetMySQL,
			inject: func(ctx context.Context, f *faultRun) error {
				f.note("", "SIGKILL mysql")
				return f.s.MySQL().Kill()
			},
			heal: func(ctx context.Context, f *faultRun) error {
				if err := f.s.MySQL().Restart(ctx); err != nil {
					return err
				}
				f.note(markMySQLBack, "restarted mysql; it answers")
				return nil
			},
		},
	}
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

// others returns procs without p.
func others(procs []*stack.Proc, p *stack.Proc) []*stack.Proc {
	var out []*stack.Proc
	for _, q := range procs {
		if q.Name != p.Name {
			out = append(out, q)
		}
	}
	return out
}

// waitFor polls cond every 20 ms until it holds, limit passes or ctx ends.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// healOldMaster waits for the sentinels' promotion, takes it as the moment
// Redis is back, then brings the old master back with fix and notes it
// (format gets the master's name). When no promotion comes, healAnyway
// says whether the old master is still brought back (a frozen or cut-off
// master must be, or it stays broken for the next scenario); the wait's
// error is returned either way.
func (f *faultRun) healOldMaster(ctx context.Context, healAnyway bool, fix func(context.Context) error, format string) error {
	werr := f.waitPromotion(ctx)
	if werr != nil && !healAnyway {
		return werr
	}
	f.mu.Lock()
	f.marks[markRedisBack] = f.marks[markPromoted]
	f.mu.Unlock()
	if err := fix(ctx); err != nil {
		return err
	}
	f.note("", format, f.master.Name)
	return werr
}
