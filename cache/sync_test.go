package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"shortener"
	"shortener/internal/poll"
)

// switchOutbox is an outbox that MySQL can be cut off from.
type switchOutbox struct {
	fakeOutbox
	down atomic.Bool
}

func (o *switchOutbox) PendingInvalidations(ctx context.Context) ([]shortener.Invalidation, error) {
	if o.down.Load() {
		return nil, shortener.ErrUnavailable
	}
	return o.fakeOutbox.PendingInvalidations(ctx)
}

// syncClock is a cache with a clock of the test's own, its outbox, and
// the steps the tests take on it. Nothing runs in the background (no
// Run): every outbox read is the test's.
type syncClock struct {
	t      *testing.T
	c      *Cache
	origin *fakeOrigin
	out    *switchOutbox
	now    time.Time
}

func newSyncClock(t *testing.T) *syncClock {
	s := &syncClock{t: t, origin: testLinks(2), out: &switchOutbox{}, now: time.Now()}
	s.c = newOfflineCache(t, s.origin, testConfig())
	s.c.outbox = s.out
	s.c.now = func() time.Time { return s.now }
	return s
}

func (s *syncClock) advance(d time.Duration) { s.now = s.now.Add(d) }

// read reads the outbox, as followOutbox does every ReplayInterval.
func (s *syncClock) read() {
	s.t.Helper()
	if err := s.c.readOutbox(context.Background()); err != nil {
		s.t.Fatal(err)
	}
}

// resolve looks code up and returns how many origin queries it took.
func (s *syncClock) resolve(code string) (shortener.Link, int64) {
	s.t.Helper()
	before := s.origin.calls.Load()
	l, err := s.c.Resolve(context.Background(), code)
	if err != nil {
		s.t.Fatalf("resolve %s: %v", code, err)
	}
	return l, s.origin.calls.Load() - before
}

// TestL1TrustedOnlyInSync: an L1 entry lives the long TTL while every
// outbox read follows the last within the sync bound; once the reads
// stop (MySQL unreachable from this instance), an entry older than the
// unsynced TTL is looked up again, one younger still answers; the read
// that ends the gap drops the whole L1. The clock is the test's own.
func TestL1TrustedOnlyInSync(t *testing.T) {
	s := newSyncClock(t)
	cfg := s.c.cfg
	step := cfg.ReplayInterval
	s.read()
	if _, q := s.resolve("c0"); q != 1 {
		t.Fatalf("first lookup: %d origin queries, want 1", q)
	}
	// In sync for twelve unsynced TTLs: the entry answers throughout.
	for elapsed := time.Duration(0); elapsed < 12*cfg.L1UnsyncedTTL; elapsed += step {
		s.advance(step)
		s.read()
		if _, q := s.resolve("c0"); q != 0 {
			t.Fatalf("in sync, entry %s old: looked up again", elapsed+step)
		}
	}
	if got := count(s.c.m.l1Flushes, flushUnsynced); got != 0 {
		t.Fatalf("in sync: %v unsynced flushes", got)
	}

	// MySQL goes away. Until the sync bound has passed since the last
	// read, nothing changes; then the old entry is looked up again.
	s.out.down.Store(true)
	s.advance(s.c.sync.bound - time.Millisecond)
	if _, q := s.resolve("c0"); q != 0 {
		t.Fatal("within the sync bound of the last read: looked up again")
	}
	s.advance(time.Millisecond)
	if _, q := s.resolve("c0"); q != 1 {
		t.Fatal("out of sync, an entry older than the unsynced TTL answered from L1")
	}
	if got := count(s.c.m.l1, "untrusted"); got != 1 {
		t.Errorf("untrusted lookups %v, want 1", got)
	}
	// The fresh entry answers for the unsynced TTL, then not.
	s.advance(cfg.L1UnsyncedTTL - time.Millisecond)
	if _, q := s.resolve("c0"); q != 0 {
		t.Fatal("out of sync, an entry younger than the unsynced TTL was looked up again")
	}
	s.advance(time.Millisecond)
	if _, q := s.resolve("c0"); q != 1 {
		t.Fatal("out of sync, an entry as old as the unsynced TTL answered from L1")
	}

	// MySQL is back: the first read drops the whole L1, once.
	s.out.down.Store(false)
	s.advance(step)
	s.read()
	if got := count(s.c.m.l1Flushes, flushUnsynced); got != 1 {
		t.Fatalf("after the gap: %v unsynced flushes, want 1", got)
	}
	if _, q := s.resolve("c0"); q != 1 {
		t.Fatal("the read after the gap left the entry in L1")
	}
	s.advance(step)
	s.read()
	if got := count(s.c.m.l1Flushes, flushUnsynced); got != 1 {
		t.Fatalf("a read within the bound flushed again: %v flushes", got)
	}
	s.advance(2 * cfg.L1UnsyncedTTL)
	if _, q := s.resolve("c0"); q == 0 {
		t.Fatal("no read for two unsynced TTLs, and the entry still answered")
	}
}

// TestLostMessageCaughtByOutbox: another instance's edit whose message
// never arrived (the case the short TTL used to bound) is picked up by
// the next outbox read: the entry goes, and the lookup reads the edit.
func TestLostMessageCaughtByOutbox(t *testing.T) {
	s := newSyncClock(t)
	s.read()
	if l, _ := s.resolve("c1"); l.URL != "https://example.com/c1" {
		t.Fatalf("first lookup: %s", l.URL)
	}
	// In sync for half a minute: the entry is older than the unsynced
	// TTL, so only the outbox can drop it now.
	for elapsed := time.Duration(0); elapsed < time.Minute/2; elapsed += s.c.cfg.ReplayInterval {
		s.advance(s.c.cfg.ReplayInterval)
		s.read()
	}
	// Another instance commits the edit with its record; no message.
	s.origin.links["c1"] = shortener.Link{Code: "c1", URL: "https://example.com/edited", Redirect: 302}
	s.out.mu.Lock()
	s.out.invs = append(s.out.invs, shortener.Invalidation{Code: "c1", CreatedAt: s.now})
	s.out.mu.Unlock()
	if l, _ := s.resolve("c1"); l.URL != "https://example.com/c1" {
		t.Fatalf("before any read: %s (the test lost no message)", l.URL)
	}
	s.advance(s.c.cfg.ReplayInterval)
	s.read()
	if l, _ := s.resolve("c1"); l.URL != "https://example.com/edited" {
		t.Fatalf("after the outbox read: the old destination %s", l.URL)
	}
	if got := count(s.c.m.l1Flushes, flushUnsynced); got != 0 {
		t.Errorf("%v unsynced flushes: the edit was not the outbox read's doing", got)
	}
}

// TestFlushL1s: a flush sent on the invalidation channel drops the L1 of
// every instance subscribed, on real Redis and sentinels.
func TestFlushL1s(t *testing.T) {
	a, origin, s := newTestCache(t, testConfig())
	b := running(t, testConfig(func(c *Config) { onStack(c, s) }), origin)
	ctx := context.Background()
	for _, c := range []*Cache{a, b} {
		if _, err := c.Resolve(ctx, "c3"); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.l1.get("c3"); !ok {
			t.Fatal("c3 not in L1 after its lookup")
		}
	}
	poll.Until(t, "both instances subscribed", func() error {
		n, err := a.write.Redis().PubSubNumSub(ctx, invalidationChannel).Result()
		if err != nil {
			return err
		}
		if n[invalidationChannel] < 2 {
			return fmt.Errorf("%d subscribers", n[invalidationChannel])
		}
		return nil
	})
	heard, err := a.FlushL1s(ctx)
	if err != nil || heard < 2 {
		t.Fatalf("flush heard by %d, err %v", heard, err)
	}
	for name, c := range map[string]*Cache{"a": a, "b": b} {
		poll.Until(t, name+" flushed", func() error {
			if got := count(c.m.l1Flushes, flushRequested); got != 1 {
				return fmt.Errorf("%v requested flushes", got)
			}
			return nil
		})
		if _, ok := c.l1.get("c3"); ok {
			t.Errorf("%s: c3 still in L1 after the flush", name)
		}
	}
}
