package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"shortener/internal/stack"
)

// The Galera rows (issue 32) break one node of a three-node MariaDB
// Galera cluster, the one the apps write through, under the full load:
// redirects, creates, clicks, deletes and edits. They run only on a
// Galera stack (SHORTENER_STACK_MYSQL=galera make up), where the apps
// know every node (SHORTENER_MYSQL_NODES) and move their writes off a
// node that dies, freezes or leaves the primary component (store's
// cluster.go).
const galeraExpect = "redirects 0 failed; creates 0 failed (a create may wait one failover, retried with its Idempotency-Key); " +
	"clicks 0 lost, 0 double; deletes and edits hold; every app moves its writes to another node; " +
	"the node rejoins and the cluster reports three synced members within a minute"

// Marks of the Galera rows.
const (
	markNodeGone    = "mysql_node_gone"    // the writer node was taken away
	markNodeEvicted = "mysql_node_evicted" // … and the others formed a primary component without it
	markNodeMoved   = "mysql_writer:"      // + app: the app writes through another node
	markNodeHeal    = "mysql_node_heal"    // the node was restarted, thawed or healed
	markNodeBack    = "mysql_node_synced"  // … and the cluster has three synced members again
)

// keyWriter + node address: 1 when the app writes through that node
// (shortener_mysql_writer{node}).
const keyWriter = "mysql_writer/"

// rejoinWithin is how soon after its restart (or heal) the node must be
// back as the third synced member.
const rejoinWithin = time.Minute

// writerMoveLimit is how soon after the fault every app must write
// through another node: the apps' connect deadline (a probe's, 500 ms by
// default, SHORTENER_MYSQL_DIAL_TIMEOUT), the probe period (250 ms) and
// this run's poll of their metrics (50 ms, and the scrape itself).
const writerMoveLimit = 500*time.Millisecond + 250*time.Millisecond + 100*time.Millisecond

func galeraScenarios() []Scenario {
	// A killed or frozen node is seen by the apps' probes at once (a
	// refused connection, a probe past its deadline); a node cut off from
	// its peers still calls itself Synced and Primary until the group
	// evicts it (about 4 s: the stack's 3 s suspect timeout), and every
	// commit of the cluster waits until then anyway, so that row times
	// the move from the eviction.
	checks := []Measure{WritesMoved(markNodeGone), Rejoined}
	return []Scenario{
		{
			Name:   "mysql-node-kill",
			Fault:  "Galera: the apps' writer node SIGKILL",
			Expect: galeraExpect,
			Does: "SIGKILL the MariaDB Galera node the apps write through; the other two stay a primary component and the apps move their writes to the next node; " +
				"at the end of the fault phase restart it (it rejoins by IST) and wait for three synced members",
			Needs:  NeedsGalera,
			Inject: takeWriterWith("SIGKILL %s (the apps' writer)", noCtx((*stack.Proc).Kill)),
			Heal:   healWriter("restarted %s", (*stack.Proc).Restart),
			Checks: checks,
		},
		{
			Name:   "mysql-node-freeze",
			Fault:  "Galera: the apps' writer node frozen (SIGSTOP)",
			Expect: galeraExpect,
			Does: "SIGSTOP the Galera node the apps write through (its sockets stay open, nothing answers; the group waits for it until it is evicted); " +
				"the apps' probes time out and they move their writes; at the end of the fault phase SIGCONT it and wait for three synced members",
			Needs:  NeedsGalera,
			Inject: takeWriterWith("SIGSTOP %s (the apps' writer)", noCtx((*stack.Proc).Stop)),
			Heal:   healWriter("SIGCONT %s", noCtx((*stack.Proc).Cont)),
			Checks: checks,
		},
		{
			Name:   "mysql-node-partition",
			Fault:  "Galera: the apps' writer node cut off from its peers",
			Expect: galeraExpect,
			Does: "drop every packet between the Galera node the apps write through and its two peers (its SQL port stays reachable); " +
				"it leaves the primary component and refuses queries (1047), and the apps move their writes; at the end of the fault phase remove the rules and wait for three synced members",
			Needs:  NeedsGalera,
			Inject: takeWriterWith("cut %s (the apps' writer) off from its peers", (*stack.Proc).Partition),
			Heal:   healWriter("healed %s", (*stack.Proc).Heal),
			Checks: []Measure{WritesMoved(markNodeEvicted), Rejoined},
		},
	}
}

// takeWriterWith finds the node the apps write through, records it as
// the one this fault takes, applies f to it and waits until every app
// writes through another node.
func takeWriterWith(format string, f func(*stack.Proc, context.Context) error) func(context.Context, *Scene) error {
	return func(ctx context.Context, s *Scene) error {
		w, err := s.writer(ctx)
		if err != nil {
			return err
		}
		s.mysqlNode = w
		s.Note(markNodeGone, format, w.Name)
		if err := f(w, ctx); err != nil {
			return err
		}
		var evicted error
		var wg sync.WaitGroup
		wg.Go(func() { evicted = s.awaitEvicted(ctx, w) })
		moved := s.awaitWritesMoved(ctx, w)
		wg.Wait()
		return errors.Join(moved, evicted)
	}
}

// awaitEvicted notes when the other nodes formed a primary component
// without w.
func (s *Scene) awaitEvicted(ctx context.Context, w *stack.Proc) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		for _, p := range s.Stack.MySQLNodes() {
			if p == w {
				continue
			}
			if g, err := s.Stack.GaleraStatus(ctx, p); err == nil && g.Primary() && g.ClusterSize < len(s.Stack.MySQLNodes()) {
				s.Note(markNodeEvicted, "%s and the other node formed a primary component of %d without %s", p.Name, g.ClusterSize, w.Name)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the other nodes never evicted %s: %w", w.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// healWriter undoes the fault on the node takeWriterWith took and waits
// until the cluster has three synced members.
func healWriter(format string, f func(*stack.Proc, context.Context) error) func(context.Context, *Scene) error {
	return func(ctx context.Context, s *Scene) error {
		w := s.mysqlNode
		if w == nil {
			return errNotInjected
		}
		s.Note(markNodeHeal, format, w.Name)
		begin := time.Now()
		if err := f(w, ctx); err != nil {
			return err
		}
		if err := s.awaitSynced(ctx, w); err != nil {
			return fmt.Errorf("wait for three synced members: %w", err)
		}
		s.Note(markNodeBack, "three synced members again, %s after the heal began", ms(time.Since(begin)))
		return nil
	}
}

// awaitSynced waits for three synced members. A node that exits on the
// way is restarted, once, as a supervisor would: a thawed or healed
// node whose missing write-sets are no longer in any donor's gcache
// needs a full state transfer, which it cannot take while it runs.
func (s *Scene) awaitSynced(ctx context.Context, w *stack.Proc) error {
	restarted := false
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.Stack.WaitSynced(sctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return err
		case !w.Running() && !restarted:
			s.Note("", "%s exited (its gap is past the donors' gcache: a full state transfer); restarted", w.Name)
			if err := w.Restart(ctx); err != nil {
				return err
			}
			restarted = true
		}
	}
}

// writer returns the node every app writes through, read from their
// metrics; an error if they disagree or none says.
func (s *Scene) writer(ctx context.Context) (*stack.Proc, error) {
	var addr string
	for _, a := range s.Stack.Apps() {
		w, err := appWriter(ctx, a)
		if err != nil {
			return nil, err
		}
		if addr != "" && w != addr {
			return nil, fmt.Errorf("the apps write through different nodes: %s and %s", addr, w)
		}
		addr = w
	}
	for _, p := range s.Stack.MySQLNodes() {
		if p.Addr() == addr {
			return p, nil
		}
	}
	return nil, fmt.Errorf("the apps write through %q, which is none of the stack's MySQL nodes", addr)
}

// awaitWritesMoved notes, per app, when it writes through a node other
// than w.
func (s *Scene) awaitWritesMoved(ctx context.Context, w *stack.Proc) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pending := s.Stack.Apps()
	for len(pending) > 0 {
		var left []*stack.Proc
		for _, a := range pending {
			now, err := appWriter(ctx, a)
			if err != nil || now == w.Addr() {
				left = append(left, a)
				continue
			}
			s.Note(markNodeMoved+a.Name, "%s writes through %s", a.Name, now)
		}
		pending = left
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apps still writing through %s: %w", w.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

var writerClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// appWriter is the node app a writes through, from its /metrics.
func appWriter(ctx context.Context, a *stack.Proc) (string, error) {
	m, err := Scrape(ctx, writerClient, "http://"+a.Addr())
	if err != nil {
		return "", err
	}
	var w string
	m.each("shortener_mysql_writer", func(l model.Metric, v float64) {
		if v == 1 {
			w = string(l["node"])
		}
	})
	if w == "" {
		return "", errors.New(a.Name + " reports no MySQL writer (shortener_mysql_writer): not started with SHORTENER_MYSQL_NODES?")
	}
	return w, nil
}

// WritesMoved reports how long after the mark from (the fault, or the
// eviction) each app wrote through another node: the issue's "within one
// connect deadline", a timing check. Either way the eviction's time is
// reported too.
func WritesMoved(from string) Measure {
	return func(r *Run) []Check {
		ref, ok := r.Marks[from]
		if !ok {
			return nil
		}
		var checks []Check
		if gone, ok := r.Marks[markNodeGone]; ok {
			got := "not seen"
			if ev, ok := r.Marks[markNodeEvicted]; ok {
				got = ms(ev - gone)
			}
			checks = append(checks, Check{ID: "mysql.evicted", What: "from the fault to the other nodes' primary component without the node",
				Want: "reported", Got: got, OK: true})
		}
		what := map[string]string{markNodeGone: "the fault", markNodeEvicted: "the eviction"}[from]
		for _, app := range r.Apps {
			at, ok := r.Marks[markNodeMoved+app]
			got := "never"
			if ok {
				got = ms(at - ref)
			}
			checks = append(checks, Check{ID: "mysql.writer." + app, What: app + ": writes moved to another node after " + what,
				Want: "≤ " + ms(writerMoveLimit) + " (a connect deadline, a probe period, this poll)", Got: got,
				OK: ok && at-ref <= writerMoveLimit, Required: true, Timing: ok})
		}
		return checks
	}
}

// Rejoined checks that the node was a synced member again within
// rejoinWithin of its restart or heal.
func Rejoined(r *Run) []Check {
	heal, ok1 := r.Marks[markNodeHeal]
	back, ok2 := r.Marks[markNodeBack]
	if !ok1 {
		return nil
	}
	got := "not synced"
	if ok2 {
		got = ms(back - heal)
	}
	return []Check{{ID: "mysql.rejoined", What: "from the node's restart or heal to three synced members", Want: "≤ " + ms(rejoinWithin),
		Got: got, OK: ok2 && back-heal <= rejoinWithin, Required: true, Timing: ok2}}
}
