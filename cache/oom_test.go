package cache

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"shortener/internal/poll"
)

// TestDeleteHeardWhileMasterFull: a master out of memory (maxmemory under
// noeviction) refuses an invalidation's transaction whole, tombstone, DEL
// and message alike. The DEL and the message still go alone, so another
// instance drops its L1 entry without waiting for an outbox read (each
// instance here has an outbox of its own, which never shows the other's
// records) and Redis no longer holds the link; the refusals are answers,
// so the write breaker stays closed and the next deletes are heard too.
func TestDeleteHeardWhileMasterFull(t *testing.T) {
	a, origin, s := newTestCache(t, testConfig())
	b := running(t, testConfig(func(c *Config) { onStack(c, s) }), origin)
	ctx := context.Background()
	const n = 12 // more than the breaker's window
	for i := range n {
		code := fmt.Sprintf("c%d", i)
		for _, c := range []*Cache{a, b} {
			if _, err := c.Resolve(ctx, code); err != nil {
				t.Fatal(err)
			}
		}
		poll.Until(t, code+" filled in Redis", func() error {
			if n, err := a.write.Redis().Exists(ctx, key(code)).Result(); err != nil || n != 1 {
				return fmt.Errorf("%d keys, %v", n, err)
			}
			return nil
		})
	}
	waitSubscribed(t, a, b)

	m, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	used, err := m.UsedMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", strconv.FormatInt(used/2, 10)}} {
		if err := m.ConfigSet(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := m.ConfigSet(context.Background(), "maxmemory", "0"); err != nil {
			t.Errorf("put back maxmemory: %v", err)
		}
	})

	for i := range n {
		code := fmt.Sprintf("c%d", i)
		if _, ok := b.l1.get(code); !ok {
			t.Fatalf("%s not in the other instance's L1 before its delete", code)
		}
		a.Invalidate(ctx, code)
		poll.Until(t, "the other instance drops "+code, func() error {
			if _, ok := b.l1.get(code); ok {
				return fmt.Errorf("%s still in its L1", code)
			}
			return nil
		})
		if k, err := a.write.Redis().Exists(ctx, key(code)).Result(); err != nil || k != 0 {
			t.Errorf("%s: %d keys in Redis after its delete (%v)", code, k, err)
		}
	}
	if got := count(a.m.invalidated, "error"); got != n {
		t.Errorf("%v transactions refused, want %d: the master was not out of memory", got, n)
	}
	if got := count(a.m.invalidated, "announced"); got != n {
		t.Errorf("%v deletes announced alone, want %d", got, n)
	}
	if !a.write.Breaker().IsClosed() {
		t.Error("the write breaker opened on a master that answered every call")
	}
}
