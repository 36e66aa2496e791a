package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
)

// A store on a MariaDB Galera cluster (Config.Nodes) writes through one
// node at a time: the writer. Galera certifies every transaction on every
// node, and two transactions that change the same row through different
// nodes both run to their COMMIT before one of them is aborted with a
// deadlock error (a certification conflict). One writer for every
// instance keeps that to the moment of a switch, when instances move at
// slightly different times; what is left is retried (retryConflicts, inTx).
//
// The writer is the first node, in Config.Nodes' order, that is healthy:
// every instance is given the same list, so every instance picks the
// same node. A probe asks each node every ProbeEvery, within the connect
// deadline, whether it is ready, Synced (or a donor) and in the primary
// component of the newest view the nodes report (wsrep_ready,
// wsrep_local_state, wsrep_cluster_status, wsrep_cluster_conf_id: see
// judge). A node that
// fails one probe, or refuses a connection, stops being the writer at
// once; a node that comes back becomes the writer again only after
// passing probes for riseAfter, so a flapping node does not drag every
// instance back and forth. A server that reports no wsrep status at all
// is a plain MariaDB and counts as healthy.
//
// A switch makes every pooled connection to the old writer invalid
// (nodeConn.IsValid), closes the idle ones at once, and lets the
// queries already running there finish or meet their deadline. There is
// no proxy to run, configure and fail over: the list of nodes is the
// whole configuration (docs/scaling.md says why not HAProxy).

// riseAfter is how long a node that failed must keep passing probes
// before it is preferred as the writer again.
const riseAfter = 2 * time.Second

// wsrep_local_state's values for a node that takes writes in step with
// the cluster: Synced (4), and Donor/Desynced (2), a synced node serving
// a state transfer to a rejoining one. A mariabackup transfer does not
// block the donor, and the donor is usually the writer itself, so
// moving off it would make every rejoin a switch. Joining (1) and Joined
// (3) are still catching up.
const (
	wsrepDonor  = 2
	wsrepSynced = 4
)

type cluster struct {
	nodes   []*clusterNode
	log     *slog.Logger
	timeout time.Duration // one connect (and probe) deadline
	every   time.Duration // probe period
	writer  atomic.Int32  // index into nodes
	gen     atomic.Uint64 // bumped by every switch
	drv     driver.Driver

	mu       sync.Mutex // serialises switches
	switches atomic.Uint64
	retries  *atomic.Uint64 // the store's (Store.again)
	// onSwitch runs after a switch, outside mu: the store closes its idle
	// connections.
	onSwitch func()

	stop chan struct{}
	done chan struct{}
}

type clusterNode struct {
	addr  string
	conn  driver.Connector
	probe *sql.DB // one connection, for the probe alone

	healthy atomic.Bool
	since   atomic.Int64 // UnixNano the node last turned healthy
	state   atomic.Value // string: what the last probe saw, for logs and metrics
}

// newCluster makes the connector of a store on nodes; dc is the DSN's
// configuration, whose address each node replaces.
func newCluster(dc *mysql.Config, nodes []string, timeout, every time.Duration, log *slog.Logger) (*cluster, error) {
	c := &cluster{log: log, timeout: timeout, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	for _, addr := range nodes {
		nc := dc.Clone()
		nc.Net, nc.Addr = "tcp", addr
		conn, err := mysql.NewConnector(nc)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", addr, err)
		}
		probe := sql.OpenDB(conn)
		probe.SetMaxOpenConns(1)
		probe.SetMaxIdleConns(1)
		n := &clusterNode{addr: addr, conn: conn, probe: probe}
		// Healthy until a probe or a connect says otherwise: the first
		// node is the writer from the start, as every instance agrees.
		n.healthy.Store(true)
		n.state.Store("not probed")
		c.nodes = append(c.nodes, n)
	}
	c.drv = c.nodes[0].conn.Driver()
	return c, nil
}

// Connect opens a connection to the writer. A node that refuses, or does
// not answer within the connect deadline, is marked down and the next
// healthy one tried, so a caller waits at most one deadline per dead
// node, not one per attempt.
func (c *cluster) Connect(ctx context.Context) (driver.Conn, error) {
	var errs []error
	for range c.nodes {
		i, gen := c.current()
		n := c.nodes[i]
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		conn, err := n.conn.Connect(cctx)
		cancel()
		if err == nil {
			return &nodeConn{conn: conn, c: c, node: i, gen: gen}, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", n.addr, err))
		var me *mysql.MySQLError
		if ctx.Err() != nil || errors.As(err, &me) {
			// The server answered (too many connections, say): it is
			// up, and moving every instance's writes off it would only
			// split them over two nodes. The probe judges it.
			break
		}
		c.markDown(i, "connect: "+err.Error())
	}
	return nil, fmt.Errorf("no MySQL node accepted a connection: %w", errors.Join(errs...))
}

// Driver is the MySQL driver.
func (c *cluster) Driver() driver.Driver { return c.drv }

// current returns the writer's index and the generation connections to
// it belong to.
func (c *cluster) current() (int, uint64) {
	for {
		gen := c.gen.Load()
		i := int(c.writer.Load())
		if c.gen.Load() == gen {
			return i, gen
		}
	}
}

// Writer returns the address of the node writes go to.
func (c *cluster) Writer() string { return c.nodes[c.writer.Load()].addr }

// markDown records that node i failed and moves the writer off it.
func (c *cluster) markDown(i int, why string) {
	n := c.nodes[i]
	if n.healthy.Swap(false) {
		c.log.Warn("MySQL node down", "node", n.addr, "why", why)
	}
	n.state.Store(why)
	c.elect()
}

// elect makes the first eligible node the writer: healthy, and healthy
// for riseAfter unless it is the writer now. With none eligible it takes
// the first healthy one, and with none healthy the next after the writer,
// so that Connect goes round every node.
func (c *cluster) elect() {
	c.mu.Lock()
	cur := int(c.writer.Load())
	pick := -1
	now := time.Now().UnixNano()
	for i, n := range c.nodes {
		if n.healthy.Load() && (i == cur || now-n.since.Load() >= int64(riseAfter)) {
			pick = i
			break
		}
	}
	if pick < 0 {
		for i, n := range c.nodes {
			if n.healthy.Load() {
				pick = i
				break
			}
		}
	}
	if pick < 0 {
		if c.nodes[cur].healthy.Load() {
			pick = cur
		} else {
			pick = (cur + 1) % len(c.nodes)
		}
	}
	if pick == cur {
		c.mu.Unlock()
		return
	}
	c.gen.Add(1)
	c.writer.Store(int32(pick))
	c.switches.Add(1)
	c.mu.Unlock()
	c.log.Warn("MySQL writer switched", "from", c.nodes[cur].addr, "to", c.nodes[pick].addr,
		"from_state", c.nodes[cur].state.Load())
	if c.onSwitch != nil {
		c.onSwitch()
	}
}

// run probes every node every c.every until close.
func (c *cluster) run() {
	defer close(c.done)
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		c.probeAll()
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
	}
}

// probeAll probes every node at once, judges each against the others
// (judge) and elects the writer.
func (c *cluster) probeAll() {
	seen := make([]nodeStatus, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			seen[i] = galeraState(ctx, n.probe)
		})
	}
	wg.Wait()
	for i, ok := range judge(seen) {
		c.setHealth(c.nodes[i], ok, seen[i].String())
	}
	c.elect()
}

// setHealth records a node's probe.
func (c *cluster) setHealth(n *clusterNode, healthy bool, state string) {
	n.state.Store(state)
	if healthy && !n.healthy.Load() {
		n.since.Store(time.Now().UnixNano())
		n.healthy.Store(true)
		c.log.Info("MySQL node up", "node", n.addr, "state", state)
	} else if !healthy && n.healthy.Swap(false) {
		c.log.Warn("MySQL node down", "node", n.addr, "why", state)
	}
}

// nodeStatus is what a probe read of a node.
type nodeStatus struct {
	err     error
	galera  bool   // the server reports wsrep status
	ready   bool   // wsrep_ready ON
	state   int    // wsrep_local_state
	primary bool   // wsrep_cluster_status Primary
	view    uint64 // wsrep_cluster_conf_id: the membership view it is in
}

func (st nodeStatus) String() string {
	switch {
	case st.err != nil:
		return "probe: " + st.err.Error()
	case !st.galera:
		return "no wsrep"
	}
	return fmt.Sprintf("ready=%v state=%d primary=%v view=%d", st.ready, st.state, st.primary, st.view)
}

// judge says which nodes may take writes: those that answered, and
// either are not Galera nodes or are ready, Synced (or a donor) and in
// the primary component of the newest view any of them reports. A node
// thawed after a freeze, or whose partition just healed, still reports
// itself Synced in the primary component of the view it was in, for a
// second or more, until it learns that the others went on without it:
// meanwhile it answers reads from a state that misses their writes (a
// chaos run saw deleted links served again through it). Its view is
// older than theirs, which is how it is told apart. (A node alone with
// an older view, its peers unreachable to the probe, is still taken: it
// may be all there is.)
func judge(seen []nodeStatus) []bool {
	var newest uint64
	for _, st := range seen {
		if st.err == nil && st.galera && st.primary {
			newest = max(newest, st.view)
		}
	}
	ok := make([]bool, len(seen))
	for i, st := range seen {
		ok[i] = st.err == nil && (!st.galera ||
			st.ready && st.primary && (st.state == wsrepSynced || st.state == wsrepDonor) && st.view == newest)
	}
	return ok
}

// galeraState reads a node's wsrep status.
func galeraState(ctx context.Context, db *sql.DB) nodeStatus {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state', 'wsrep_cluster_status', 'wsrep_cluster_conf_id')")
	if err != nil {
		return nodeStatus{err: err}
	}
	defer rows.Close()
	v := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nodeStatus{err: err}
		}
		v[strings.ToLower(name)] = value
	}
	if err := rows.Err(); err != nil {
		return nodeStatus{err: err}
	}
	if v["wsrep_ready"] == "" {
		return nodeStatus{}
	}
	st := nodeStatus{galera: true, ready: v["wsrep_ready"] == "ON", primary: v["wsrep_cluster_status"] == "Primary"}
	st.state, _ = strconv.Atoi(v["wsrep_local_state"])
	st.view, _ = strconv.ParseUint(v["wsrep_cluster_conf_id"], 10, 64)
	return st
}

func (c *cluster) close() {
	close(c.stop)
	<-c.done
	for _, n := range c.nodes {
		n.probe.Close()
	}
}

// Describe and Collect make the cluster a prometheus.Collector.
var (
	nodeUpDesc = prometheus.NewDesc("shortener_mysql_node_up",
		"1 if the MySQL node passed its last probe (ready, Synced, primary component), else 0.", []string{"node"}, nil)
	writerDesc = prometheus.NewDesc("shortener_mysql_writer",
		"1 for the MySQL node this instance writes through, else 0.", []string{"node"}, nil)
	switchesDesc = prometheus.NewDesc("shortener_mysql_writer_switches_total",
		"Times this instance moved its writes to another MySQL node.", nil, nil)
	retriesDesc = prometheus.NewDesc("shortener_mysql_write_retries_total",
		"Transactions run again because a certification conflict or a node outside the primary component refused them.", nil, nil)
)

func (c *cluster) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodeUpDesc
	ch <- writerDesc
	ch <- switchesDesc
	ch <- retriesDesc
}

func (c *cluster) Collect(ch chan<- prometheus.Metric) {
	w := int(c.writer.Load())
	for i, n := range c.nodes {
		ch <- prometheus.MustNewConstMetric(nodeUpDesc, prometheus.GaugeValue, b2f(n.healthy.Load()), n.addr)
		ch <- prometheus.MustNewConstMetric(writerDesc, prometheus.GaugeValue, b2f(i == w), n.addr)
	}
	ch <- prometheus.MustNewConstMetric(switchesDesc, prometheus.CounterValue, float64(c.switches.Load()))
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(c.retries.Load()))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// nodeConn is a connection to one node, valid while that node is the
// writer it was opened for. It passes every optional interface of the
// driver's connection through, so database/sql uses the driver exactly
// as it would without it.
type nodeConn struct {
	conn driver.Conn
	c    *cluster
	node int // index of the node in c.nodes
	gen  uint64
	inTx bool // a transaction is open: its statements are not retried alone
}

var (
	_ driver.ConnBeginTx        = (*nodeConn)(nil)
	_ driver.ExecerContext      = (*nodeConn)(nil)
	_ driver.QueryerContext     = (*nodeConn)(nil)
	_ driver.ConnPrepareContext = (*nodeConn)(nil)
	_ driver.Pinger             = (*nodeConn)(nil)
	_ driver.SessionResetter    = (*nodeConn)(nil)
	_ driver.Validator          = (*nodeConn)(nil)
	_ driver.NamedValueChecker  = (*nodeConn)(nil)
	_ driver.Tx                 = (*nodeTx)(nil)
)

func (nc *nodeConn) stale() bool { return nc.gen != nc.c.gen.Load() }

func (nc *nodeConn) Prepare(query string) (driver.Stmt, error) { return nc.conn.Prepare(query) }
func (nc *nodeConn) Close() error                              { return nc.conn.Close() }
func (nc *nodeConn) Begin() (driver.Tx, error) {
	return nc.BeginTx(context.Background(), driver.TxOptions{})
}

func (nc *nodeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := nc.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	nc.inTx = true
	return &nodeTx{tx: tx, nc: nc}, nil
}

func (nc *nodeConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return nc.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

// ExecContext runs a statement. Outside a transaction, one aborted by a
// certification conflict (so not applied) runs again, a few times, and
// one refused by a node outside the primary component is handed back to
// database/sql as a bad connection, which it retries on a new one: to
// the next writer, since the node is marked down.
func (nc *nodeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return runStatement(ctx, nc, func() (driver.Result, error) {
		return nc.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	})
}

// QueryContext runs a query as ExecContext runs a statement.
func (nc *nodeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return runStatement(ctx, nc, func() (driver.Rows, error) {
		return nc.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	})
}

// runStatement runs f, again while a certification conflict aborts it
// outside a transaction, and checks its last error (check).
func runStatement[T any](ctx context.Context, nc *nodeConn, f func() (T, error)) (T, error) {
	v, err := f()
	for try := 1; err != nil && !nc.inTx && try < conflictTries && isConflict(err) && ctx.Err() == nil; try++ {
		v, err = f()
	}
	return v, nc.check(err)
}

// check marks the node down on an error that says it left the primary
// component (1047); outside a transaction the statement was not run, and
// driver.ErrBadConn makes database/sql run it on a new connection.
func (nc *nodeConn) check(err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != errNotPrimary {
		return err
	}
	nc.c.markDown(nc.node, "refused: "+me.Message)
	if nc.inTx {
		return err
	}
	return driver.ErrBadConn
}

func (nc *nodeConn) Ping(ctx context.Context) error { return nc.conn.(driver.Pinger).Ping(ctx) }

// ResetSession refuses a connection to a node that is no longer the
// writer, so database/sql drops it and opens one to the writer.
func (nc *nodeConn) ResetSession(ctx context.Context) error {
	if nc.stale() {
		return driver.ErrBadConn
	}
	return nc.conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid is false for a connection to a node that is no longer the
// writer: database/sql closes it rather than pool it.
func (nc *nodeConn) IsValid() bool {
	return !nc.stale() && nc.conn.(driver.Validator).IsValid()
}

func (nc *nodeConn) CheckNamedValue(v *driver.NamedValue) error {
	return nc.conn.(driver.NamedValueChecker).CheckNamedValue(v)
}

type nodeTx struct {
	tx driver.Tx
	nc *nodeConn
}

func (t *nodeTx) Commit() error {
	t.nc.inTx = false
	err := t.tx.Commit()
	if isConflict(err) {
		t.nc.check(err) //nolint:errcheck // marks a refusing node down; the caller sees err
	}
	return err
}

func (t *nodeTx) Rollback() error {
	t.nc.inTx = false
	return t.tx.Rollback()
}

// conflictTries bounds the runs of a statement or transaction that
// certification conflicts abort.
const conflictTries = 4

// isConflict reports a deadlock, which is how Galera reports a
// certification conflict (1213): the statement or transaction was not
// applied and may run again.
func isConflict(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == errDeadlock
}

// isRetryable reports an error after which a transaction was not applied
// and may run again on a new connection: a certification conflict, or a
// node that left the primary component (1047, WSREP not ready), which
// refuses work until it rejoins while the writer moves off it. A broken
// connection is not one: a COMMIT it cut off may have been applied, which
// only the write itself can tell (ShipClicks by its segment's position).
func isRetryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == errDeadlock || me.Number == errNotPrimary)
}

// MariaDB error numbers.
const (
	errDeadlock   = 1213 // ER_LOCK_DEADLOCK; on Galera also a certification conflict
	errNotPrimary = 1047 // ER_UNKNOWN_COM_ERROR: "WSREP has not yet prepared node for application use"
)

// again reports whether a write that failed with err on its try'th run
// should run again: it was not applied (isRetryable), tries remain and
// ctx is live. It waits a little first, longer each try, so that the
// instance that won a conflict, or a switch of writer, goes first.
func (s *Store) again(ctx context.Context, err error, try int) bool {
	if err == nil || try >= conflictTries || !isRetryable(err) {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(try) * 20 * time.Millisecond):
		s.retries.Add(1)
		return true
	}
}
