package store

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// testCluster is a cluster of n nodes that are never probed or dialled:
// the election alone.
func testCluster(t *testing.T, n int) *cluster {
	t.Helper()
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}[:n]
	c, err := newCluster(mysql.NewConfig(), addrs, time.Second, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.probe.Close()
		}
	})
	return c
}

// up marks node i healthy since ago.
func (c *cluster) up(i int, ago time.Duration) {
	c.nodes[i].healthy.Store(true)
	c.nodes[i].since.Store(time.Now().Add(-ago).UnixNano())
}

func TestElect(t *testing.T) {
	c := testCluster(t, 3)
	switched := 0
	c.onSwitch = func() { switched++ }
	want := func(step string, writer int, switches int) {
		t.Helper()
		if got := int(c.writer.Load()); got != writer {
			t.Errorf("%s: writer %d, want %d", step, got, writer)
		}
		if switched != switches || int(c.switches.Load()) != switches || int(c.gen.Load()) != switches {
			t.Errorf("%s: %d switches (metric %d, generation %d), want %d", step, switched, c.switches.Load(), c.gen.Load(), switches)
		}
	}
	c.elect()
	want("all healthy", 0, 0)

	c.markDown(0, "killed")
	want("first down", 1, 1)

	c.up(0, 0)
	c.elect()
	want("first back, not yet risen", 1, 1)

	c.up(0, riseAfter+time.Second)
	c.elect()
	want("first back and risen", 0, 2)

	c.markDown(0, "killed")
	c.markDown(1, "killed")
	want("first two down", 2, 4) // 0 -> 1 -> 2

	c.up(1, 0)
	c.elect()
	want("second back, not risen, third healthy", 2, 4)

	c.markDown(2, "frozen")
	want("third down, second back but not risen: the only healthy one", 1, 5)

	c.markDown(1, "killed")
	want("none healthy: the next in turn, so connects go round", 2, 6)
	c.markDown(2, "killed")
	want("none healthy, again", 0, 7)
}

// TestNodeConnStale: a connection opened for one writer is invalid once
// the writer moves, so database/sql closes it rather than reuse it.
func TestNodeConnStale(t *testing.T) {
	c := testCluster(t, 2)
	_, gen := c.current()
	nc := &nodeConn{c: c, gen: gen}
	if nc.stale() {
		t.Fatal("a new connection is stale")
	}
	c.markDown(0, "killed")
	if !nc.stale() {
		t.Error("a connection to the old writer is not stale after a switch")
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
	}{
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}, true},
		{&mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}, true},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{mysql.ErrInvalidConn, false}, // a COMMIT cut off may have been applied
		{errors.New("other"), false},
	} {
		if got := isRetryable(tc.err); got != tc.retryable {
			t.Errorf("isRetryable(%v) = %v, want %v", tc.err, got, tc.retryable)
		}
	}
}

// TestJudge: a node that reports itself synced in an older view than
// the others (thawed after a freeze, its partition just healed) is not
// taken until it rejoins their view.
func TestJudge(t *testing.T) {
	synced := func(view uint64) nodeStatus {
		return nodeStatus{galera: true, ready: true, primary: true, state: wsrepSynced, view: view}
	}
	down := nodeStatus{err: errors.New("probe: context deadline exceeded")}
	for _, tc := range []struct {
		name string
		seen []nodeStatus
		want []bool
	}{
		{"all in one view", []nodeStatus{synced(5), synced(5), synced(5)}, []bool{true, true, true}},
		{"thawed, in the view it was evicted from", []nodeStatus{synced(5), synced(6), synced(6)}, []bool{false, true, true}},
		{"frozen", []nodeStatus{down, synced(6), synced(6)}, []bool{false, true, true}},
		{"alone and answering", []nodeStatus{synced(5), down, down}, []bool{true, false, false}},
		{"cut off: non-primary", []nodeStatus{{galera: true, ready: false, primary: false, state: 0, view: 1<<64 - 1}, synced(6), synced(6)}, []bool{false, true, true}},
		{"a donor takes writes", []nodeStatus{{galera: true, ready: true, primary: true, state: wsrepDonor, view: 7}, synced(7), {galera: true, ready: true, primary: true, state: 1, view: 7}}, []bool{true, true, false}},
		{"plain MariaDB", []nodeStatus{{}}, []bool{true}},
	} {
		got := judge(tc.seen)
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: node %d taken %v, want %v (%v)", tc.name, i, got[i], tc.want[i], tc.seen[i])
			}
		}
	}
}
