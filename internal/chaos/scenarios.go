package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"shortener/internal/stack"
)

// freezeFor is how long freeze-app keeps the app stopped: a long GC pause,
// a stalled VM, a hung process.
const freezeFor = 10 * time.Second

// The resource and gray faults' schedules and sizes.
const (
	// redis-slow: every node frozen slowFrozen of every
	// slowFrozen+slowThawed, for slowFor; the sentinels' down-after (1 s)
	// is never reached.
	slowFor, slowFrozen, slowThawed = 12 * time.Second, 300 * time.Millisecond, 100 * time.Millisecond
	// redis-oom: how long the master refuses writes.
	oomFor = 10 * time.Second
	// disk-full: the journal volume's size, how long it stays full, and
	// the segment size app1 runs with on it, small so that a new segment
	// is due every few seconds and the full disk is met at once.
	journalVolume = 2 << 20
	fullFor       = 10 * time.Second
	smallSegments = "SHORTENER_CLICKS_SEGMENT_BYTES=65536"
	// journal-restore: how long after its copy the journal is put back.
	restoreAfter = 5 * time.Second
)

// corruptSpool is what state-corrupt writes over app1's trending spool:
// the first bytes of a spool, cut off as a power loss mid-write would.
const corruptSpool = `{"node":"app1","last_seq":12,"batches":[{"seq":3,"counts":[{"co`

// Scenarios returns every scenario in the order a full run takes them:
// the baseline first, as the yardstick, then MySQL, then the Galera rows
// (which run on a Galera stack alone: MatrixFor).
func Scenarios() []Scenario {
	masterChecks := func(within time.Duration) []Measure {
		return []Measure{Failover(markMasterGone, "the master was taken away"), BackOnRedis(markPromoted, keyFillsOK, within),
			MySQLBounded, AnsweredWithoutMySQL(0.95), BreakersClosed}
	}
	return append([]Scenario{
		{
			Name:   "baseline",
			Fault:  "none",
			Expect: "no request fails; the figures every other scenario is compared with",
			Does:   "nothing: the load runs through all four phases",
			Inject: func(context.Context, *Scene) error { return nil },
			Heal:   func(context.Context, *Scene) error { return nil },
		},
		{
			Name:   "kill-master",
			Fault:  "Redis master SIGKILL",
			Expect: "redirects 0 failed, back on Redis within 1 s of the new master; creates 0 failed, 0 lost",
			Does:   "SIGKILL the Redis master; wait for the sentinels to promote a replica; at the end of the fault phase restart the old master (it rejoins as a replica)",
			Inject: takeMasterWith("SIGKILL %s (master)", noCtx((*stack.Proc).Kill)),
			Heal:   healOldMaster(false, (*stack.Proc).Restart, "restarted %s; it rejoins as a replica"),
			Checks: masterChecks(time.Second),
		},
		{
			Name:    "edit-failover",
			Fault:   "Redis master SIGKILL while links are edited",
			Expect:  "every edit acknowledged (an edit is MySQL's, and may wait one failover); after each 200 no instance serves the old destination past 1 s; redirects 0 failed",
			Does:    "SIGKILL the Redis master while the edits account edits its links round after round through the fault phase, each edit right after every cache has served the link; restart the old master at the end of the fault phase",
			Inject:  takeMasterWith("SIGKILL %s (master)", noCtx((*stack.Proc).Kill)),
			Heal:    healOldMaster(false, (*stack.Proc).Restart, "restarted %s; it rejoins as a replica"),
			Checks:  masterChecks(time.Second),
			Require: []string{"edits.acknowledged"},
		},
		{
			Name:   "freeze-master",
			Fault:  "Redis master frozen (SIGSTOP)",
			Expect: "redirects 0 failed, no request waits more than one Redis deadline; creates 0 failed, 0 lost",
			Does:   "SIGSTOP the Redis master (its sockets stay open, nothing answers); wait for the promotion; at the end of the fault phase SIGCONT it (the sentinels demote it to a replica)",
			Inject: takeMasterWith("SIGSTOP %s (master)", noCtx((*stack.Proc).Stop)),
			Heal:   healOldMaster(true, noCtx((*stack.Proc).Cont), "SIGCONT %s"),
			Checks: append(masterChecks(0), WithinOneDeadline),
		},
		{
			Name:   "partition-master",
			Fault:  "Redis master black-holed",
			Expect: "redirects 0 failed, no request waits more than one Redis deadline; creates 0 failed, 0 lost",
			Does:   "drop every packet to the Redis master's port with iptables (connections hang, nothing is refused); wait for the promotion; at the end of the fault phase remove the rule",
			Inject: takeMasterWith("partition %s (master): its port drops every packet", (*stack.Proc).Partition),
			Heal:   healOldMaster(true, (*stack.Proc).Heal, "healed %s"),
			Checks: append(masterChecks(0), WithinOneDeadline),
		},
		{
			Name:   "messages-lost",
			Fault:  "invalidation messages silently lost",
			Expect: "after a delete's 204 or an edit's 200 no instance serves the old link past 1 s: each hears of it at its next read of the outbox; redirects 0 failed",
			Does: "drop every packet the Redis master sends to its pub/sub clients (the apps' invalidation subscriptions, CLIENT LIST TYPE pubsub) with iptables: " +
				"the connections stay open and hear nothing, and the apps notice nothing; the deletes and edits accounts run through the fault phase; " +
				"at its end check that every such connection still holds bytes the master could not deliver, then remove the rules",
			Inject: deafenSubscribers,
			Heal:   healSubscribers,
			Checks: []Measure{MessagesLost},
		},
		{
			Name:   "redis-slow",
			Fault:  "every Redis node slow (frozen 300 of 400 ms)",
			Expect: "redirects 0 failed, p99 within one Redis deadline of steady; creates 0 failed; clicks 0 lost, 0 double; trending Jaccard@10 ≥ 0.9",
			Does: "a gray failure: freeze all three redis-server nodes together (not the sentinels) 300 ms of every 400 ms for 12 s " +
				"(SIGSTOP, 300 ms, SIGCONT, 100 ms); they answer within the sentinels' down-after (1 s), so nothing is failed over; every node is thawed at the end, whatever happens",
			Inject: func(ctx context.Context, s *Scene) error {
				if _, err := s.takeMaster(ctx); err != nil {
					return err
				}
				nodes := s.Stack.Redis()
				s.Note(markSlow, "freeze %s together %s of every %s", procNames(nodes), ms(slowFrozen), ms(slowFrozen+slowThawed))
				cctx, cancel := context.WithTimeout(ctx, slowFor)
				defer cancel()
				n, err := stack.FreezeCycle(cctx, nodes, slowFrozen, slowThawed)
				s.Note(markSlowEnd, "thawed every node after %d cycles", n)
				return err
			},
			Heal: func(ctx context.Context, s *Scene) error {
				if s.master == nil {
					return errNotInjected
				}
				m, err := s.Stack.Master(ctx)
				if err == nil && m.Name != s.master.Name {
					s.Note(markPromoted, "the sentinels moved the master from %s to %s", s.master.Name, m.Name)
				}
				return err
			},
			Checks:  []Measure{RedirectP99NearSteady(markSlow, markSlowEnd), NoFailover, BreakersClosed},
			Require: []string{"trending.quality"},
		},
		{
			Name:  "redis-oom",
			Fault: "Redis master refuses writes (OOM)",
			Expect: "redirects 0 failed; deletes hold everywhere: a deleted code answers 404 or 410 through nginx and from each app, from its 204 on, during the fault and after; " +
				"creates 0 failed; clicks 0 lost, 0 double",
			Does: "on the Redis master, read maxmemory and maxmemory-policy (CONFIG GET), then CONFIG SET maxmemory-policy noeviction and maxmemory half its used_memory: " +
				"it refuses every write that needs memory (OOM) and still answers reads, PING and the sentinels; 10 s later put both settings back. " +
				"The deletes account deletes its links through the fault phase",
			Inject:  redisOOM,
			Heal:    func(context.Context, *Scene) error { return nil },
			Checks:  []Measure{RedisRefusedWrites(markOOM, markOOMEnd), BreakersClosed},
			Require: []string{"deletes.acknowledged", "deletes.at-once"},
		},
		{
			Name:   "redis-down",
			Fault:  "all Redis nodes down",
			Expect: "redirects 0 failed, MySQL load bounded by L1 + singleflight; creates 0 failed",
			Does:   "SIGKILL all three Redis nodes; at the end of the fault phase restart them, the master the sentinels name first (each starts empty: the stack removes the dump.rdb a replication sync leaves)",
			Inject: func(ctx context.Context, s *Scene) error {
				m, err := s.takeMaster(ctx)
				if err != nil {
					return err
				}
				var names []string
				for _, p := range append([]*stack.Proc{m}, others(s.Stack.Redis(), m)...) {
					if err := p.Kill(); err != nil {
						return err
					}
					names = append(names, p.Name)
				}
				s.Note("", "SIGKILL %s: no Redis node left", strings.Join(names, ", "))
				return nil
			},
			Heal: func(ctx context.Context, s *Scene) error {
				for _, p := range append([]*stack.Proc{s.master}, others(s.Stack.Redis(), s.master)...) {
					if err := p.Restart(ctx); err != nil {
						return err
					}
				}
				s.Note(markRedisBack, "restarted all Redis nodes, %s as master", s.master.Name)
				return nil
			},
			Checks: []Measure{BackOnRedis(markRedisBack, keyHits, 0), MySQLBounded, BreakersClosed},
		},
		{
			Name:   "sentinels-minority",
			Fault:  "2 of 3 sentinels down, then master killed",
			Expect: "redirects 0 failed (no failover possible: MySQL path until quorum returns); creates 0 failed; promotion within 5 s of the quorum's return",
			Does:   "SIGKILL two sentinels; 2 s later SIGKILL the Redis master (one sentinel cannot reach quorum, so nothing is promoted); at the end of the fault phase restart the sentinels, wait for the promotion, restart the old master",
			Inject: func(ctx context.Context, s *Scene) error {
				m, err := s.takeMaster(ctx)
				if err != nil {
					return err
				}
				sent := s.Stack.Sentinels()
				if err := stack.AtOnce(sent[1:], (*stack.Proc).Kill); err != nil {
					return err
				}
				s.Note("", "SIGKILL %s and %s: one sentinel of three left", sent[1].Name, sent[2].Name)
				if err := pause(ctx, 2*time.Second); err != nil {
					return err
				}
				s.Note(markMasterGone, "SIGKILL %s (master)", m.Name)
				return m.Kill()
			},
			Heal: func(ctx context.Context, s *Scene) error {
				if m, err := s.Stack.Master(ctx); err == nil {
					s.Note("", "before the sentinels return, the one left still names %s", m.Name)
				}
				sent := s.Stack.Sentinels()
				if err := stack.AtOnce(sent[1:], func(p *stack.Proc) error { return p.Restart(ctx) }); err != nil {
					return err
				}
				s.Note(markSentBack, "restarted %s and %s: quorum is back", sent[1].Name, sent[2].Name)
				s.promotion = s.watchPromotion(ctx, s.master, markPromoted)
				return healOldMaster(false, (*stack.Proc).Restart, "restarted %s; it rejoins as a replica")(ctx, s)
			},
			Checks: []Measure{Failover(markSentBack, "the sentinels were back (quorum restored)"), PromotedAfterQuorum(5 * time.Second),
				BackOnRedis(markPromoted, keyFillsOK, 0), BreakersClosed},
		},
		{
			Name:  "master-and-app",
			Fault: "master and an app SIGKILLed together, then the new master too",
			Expect: "0 failed GETs; creates 0 lost, 0 duplicated (Idempotency-Key); " +
				"a second failover onto the last node; back on Redis within 1 s of it",
			Does: "SIGKILL the Redis master and app1 at the same moment; wait for the promotion and for the last node to replicate from the new master; " +
				"SIGKILL the new master too; wait for the second promotion; restart app1; at the end of the fault phase restart both old masters (they rejoin as replicas)",
			Inject: masterAndApp,
			Heal: func(ctx context.Context, s *Scene) error {
				if _, err := s.waitPromotion(); err != nil {
					return err
				}
				for _, p := range slices.DeleteFunc(s.Stack.Redis(), (*stack.Proc).Running) { // the two killed
					if err := p.Restart(ctx); err != nil {
						return err
					}
					s.Note("", "restarted %s; it rejoins as a replica", p.Name)
				}
				return nil
			},
			Checks: []Measure{Failover(markMasterGone, "the master and app1 were killed"), SecondFailover,
				BackOnRedis(markPromotedAgain, keyFillsOK, time.Second), AppServes, BreakersClosed},
			Waive: []string{"creates"},
		},
		{
			Name:   "kill-app",
			Fault:  "app SIGKILL",
			Expect: "0 failed GETs (nginx retries); POST retried by the client with its Idempotency-Key: 0 lost, 0 duplicated",
			Does:   "SIGKILL app1; at the end of the fault phase restart it",
			Inject: func(ctx context.Context, s *Scene) error {
				a := s.Stack.Apps()[0]
				s.Note("", "SIGKILL %s", a.Name)
				return a.Kill()
			},
			Heal:   func(ctx context.Context, s *Scene) error { return s.restartApp(ctx, s.Stack.Apps()[0]) },
			Checks: []Measure{AppServes},
			Waive:  []string{"creates"},
		},
		{
			Name:   "freeze-app",
			Fault:  "app frozen (SIGSTOP 10 s)",
			Expect: "0 failed redirects, none slower than 1 s: nginx gives up on the frozen app after a redirect's read timeout and retries on the other; creates retried with their Idempotency-Key: 0 lost, 0 duplicated",
			Does:   "SIGSTOP app1 (the kernel still accepts connections for it; nothing answers); SIGCONT it 10 s later",
			Inject: func(ctx context.Context, s *Scene) error {
				a := s.Stack.Apps()[0]
				s.Note("", "SIGSTOP %s", a.Name)
				if err := a.Stop(); err != nil {
					return err
				}
				err := pause(ctx, freezeFor)
				if cerr := a.Cont(); cerr != nil {
					return errors.Join(err, cerr)
				}
				s.Note(markAppReady+a.Name, "SIGCONT %s after %s", a.Name, freezeFor)
				return err
			},
			Heal:   func(context.Context, *Scene) error { return nil },
			Checks: []Measure{SlowestRedirectBelow(time.Second), AppServes},
			Waive:  []string{"creates"},
		},
		{
			Name:   "term-app",
			Fault:  "app SIGTERM (rolling restart)",
			Expect: "redirects 0 failed; creates 0 failed, 0 lost",
			Does:   "rolling restart: SIGTERM app1, wait for it to drain and exit, restart it, wait until nginx sends it requests again; then the same for app2",
			Inject: func(ctx context.Context, s *Scene) error {
				for _, a := range s.Stack.Apps() {
					s.Note("", "SIGTERM %s", a.Name)
					if err := a.Term(); err != nil {
						return err
					}
					s.Note("", "%s drained and exited", a.Name)
					if err := s.restartApp(ctx, a); err != nil {
						return err
					}
					if err := s.servesAgain(ctx, a); err != nil {
						return err
					}
				}
				return nil
			},
			Heal:   func(context.Context, *Scene) error { return nil },
			Checks: []Measure{AppServes},
		},
		{
			Name:   "state-corrupt",
			Fault:  "local state file corrupt or empty at start",
			Expect: "the app starts (the file set aside, counted); trending recovers (Jaccard@10 ≥ 0.9); redirects 0 failed",
			Does:   "SIGKILL app1; write the cut-off first bytes of a spool over its trending spool (clicks/trending.spool); restart it",
			Inject: func(ctx context.Context, s *Scene) error {
				a := s.Stack.Apps()[0]
				s.Note("", "SIGKILL %s", a.Name)
				if err := a.Kill(); err != nil {
					return err
				}
				spool := filepath.Join(a.ClicksDir(), "trending.spool")
				if err := os.WriteFile(spool, []byte(corruptSpool), 0o644); err != nil {
					return err
				}
				s.Note("", "wrote %d bytes of cut-off JSON over %s's trending spool (clicks/trending.spool)", len(corruptSpool), a.Name)
				if err := s.restartApp(ctx, a); err != nil {
					return err
				}
				return s.servesAgain(ctx, a)
			},
			Heal:    func(context.Context, *Scene) error { return nil },
			Checks:  []Measure{AppServes, StateFileSetAside("trending_spool")},
			Require: []string{"trending.quality"},
		},
		{
			Name:   "disk-full",
			Fault:  "an app's journal volume full",
			Expect: "redirects 0 failed; the app stays up and starts on a full disk; creates 0 failed; clicks: served = stored + counted drops, 0 double; trending unaffected",
			Does: "SIGTERM app1 (it drains its journal and exits); mount a 2 MiB tmpfs at its clicks directory, its files moved onto it; restart it with 64 KiB journal segments; " +
				"fill the tmpfs with a file, so the journal can begin no new segment; 10 s later SIGTERM app1, fill what its drain freed, restart it on the full disk, " +
				"then remove the file (journaling resumes by itself). " +
				"At the end of the fault phase SIGTERM app1, move its files back to disk, unmount, and restart it as before",
			Inject: diskFull,
			Heal: func(ctx context.Context, s *Scene) error {
				a := s.Stack.Apps()[0]
				if on, err := a.ClicksMounted(); err != nil || !on {
					return err // nothing mounted: nothing to undo
				}
				if err := a.FreeClicks(); err != nil {
					return err
				}
				s.Note("", "SIGTERM %s", a.Name)
				if err := a.Term(); err != nil && !errors.Is(err, stack.ErrNotRunning) {
					return err
				}
				if err := a.UnmountClicks(); err != nil {
					return err
				}
				s.Note("", "unmounted the tmpfs: %s's journal is back on disk", a.Name)
				if err := s.restartApp(ctx, a); err != nil {
					return err
				}
				return s.servesAgain(ctx, a)
			},
			Checks: []Measure{ServesThroughout(markFilled, markFullStop), AppServes, ClicksExplainedByDrops("disk_full")},
			// Clicks a full journal drops are counted, not lost:
			// ClicksExplainedByDrops is this row's clicks check.
			Waive: []string{"clicks"},
		},
		{
			Name:   "journal-restore",
			Fault:  "an app's journal restored to an older copy",
			Expect: "redirects 0 failed; clicks 0 lost, 0 double",
			Does: "copy app1's clicks directory while it runs (as cp -a); 5 s later SIGTERM it (it drains its journal and exits); " +
				"replace its clicks directory with the copy; restart it",
			Inject: func(ctx context.Context, s *Scene) error {
				a := s.Stack.Apps()[0]
				if err := a.SnapshotClicks(); err != nil {
					return err
				}
				s.Note("", "copied %s's clicks directory while it runs", a.Name)
				if err := pause(ctx, restoreAfter); err != nil {
					return err
				}
				s.Note("", "SIGTERM %s", a.Name)
				if err := a.Term(); err != nil {
					return err
				}
				if err := a.RestoreClicks(); err != nil {
					return err
				}
				s.Note("", "%s drained and exited; its clicks directory replaced with the copy of %s before", a.Name, restoreAfter)
				if err := s.restartApp(ctx, a); err != nil {
					return err
				}
				return s.servesAgain(ctx, a)
			},
			Heal:   func(context.Context, *Scene) error { return nil },
			Checks: []Measure{AppServes},
		},
		foldMySQLKilled(),
		{
			Name:   "mysql-down",
			Fault:  "MySQL down",
			Expect: "redirects of cached links 0 failed, uncached fast 503; creates fast 503, nothing half-written",
			Does:   "SIGKILL MariaDB; at the end of the fault phase restart it (InnoDB recovers its log)",
			Inject: func(ctx context.Context, s *Scene) error {
				s.Note("", "SIGKILL mysql")
				return s.Stack.MySQL().Kill()
			},
			Heal: func(ctx context.Context, s *Scene) error {
				if err := s.Stack.MySQL().Restart(ctx); err != nil {
					return err
				}
				s.Note(markMySQLBack, "restarted mysql; it answers")
				return nil
			},
			Checks: []Measure{MySQLOutage},
			// docs/design.md expects creates and unknown codes to get 503s.
			Waive: []string{"creates", "misses"},
			Needs: NeedsSingle,
		},
	}, galeraScenarios()...)
}

// masterAndApp injects the design card's own chaos run, as the
// master-and-app scenario's Does lists its steps; app1 is restarted after
// the second promotion, as a supervisor would.
func masterAndApp(ctx context.Context, s *Scene) error {
	m1, err := s.takeMaster(ctx)
	if err != nil {
		return err
	}
	app := s.Stack.Apps()[0]
	s.Note(markMasterGone, "SIGKILL %s (master) and %s at the same moment", m1.Name, app.Name)
	if err := stack.AtOnce([]*stack.Proc{m1, app}, (*stack.Proc).Kill); err != nil {
		return err
	}
	m2, err := s.watchPromotion(ctx, m1, markPromoted)()
	if err != nil {
		return err
	}
	// The last node is a candidate only once it replicates from the new
	// master, and a second failover can start only once every sentinel
	// has ended the first: killing the new master earlier leaves the
	// sentinels no replica to promote, or split between two masters'
	// elections (seen: 15 s of -failover-abort-not-elected). The
	// sentinels may also move the master once more on their own: with
	// down-after at 1 s, one of them can take the fresh master's first
	// late PONG for a failure and fail it over again (run
	// 20261204T104034: redis-2, then redis-3 1.2 s later with no kill
	// between; redis/redis#8607). The second kill goes to the master they
	// settle on, and a promotion nobody asked for is noted.
	var last *stack.Proc
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m, err := s.Stack.WaitSettled(pctx, m1, func(ctx context.Context, m *stack.Proc) error {
		last = others(s.Stack.Redis(), m1, m)[0]
		return stack.ReplicaOf(ctx, last, m)
	})
	if err != nil {
		return err
	}
	if m.Name != m2.Name {
		s.Note("", "sentinels moved the master from %s to %s with no kill between: a failover nobody asked for", m2.Name, m.Name)
		m2 = m
	}
	s.Note("", "%s replicates from %s; every sentinel has %s as master, no failover in progress", last.Name, m2.Name, m2.Name)
	s.Note(markSecondGone, "SIGKILL %s (the promoted master): only %s is left", m2.Name, last.Name)
	if err := m2.Kill(); err != nil {
		return err
	}
	s.promotion = s.watchPromotion(ctx, m2, markPromotedAgain)
	if _, err := s.promotion(); err != nil {
		return err
	}
	return s.restartApp(ctx, app)
}

// restartApp restarts the app a and notes when it is ready again.
func (s *Scene) restartApp(ctx context.Context, a *stack.Proc) error {
	if err := a.Restart(ctx); err != nil {
		return err
	}
	s.Note(markAppReady+a.Name, "restarted %s; it answers /readyz", a.Name)
	return nil
}

// servesAgain waits until the restarted app a answers a request of the
// load through nginx, and notes it.
func (s *Scene) servesAgain(ctx context.Context, a *stack.Proc) error {
	ready := time.Now()
	if err := waitFor(ctx, 30*time.Second, func() bool { return s.Load.LastServed(a.Name).After(ready) }); err != nil {
		return fmt.Errorf("%s never served through nginx after its restart: %w", a.Name, err)
	}
	s.Note("", "%s serves through nginx again", a.Name)
	return nil
}

// redisOOM makes the Redis master refuse writes for oomFor, as the
// redis-oom scenario's Does says, and puts its settings back whatever
// happens, even when ctx ends: a master left refusing writes would break
// every later scenario.
func redisOOM(ctx context.Context, s *Scene) error {
	m, err := s.takeMaster(ctx)
	if err != nil {
		return err
	}
	params := []string{"maxmemory", "maxmemory-policy"}
	orig := map[string]string{}
	for _, k := range params {
		if orig[k], err = m.ConfigGet(ctx, k); err != nil {
			return err
		}
	}
	used, err := m.UsedMemory(ctx)
	if err != nil {
		return err
	}
	restore := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		var errs []error
		for _, k := range slices.Backward(params) {
			errs = append(errs, m.ConfigSet(rctx, k, orig[k]))
		}
		return errors.Join(errs...)
	}
	limit := strconv.FormatInt(max(used/2, 1), 10)
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", limit}} {
		if err := m.ConfigSet(ctx, kv[0], kv[1]); err != nil {
			return errors.Join(err, restore())
		}
	}
	s.Note(markOOM, "CONFIG SET maxmemory-policy noeviction, maxmemory %s (used_memory %d) on %s (master): it refuses writes", limit, used, m.Name)
	err = pause(ctx, oomFor)
	if rerr := restore(); rerr != nil {
		return errors.Join(err, rerr)
	}
	s.Note(markOOMEnd, "put back maxmemory %s and maxmemory-policy %s on %s", orig["maxmemory"], orig["maxmemory-policy"], m.Name)
	return err
}

// diskFull fills app1's journal volume, as the disk-full scenario's Does
// says; its Heal puts the app back on disk.
func diskFull(ctx context.Context, s *Scene) error {
	a := s.Stack.Apps()[0]
	s.Note("", "SIGTERM %s", a.Name)
	if err := a.Term(); err != nil {
		return err
	}
	if err := a.MountClicks(journalVolume); err != nil {
		return err
	}
	s.Note("", "%s drained and exited; a %d MiB tmpfs is mounted at its clicks directory, its files moved onto it", a.Name, journalVolume>>20)
	if err := a.RestartWith(ctx, smallSegments); err != nil {
		return err
	}
	s.Note(markAppReady+a.Name, "restarted %s with %s; it answers /readyz", a.Name, smallSegments)
	if err := s.servesAgain(ctx, a); err != nil {
		return err
	}
	n, err := a.FillClicks()
	if err != nil {
		return err
	}
	s.Note(markFilled+a.Name, "filled the tmpfs (%d KiB): %s's journal can begin no new segment", n>>10, a.Name)
	if err := pause(ctx, fullFor); err != nil {
		return err
	}
	// docs/design.md's row also says the app starts on a full disk.
	s.Note(markFullStop+a.Name, "SIGTERM %s on the full disk", a.Name)
	if err := a.Term(); err != nil {
		return err
	}
	if n, err = a.FillClicks(); err != nil { // what its drain freed
		return err
	}
	if err := a.RestartWith(ctx, smallSegments); err != nil {
		return err
	}
	s.Note(markAppReady+a.Name, "%s drained and exited; the tmpfs filled again (%d KiB); restarted on the full disk, it answers /readyz", a.Name, n>>10)
	if err := s.servesAgain(ctx, a); err != nil {
		return err
	}
	if err := a.FreeClicks(); err != nil {
		return err
	}
	s.Note("", "removed the filler: the journal may begin segments again")
	return nil
}

// procNames lists the processes' names.
func procNames(procs []*stack.Proc) string {
	var out []string
	for _, p := range procs {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}
