package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"shortener"
	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/store"
)

// TestGalera runs the store on a three-node MariaDB Galera cluster and
// checks what Galera changes (issue 32, docs/scaling.md): migrations run
// once when instances start through different nodes, click shipping is
// exactly once when two shippers commit through different nodes (where
// SELECT ... FOR UPDATE locks one node's row only) and when the node dies
// mid-commit, the writer moves off a killed, frozen or partitioned node,
// and a node ID lease cannot be taken through a node cut off from the
// primary component. The subtests share the cluster and run in order;
// each leaves it with three synced members.
func TestGalera(t *testing.T) {
	stacktest.RequireRoot(t) // partitions are iptables rules
	s := stacktest.StartGalera(t)
	nodes := s.MySQLNodes()
	addrs := s.MySQLAddrs()
	if len(nodes) != 3 {
		t.Fatalf("the Galera stack has %d MySQL nodes, want 3", len(nodes))
	}
	// order is addrs with node first first: how an instance that prefers
	// another node is configured.
	order := func(first int) []string {
		return append([]string{addrs[first]}, append(append([]string{}, addrs[:first]...), addrs[first+1:]...)...)
	}
	synced := func(t *testing.T) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := s.WaitSynced(ctx); err != nil {
			t.Fatalf("cluster not back to three synced members: %v", err)
		}
	}

	t.Run("migrate once through every node", func(t *testing.T) {
		dsn := stacktest.Database(t, s)
		errs := make([]error, len(addrs))
		var wg sync.WaitGroup
		for i := range addrs {
			wg.Go(func() { errs[i] = galeraStore(t, dsn, order(i)).Migrate(context.Background(), time.Minute) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("instance writing through %s: Migrate: %v", addrs[i], err)
			}
		}
		n, err := galeraStore(t, dsn, addrs).AppliedMigrations(context.Background())
		want, _ := store.Migrations()
		if err != nil || n != want {
			t.Errorf("schema_migrations has %d rows (%v), want %d: one per migration", n, err, want)
		}
	})

	t.Run("shipping through two nodes counts once", func(t *testing.T) {
		dsn := migratedDSN(t, s)
		a, b := galeraStore(t, dsn, order(0)), galeraStore(t, dsn, order(1))
		if a.Writer() == b.Writer() {
			t.Fatalf("both stores write through %s; the test needs two nodes", a.Writer())
		}
		link := newGaleraLink(t, a)
		const batches, perBatch = 20, 10
		applied := 0
		for seg := range batches {
			batch := clickBatch(link, int64(seg+1), perBatch)
			var wg sync.WaitGroup
			var got [2]bool
			for i, st := range []*store.Store{a, b} {
				wg.Go(func() { got[i] = shipUntilAnswered(t, st, batch) })
			}
			wg.Wait()
			if got[0] == got[1] {
				t.Errorf("segment %d: applied through %s %v, through %s %v; want exactly one", seg+1, a.Writer(), got[0], b.Writer(), got[1])
			}
			for _, g := range got {
				if g {
					applied++
				}
			}
		}
		total := clickTotal(t, a, link)
		if total != batches*perBatch || applied != batches {
			t.Errorf("%d clicks counted, %d batches applied; want %d and %d", total, applied, batches*perBatch, batches)
		}
		t.Logf("%d batches shipped by two instances through %s and %s: %d certification conflicts retried", batches, a.Writer(), b.Writer(), a.WriteRetries()+b.WriteRetries())
	})

	t.Run("a request in two journals shipped through two nodes counts once", func(t *testing.T) {
		// A journal restored from a backup holds clicks another journal
		// shipped too. Across nodes a row lock serialises nothing; what
		// makes one of the two batches run again is certification: both
		// change click_request_lock's row (and the same link's hour
		// counts, which alone would do: this subtest passes with the old
		// unchanged lock row too, so the row is defence in depth).
		dsn := migratedDSN(t, s)
		a, b := galeraStore(t, dsn, order(0)), galeraStore(t, dsn, order(1))
		link := newGaleraLink(t, a)
		const rounds, perBatch = 20, 10
		for r := range rounds {
			ba, bb := clickBatch(link, int64(r+1), perBatch), clickBatch(link, int64(r+1), perBatch)
			bb.Journal = ba.Journal + 1
			for i := range ba.Clicks {
				req := shortener.ClickRequest{At: link.CreatedAt.UnixMilli() + int64(r), ID: [16]byte{byte(r), byte(i), 1}}
				ba.Clicks[i].Request, bb.Clicks[i].Request = req, req
			}
			var wg sync.WaitGroup
			wg.Go(func() { shipUntilAnswered(t, a, ba) })
			wg.Go(func() { shipUntilAnswered(t, b, bb) })
			wg.Wait()
		}
		if total := clickTotal(t, a, link); total != rounds*perBatch {
			t.Errorf("%d clicks counted, want %d: each request once, though two journals through two nodes shipped it", total, rounds*perBatch)
		}
		t.Logf("%d rounds: %d writes retried", rounds, a.WriteRetries()+b.WriteRetries())
	})

	t.Run("folding through two nodes at once counts once", func(t *testing.T) {
		// A fold's range lock is one node's; what keeps two folds through
		// two nodes from both counting a pending click is certification:
		// both delete its row.
		dsn := migratedDSN(t, s)
		a, b := galeraStore(t, dsn, order(0)), galeraStore(t, dsn, order(1))
		at := time.Now().UTC().Add(-3 * time.Hour)
		const n = 300
		links := make([]shortener.Link, n)
		for i := range links {
			links[i] = shortener.Link{ID: int64(7000 + i), Code: fmt.Sprintf("gfold%d", i), URL: "https://example.com/g", Redirect: 302, CreatedAt: at}
		}
		if _, err := a.Import(context.Background(), links); err != nil {
			t.Fatal(err)
		}
		for seg := range 2 {
			batch := shortener.ClickBatch{Journal: 9, Node: 1, Segment: int64(seg + 1), From: 0, To: 1}
			for _, l := range links {
				batch.Clicks = append(batch.Clicks, shortener.Click{LinkID: l.ID, At: at}) // one a link: pending
			}
			shipUntilAnswered(t, a, batch)
		}
		var wg sync.WaitGroup
		for _, st := range []*store.Store{a, b} {
			wg.Go(func() {
				for try := 0; ; try++ {
					// As the instances' folders do: a fold that fails is
					// tried again.
					_, err := st.FoldClicks(context.Background(), time.Now())
					if err == nil {
						return
					}
					if try == 20 {
						t.Errorf("FoldClicks through %s: %v", st.Writer(), err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, l := range links {
			if total, err := a.ClickTotal(context.Background(), l.ID); err != nil || total != 2 {
				t.Fatalf("%s: %d clicks (%v), want 2", l.Code, total, err)
			}
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var pending int
		if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM click_pending").Scan(&pending); err != nil || pending != 0 {
			t.Errorf("%d clicks pending after both folds (%v)", pending, err)
		}
		t.Logf("two folds through %s and %s: %d writes retried", a.Writer(), b.Writer(), a.WriteRetries()+b.WriteRetries())
	})

	t.Run("an outbox read waits until its node has applied the cluster's writes", func(t *testing.T) {
		// Two instances writing through two nodes, as while they disagree
		// on the writer: a delete's invalidation committed through one is
		// in the other's next outbox read, because that read first waits
		// until its node has applied every write-set committed before it
		// (wsrep_sync_wait), which the node counts.
		dsn := migratedDSN(t, s)
		a, b := galeraStore(t, dsn, order(0)), galeraStore(t, dsn, order(1))
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Addr = addrs[1]
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		causalReads := func() int64 {
			var name string
			var n int64
			if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'wsrep_causal_reads'").Scan(&name, &n); err != nil {
				t.Fatalf("%s: wsrep_causal_reads: %v", addrs[1], err)
			}
			return n
		}
		const n = 20
		for i := range n {
			l := shortener.Link{ID: int64(8000 + i), Code: fmt.Sprintf("gout%d", i), URL: "https://example.com/g", Redirect: 302, CreatedAt: time.Now().UTC()}
			if err := a.Create(context.Background(), l); err != nil {
				t.Fatal(err)
			}
		}
		before := causalReads()
		for i := range n {
			code := fmt.Sprintf("gout%d", i)
			if err := a.Delete(context.Background(), code, time.Now()); err != nil {
				t.Fatalf("delete %s through %s: %v", code, a.Writer(), err)
			}
			pending, err := b.PendingInvalidations(context.Background())
			if err != nil {
				t.Fatalf("outbox read through %s: %v", b.Writer(), err)
			}
			if !slices.ContainsFunc(pending, func(inv shortener.Invalidation) bool { return inv.Code == code }) {
				t.Errorf("delete of %s committed through %s, then not in the outbox read through %s", code, a.Writer(), b.Writer())
			}
		}
		if waited := causalReads() - before; waited < n {
			t.Errorf("%s counted %d causal reads over %d outbox reads: the reads did not wait for the cluster's writes", addrs[1], waited, n)
		}
	})

	t.Run("a node dying mid-commit loses and doubles nothing", func(t *testing.T) {
		synced(t)
		dsn := migratedDSN(t, s)
		st := galeraStore(t, dsn, addrs)
		link := newGaleraLink(t, st)
		writer := nodes[0]
		if st.Writer() != writer.Addr() {
			t.Fatalf("writer %s, want %s", st.Writer(), writer.Addr())
		}
		// Batch 1 commits, but its answer is taken as lost. Batch 2 is
		// shipped with the writer frozen: its outcome is unknown to the
		// shipper (an error, or an answer from the next writer if the
		// probe moved first). The writer is then killed, and the shipper
		// sends both again through the next writer, as the clicks
		// shipper does after an error: each is counted once.
		b1, b2 := clickBatch(link, 1, 25), clickBatch(link, 2, 25)
		if _, _, _, err := st.ShipClicks(context.Background(), b1); err != nil {
			t.Fatal(err)
		}
		if err := writer.Stop(); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := st.ShipClicks(context.Background(), b2)
		t.Logf("batch 2 with %s frozen: %v", writer.Name, err)
		if err := writer.Kill(); err != nil {
			t.Fatal(err)
		}
		if shipUntilAnswered(t, st, b1) {
			t.Error("batch 1, counted before the kill, was counted again")
		}
		shipUntilAnswered(t, st, b2)
		if got := clickTotal(t, st, link); got != 50 {
			t.Errorf("%d clicks counted after answers lost and a node killed, want 50", got)
		}
		if st.Writer() == writer.Addr() {
			t.Errorf("still writing through the killed %s", writer.Name)
		}
		restart(t, writer)
		synced(t)
	})

	for _, fault := range []struct {
		name   string
		inject func(p *stack.Proc) error
		heal   func(p *stack.Proc) error
	}{
		{"killed", (*stack.Proc).Kill, func(p *stack.Proc) error { return p.Restart(context.Background()) }},
		{"frozen", (*stack.Proc).Stop, (*stack.Proc).Cont},
		{"partitioned", func(p *stack.Proc) error { return p.Partition(context.Background()) }, func(p *stack.Proc) error { return p.Heal(context.Background()) }},
	} {
		t.Run("writer "+fault.name, func(t *testing.T) {
			synced(t)
			dsn := migratedDSN(t, s)
			st := galeraStore(t, dsn, addrs)
			writer := nodes[0]
			poll.Until(t, "the first node back as the writer", func() error {
				if st.Writer() != writer.Addr() {
					return fmt.Errorf("writer %s, want %s back", st.Writer(), writer.Addr())
				}
				return nil
			})
			if err := fault.inject(writer); err != nil {
				t.Fatal(err)
			}
			healed := false
			defer func() {
				if !healed {
					fault.heal(writer) //nolint:errcheck // the test has failed already
				}
			}()
			// Creates go on: each is retried until acknowledged, as a
			// client does, and every acknowledged one is read back.
			var made []string
			failed := 0
			for i := range 30 {
				l := shortener.Link{ID: int64(1000 + i), Code: fmt.Sprintf("gw%d", i), URL: "https://example.com/g", Redirect: 302, CreatedAt: time.Now()}
				for try := 0; ; try++ {
					err := st.Create(context.Background(), l)
					// Taken: an earlier try's commit landed though its
					// answer was an error; read back below, by ID too.
					if err == nil || errors.Is(err, shortener.ErrIDTaken) || errors.Is(err, shortener.ErrCodeTaken) {
						break
					}
					if try == 50 {
						t.Fatalf("create %s: still failing after 50 tries: %v", l.Code, err)
					}
					if failed < 5 {
						t.Logf("create %s, try %d: %v", l.Code, try+1, err)
					}
					failed++
					time.Sleep(100 * time.Millisecond) // a client's pause before it retries, not a wait for a condition
				}
				made = append(made, l.Code)
			}
			if st.Writer() == writer.Addr() {
				t.Errorf("still writing through the %s %s", fault.name, writer.Name)
			}
			for i, code := range made {
				if l, err := st.Link(context.Background(), code); err != nil || l.ID != int64(1000+i) {
					t.Errorf("acknowledged %s read back as ID %d, %v; want ID %d", code, l.ID, err, 1000+i)
				}
			}
			t.Logf("writer %s %s: 30 creates acknowledged, %d tries failed on the way; now writing through %s", writer.Name, fault.name, failed, st.Writer())
			healed = true
			if err := fault.heal(writer); err != nil {
				t.Fatal(err)
			}
			synced(t)
		})
	}

	t.Run("a minority node refuses the lease", func(t *testing.T) {
		synced(t)
		dsn := migratedDSN(t, s)
		cut := nodes[2]
		minority := galeraStore(t, dsn, []string{cut.Addr()})
		majority := galeraStore(t, dsn, addrs[:2])
		if err := cut.Partition(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer cut.Heal(context.Background()) //nolint:errcheck // healed below; this is for a failed test
		ctx := context.Background()
		// The cut-off node notices within the group's suspect timeout;
		// until then it may still take a claim and fail it at commit.
		poll.Until(t, "the cut-off node out of the primary component", func() error {
			st, err := s.GaleraStatus(ctx, cut)
			if err != nil || st.ClusterStatus == "Primary" {
				return fmt.Errorf("%s still in the primary component: %+v, %v", cut.Name, st, err)
			}
			return nil
		})
		if _, err := minority.ClaimNode(ctx, 7, "minority", 5*time.Second); err == nil {
			t.Fatalf("node 7 claimed through %s, which is cut off from the primary component", cut.Name)
		} else if !errors.Is(err, shortener.ErrUnavailable) {
			t.Errorf("claim through the minority node: %v, want ErrUnavailable", err)
		}
		if _, err := majority.ClaimNode(ctx, 7, "majority", 30*time.Second); err != nil {
			t.Fatalf("claim through the majority: %v", err)
		}
		if err := cut.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		synced(t)
		// Rejoined, the node has the majority's lease: a claim through it
		// is refused as held.
		var held *store.NodeHeldError
		poll.Until(t, "the lease held as seen through the rejoined node", func() error {
			_, err := minority.ClaimNode(ctx, 7, "minority", 5*time.Second)
			if !errors.As(err, &held) {
				return fmt.Errorf("claim through the rejoined node: %v, want NodeHeldError", err)
			}
			return nil
		})
	})
}

// galeraStore opens a store on the cluster's nodes, writing through the
// first healthy one of nodes.
func galeraStore(tb testing.TB, dsn string, nodes []string) *store.Store {
	tb.Helper()
	return openStoreWith(tb, store.Config{DSN: dsn, Nodes: nodes, MaxOpen: 8, QueryTimeout: 2 * time.Second, DialTimeout: 500 * time.Millisecond})
}

// migratedDSN is a migrated database of the test's own on the cluster.
func migratedDSN(tb testing.TB, s *stack.Stack) string {
	tb.Helper()
	dsn := stacktest.Database(tb, s)
	if err := galeraStore(tb, dsn, s.MySQLAddrs()).Migrate(context.Background(), time.Minute); err != nil {
		tb.Fatal(err)
	}
	return dsn
}

func newGaleraLink(tb testing.TB, st *store.Store) shortener.Link {
	tb.Helper()
	l := shortener.Link{ID: 77, Code: "galera77", URL: "https://example.com/g", Redirect: 302, CreatedAt: time.Now().UTC()}
	if err := st.Create(context.Background(), l); err != nil {
		tb.Fatal(err)
	}
	return l
}

// clickBatch is segment seg of journal 5, n clicks on l from position 0.
func clickBatch(l shortener.Link, seg int64, n int) shortener.ClickBatch {
	b := shortener.ClickBatch{Journal: 5, Node: 1, Segment: seg, From: 0, To: int64(n) * 10}
	at := l.CreatedAt.Truncate(time.Hour)
	for range n {
		b.Clicks = append(b.Clicks, shortener.Click{LinkID: l.ID, At: at})
	}
	return b
}

// shipUntilAnswered ships b until the store gives an answer rather than
// an error, as the clicks shipper does, and says whether this call
// applied it.
func shipUntilAnswered(tb testing.TB, st *store.Store, b shortener.ClickBatch) bool {
	tb.Helper()
	for try := 0; ; try++ {
		applied, pos, _, err := st.ShipClicks(context.Background(), b)
		if err == nil {
			if pos != b.To {
				tb.Errorf("segment %d recorded through %d, want %d", b.Segment, pos, b.To)
			}
			return applied
		}
		if try == 100 {
			tb.Fatalf("ShipClicks still failing after 100 tries: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the shipper's pause before it retries, not a wait for a condition
	}
}

func clickTotal(tb testing.TB, st *store.Store, l shortener.Link) int64 {
	tb.Helper()
	at := l.CreatedAt.Truncate(time.Hour)
	stats, err := st.ClickStats(context.Background(), l.ID, at.Add(-time.Hour), at.Add(2*time.Hour), false, 10)
	if err != nil {
		tb.Fatal(err)
	}
	return stats.Total
}

func restart(tb testing.TB, p *stack.Proc) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Restart(ctx); err != nil {
		tb.Fatalf("restart %s: %v", p.Name, err)
	}
}
