package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/stack"
	"shortener/stack/stacktest"
	"shortener/store"
)

// fakeOrigin serves links from memory and counts the calls.
type fakeOrigin struct {
	links map[string]store.Link
	calls atomic.Int64
}

var _ Origin = (*fakeOrigin)(nil)

func (f *fakeOrigin) Link(_ context.Context, code string) (store.Link, error) {
	f.calls.Add(1)
	l, ok := f.links[code]
	if !ok {
		return store.Link{}, store.ErrNotFound
	}
	return l, nil
}

func TestEncodeDecode(t *testing.T) {
	exp := time.UnixMilli(1_800_000_000_123).UTC()
	for _, l := range []store.Link{
		{Code: "a", URL: "https://example.com/a b?c=d e", Redirect: 302},
		{Code: "b", URL: "https://example.com/", Redirect: 308, ExpiresAt: exp},
	} {
		got, err := decode(l.Code, encode(l))
		if err != nil || got != l {
			t.Errorf("decode(encode(%+v)) = %+v, %v", l, got, err)
		}
	}
	for _, bad := range []string{"", "v1", "v2 302 0 https://x", "v1 x 0 https://x", "v1 302 y https://x"} {
		if _, err := decode("c", bad); err == nil {
			t.Errorf("decode(%q) succeeded, want an error", bad)
		}
	}
}

func newTestCache(tb testing.TB) (*Cache, *fakeOrigin, *stack.Stack) {
	tb.Helper()
	s := stacktest.Start(tb)
	origin := &fakeOrigin{links: map[string]store.Link{}}
	for i := range 20 {
		code := fmt.Sprintf("c%d", i)
		origin.links[code] = store.Link{Code: code, URL: "https://example.com/" + code, Redirect: 302}
	}
	c, err := New(Config{
		MasterName:    s.MasterName(),
		SentinelAddrs: s.SentinelAddrs(),
		Timeout:       testTimeout,
		BreakerDelay:  500 * time.Millisecond,
	}, origin, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, origin, s
}

const testTimeout = 50 * time.Millisecond

func count(c *prometheus.CounterVec, label string) float64 {
	return testutil.ToFloat64(c.WithLabelValues(label))
}

func TestCacheAside(t *testing.T) {
	c, origin, _ := newTestCache(t)
	ctx := context.Background()
	if _, err := c.Resolve(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if got := origin.calls.Load(); got != 1 {
		t.Fatalf("first lookup: origin calls = %d, want 1", got)
	}
	for range 5 {
		l, err := c.Resolve(ctx, "c1")
		if err != nil || l.URL != "https://example.com/c1" {
			t.Fatalf("cached lookup = %+v, %v", l, err)
		}
	}
	if got := origin.calls.Load(); got != 1 {
		t.Errorf("after 5 cached lookups: origin calls = %d, want 1 (Redis should answer)", got)
	}
	if got := count(c.m.redis, resultHit); got != 5 {
		t.Errorf("redis hits = %v, want 5", got)
	}
	if _, err := c.Resolve(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown code: error = %v, want ErrNotFound", err)
	}
	if got := count(c.m.redis, resultError); got != 0 {
		t.Errorf("redis errors = %v, want 0: a miss is not a failure", got)
	}
	if c.BreakerState() != "closed" {
		t.Errorf("breaker %s after misses, want closed", c.BreakerState())
	}
}

// TestFrozenMaster freezes the master and checks that every Resolve
// returns within about one Redis deadline, that the breaker opens and then
// skips Redis without filling it, and that lookups return to Redis once
// the sentinels have promoted a replica.
func TestFrozenMaster(t *testing.T) {
	c, origin, s := newTestCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for code := range origin.links { // warm Redis
		if _, err := c.Resolve(ctx, code); err != nil {
			t.Fatal(err)
		}
	}
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := master.Stop(); err != nil {
		t.Fatal(err)
	}
	defer master.Cont()

	var slowest time.Duration
	resolve := func(code string) {
		start := time.Now()
		l, err := c.Resolve(ctx, code)
		slowest = max(slowest, time.Since(start))
		if err != nil || l.URL != origin.links[code].URL {
			t.Fatalf("Resolve(%s) with the master frozen = %+v, %v", code, l, err)
		}
	}
	// Until the breaker opens, each lookup pays at most one deadline.
	for i := 0; c.BreakerState() == "closed"; i++ {
		if i > 100 {
			t.Fatal("breaker still closed after 100 failing lookups")
		}
		resolve(fmt.Sprintf("c%d", i%20))
	}
	fillsBefore := count(c.m.fills, "ok") + count(c.m.fills, "error")
	skipped := count(c.m.redis, resultSkipped)
	for i := range 50 {
		resolve(fmt.Sprintf("c%d", i%20))
	}
	if count(c.m.redis, resultSkipped) < skipped+40 {
		t.Errorf("breaker open: %v lookups skipped Redis, want nearly all of 50", count(c.m.redis, resultSkipped)-skipped)
	}
	if got := count(c.m.fills, "ok") + count(c.m.fills, "error"); got != fillsBefore {
		t.Errorf("breaker open: %v fills attempted, want 0", got-fillsBefore)
	}
	t.Logf("slowest lookup with the master frozen: %s (Redis deadline %s)", slowest, testTimeout)
	if limit := testTimeout + 100*time.Millisecond; slowest > limit {
		t.Errorf("slowest lookup took %s, want at most the deadline plus margin (%s)", slowest, limit)
	}

	if _, err := s.WaitMaster(ctx, master); err != nil {
		t.Fatalf("no failover: %v", err)
	}
	hits := count(c.m.redis, resultHit)
	for i := 0; count(c.m.redis, resultHit) < hits+20; i++ {
		if ctx.Err() != nil {
			t.Fatalf("lookups did not return to Redis after the promotion (breaker %s)", c.BreakerState())
		}
		resolve(fmt.Sprintf("c%d", i%20))
		time.Sleep(5 * time.Millisecond) // pace the loop; the exit condition is the counter
	}
	if c.BreakerState() != "closed" {
		t.Errorf("breaker %s after recovery, want closed", c.BreakerState())
	}
}
