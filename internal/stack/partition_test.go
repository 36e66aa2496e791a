package stack_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// blackHoleWait is how long a check waits for a partitioned server: long
// enough that a reachable one would surely answer, short enough to keep
// the test quick.
const blackHoleWait = 400 * time.Millisecond

func TestPartitionAndHeal(t *testing.T) {
	stacktest.RequireRoot(t)
	s := stacktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	r := s.Redis()[1]
	if err := r.Partition(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := r.Partitioned(ctx); err != nil || !on {
		t.Fatalf("Partitioned after Partition: got %v, %v, want true", on, err)
	}
	if err := r.Partition(ctx); err != nil {
		t.Fatalf("second Partition: %v", err)
	}
	if !r.Running() || r.Frozen() {
		t.Fatalf("%s after Partition: running %v frozen %v, want running, not frozen", r, r.Running(), r.Frozen())
	}
	assertBlackHole(t, ctx, r)
	// Only r is cut off: its neighbours answer.
	if _, err := s.Redis()[2].Replication(ctx); err != nil {
		t.Fatalf("%s while %s is partitioned: %v", s.Redis()[2], r.Name, err)
	}

	if err := r.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := r.Partitioned(ctx); err != nil || on {
		t.Fatalf("Partitioned after Heal: got %v, %v, want false", on, err)
	}
	if _, err := r.Replication(ctx); err != nil {
		t.Fatalf("%s after Heal: %v", r, err)
	}
	if err := r.Heal(ctx); err != nil {
		t.Fatalf("Heal of a healed server: %v", err)
	}

	// Restart heals: a partitioned server could never show itself ready.
	if err := r.Partition(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := r.Partitioned(ctx); err != nil || on {
		t.Fatalf("Partitioned after Restart: got %v, %v, want false", on, err)
	}

	// Close heals whatever is left, and only this stack's rules: not
	// another stack's, whose redis-1 has another port.
	foreign := []string{"-i", "lo", "-p", "tcp", "--dport", "1", "-m", "comment",
		"--comment", "shortener-stack redis-1", "-j", "DROP"}
	iptables(t, append([]string{"-I", "INPUT"}, foreign...)...)
	t.Cleanup(func() { iptables(t, append([]string{"-D", "INPUT"}, foreign...)...) })
	victims := []*stack.Proc{s.Redis()[0], s.Sentinels()[2], s.MySQL()}
	for _, p := range victims {
		if err := p.Partition(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pids := runningPids(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, s, pids)
	for _, p := range victims {
		if on, err := p.Partitioned(ctx); err != nil || on {
			t.Errorf("%s partitioned after Close: got %v, %v, want false", p, on, err)
		}
	}
	if rules := iptables(t, "-S", "INPUT"); !strings.Contains(rules, "--dport 1 -m comment") {
		t.Errorf("Close removed another stack's rule; INPUT now:\n%s", rules)
	}
}

// iptables runs iptables with args and returns its output.
func iptables(tb testing.TB, args ...string) string {
	tb.Helper()
	prog, err := exec.LookPath("iptables")
	if err != nil {
		prog = "/usr/sbin/iptables" // root's sbin may be off CI's PATH
	}
	out, err := exec.Command(prog, append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// assertBlackHole checks that p neither answers nor refuses: a dial times
// out, and so does a Redis request.
func assertBlackHole(tb testing.TB, ctx context.Context, p *stack.Proc) {
	tb.Helper()
	dctx, cancel := context.WithTimeout(ctx, blackHoleWait)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", p.Addr())
	if err == nil {
		conn.Close()
		tb.Fatalf("dial %s while partitioned: connected, want a timeout", p)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		tb.Fatalf("dial %s while partitioned: got %v, want a timeout (a black hole, not a refusal)", p, err)
	}
	if p.Kind != stack.KindRedis {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, blackHoleWait)
	defer cancel()
	if r, err := p.Replication(rctx); err == nil {
		tb.Fatalf("%s answered INFO while partitioned: %+v", p, r)
	}
}
