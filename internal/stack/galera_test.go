package stack_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// galeraTimeout bounds the Galera test's waits: a rejoin by IST takes
// seconds, one by SST half a minute.
const galeraTimeout = 2 * time.Minute

// errNonPrimary is the error a Galera node outside a primary component
// answers a query with: ER_UNKNOWN_COM_ERROR, "WSREP has not yet
// prepared node for application use".
const errNonPrimary = 1047

func TestGalera(t *testing.T) {
	stacktest.RequireRoot(t) // the partition
	s := stacktest.StartGalera(t)
	ctx, cancel := context.WithTimeout(context.Background(), galeraTimeout)
	defer cancel()

	nodes := s.MySQLNodes()
	if len(nodes) != 3 || !s.Galera() || s.MySQL() != nodes[0] {
		t.Fatalf("nodes: got %v (galera %v, MySQL %v), want mysql-1..3 with MySQL the first", nodes, s.Galera(), s.MySQL())
	}
	for i, p := range nodes {
		if want := fmt.Sprintf("mysql-%d", i+1); p.Name != want || s.MySQLAddrs()[i] != p.Addr() {
			t.Fatalf("node %d: got %s (addrs %v), want %s at its address", i, p, s.MySQLAddrs(), want)
		}
	}
	requireMembers(t, ctx, s, nodes, 3)

	// Every node takes the application user's writes and sees the others'.
	dbs := make([]*sql.DB, len(nodes))
	for i, p := range nodes {
		dbs[i] = openNode(t, s, p)
	}
	mustExec(t, ctx, dbs[0], "CREATE TABLE t (id INT PRIMARY KEY, at VARCHAR(20))")
	mustExec(t, ctx, dbs[0], "INSERT INTO t VALUES (1, 'start')")
	waitRow(t, ctx, dbs[2], 1)

	// A killed node leaves a primary component of two, which writes on.
	one := nodes[0]
	begin := time.Now()
	if err := one.Kill(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, dbs[1], "INSERT INTO t VALUES (2, 'mysql-1 down')")
	t.Logf("kill: a commit on %s right after %s's SIGKILL took %v", nodes[1].Name, one.Name, time.Since(begin).Round(time.Millisecond))
	waitMembers(t, ctx, s, nodes[1:], 2)
	t.Logf("kill: two synced members %v after the SIGKILL", time.Since(begin).Round(time.Millisecond))

	// Restarted, it rejoins with what it missed, sent alone (IST): its
	// data files are the ones it had, where a full state transfer would
	// have replaced them with a donor's copy.
	before := inode(t, s, one)
	begin = time.Now()
	if err := one.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Since(begin)
	if err := s.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("rejoin: %s killed, restarted in %v, three synced members %v after Restart",
		one.Name, restarted.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	waitRow(t, ctx, dbs[0], 2)
	if after := inode(t, s, one); after != before {
		t.Errorf("%s's ibdata1 after Restart: inode %d, want %d: the restart took a full state transfer", one.Name, after, before)
	}

	// A node cut off from its peers leaves their primary component and
	// refuses queries on its SQL port, which stays reachable; the others
	// write on.
	three := nodes[2]
	begin = time.Now()
	if err := three.Partition(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, dbs[0], "INSERT INTO t VALUES (3, 'mysql-3 cut off')")
	t.Logf("partition: a commit on %s right after %s's Partition took %v", one.Name, three.Name, time.Since(begin).Round(time.Millisecond))
	poll.Until(t, three.Name+" to leave the primary component", func() error {
		g, err := s.GaleraStatus(ctx, three)
		if err != nil {
			return err
		}
		if g.Primary() || g.Ready {
			return fmt.Errorf("%s: %s, want non-Primary, not ready", three.Name, g)
		}
		return nil
	})
	var me *mysql.MySQLError
	if _, err := dbs[2].ExecContext(ctx, "SELECT COUNT(*) FROM t"); !errors.As(err, &me) || me.Number != errNonPrimary {
		t.Fatalf("query on partitioned %s: got %v, want error %d", three, err, errNonPrimary)
	}
	waitMembers(t, ctx, s, nodes[:2], 2)
	t.Logf("partition: %s refuses queries, two synced members %v after Partition", three.Name, time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	if err := three.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("heal: three synced members %v after %s's Heal", time.Since(begin).Round(time.Millisecond), three.Name)
	waitRow(t, ctx, dbs[2], 3)

	// A frozen node stalls the others' commits until they evict it.
	two := nodes[1]
	if err := two.Stop(); err != nil {
		t.Fatal(err)
	}
	begin = time.Now()
	mustExec(t, ctx, dbs[0], "INSERT INTO t VALUES (4, 'mysql-2 frozen')")
	t.Logf("freeze: a commit on %s with %s frozen took %v", one.Name, two.Name, time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	if err := two.Cont(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("thaw: three synced members %v after %s's SIGCONT", time.Since(begin).Round(time.Millisecond), two.Name)
	waitRow(t, ctx, dbs[1], 4)

	// With every node down, a node restarts only if it may bootstrap the
	// cluster without losing what another has: mysql-1, down while a row
	// was written, may not. StartMySQL starts the cluster from the most
	// advanced node, its position recovered after the SIGKILL, and the
	// others join it.
	if err := one.Kill(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, dbs[1], "INSERT INTO t VALUES (5, 'mysql-1 down again')")
	if err := stack.AtOnce(nodes[1:], (*stack.Proc).Kill); err != nil {
		t.Fatal(err)
	}
	if err := one.Restart(ctx); !errors.Is(err, stack.ErrBehind) {
		t.Fatalf("Restart of %s, behind the others, with every node down: got %v, want ErrBehind", one.Name, err)
	}
	begin = time.Now()
	if err := s.StartMySQL(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("crash: the killed cluster started again in %v", time.Since(begin).Round(time.Millisecond))
	requireMembers(t, ctx, s, nodes, 3)
	waitRow(t, ctx, dbs[0], 5)

	// Stopped together and started again on the same data (make down,
	// make up), with new ports, it bootstraps from the node Galera marked
	// safe, or the most advanced, and keeps every row.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	begin = time.Now()
	again, err := stack.Start(ctx, stack.Config{Dir: s.Dir(), Galera: true, KillWithParent: true, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	t.Logf("restart: the stopped cluster started again in %v", time.Since(begin).Round(time.Millisecond))
	requireMembers(t, ctx, again, again.MySQLNodes(), 3)
	for _, p := range again.MySQLNodes() {
		waitRow(t, ctx, openNode(t, again, p), 5)
	}
}

// inode is the inode number of node p's ibdata1.
func inode(tb testing.TB, s *stack.Stack, p *stack.Proc) uint64 {
	tb.Helper()
	fi, err := os.Stat(filepath.Join(s.Dir(), p.Name, "data", "ibdata1"))
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// requireMembers fails unless every one of nodes is a synced member of a
// primary component of size.
func requireMembers(tb testing.TB, ctx context.Context, s *stack.Stack, nodes []*stack.Proc, size int) {
	tb.Helper()
	for _, p := range nodes {
		g, err := s.GaleraStatus(ctx, p)
		if err != nil {
			tb.Fatal(err)
		}
		if !g.Synced() || g.ClusterSize != size || g.State != stack.GaleraSynced || g.StateComment != "Synced" {
			tb.Fatalf("%s: got %s (%+v), want Synced, Primary, cluster size %d", p, g, g, size)
		}
	}
}

// waitMembers waits until every one of nodes is a synced member of a
// primary component of size.
func waitMembers(tb testing.TB, ctx context.Context, s *stack.Stack, nodes []*stack.Proc, size int) {
	tb.Helper()
	poll.Until(tb, fmt.Sprintf("%d synced members", size), func() error {
		for _, p := range nodes {
			g, err := s.GaleraStatus(ctx, p)
			if err != nil {
				return err
			}
			if !g.Synced() || g.ClusterSize != size {
				return fmt.Errorf("%s: %s, want Synced, Primary, cluster size %d", p.Name, g, size)
			}
		}
		return nil
	})
}

// openNode opens the application user's database on node p.
func openNode(tb testing.TB, s *stack.Stack, p *stack.Proc) *sql.DB {
	tb.Helper()
	dsn := strings.Replace(s.MySQLDSN(), s.MySQL().Addr(), p.Addr(), 1) + "&timeout=2s&readTimeout=10s&writeTimeout=10s"
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustExec(tb testing.TB, ctx context.Context, db *sql.DB, q string) {
	tb.Helper()
	if _, err := db.ExecContext(ctx, q); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

// waitRow waits until db, one node, has row id of table t.
func waitRow(tb testing.TB, ctx context.Context, db *sql.DB, id int) {
	tb.Helper()
	poll.Until(tb, fmt.Sprintf("row %d", id), func() error {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE id = ?", id).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("row %d: not there", id)
		}
		return nil
	})
}

// testLog is a logger that writes to the test log.
func testLog(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(stacktest.LogWriter(tb), nil))
}
