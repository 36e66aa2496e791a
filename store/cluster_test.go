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
