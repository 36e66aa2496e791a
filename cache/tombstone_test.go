package cache

import (
	"context"
	"fmt"
	"shortener"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// runCache runs c until the test ends, then closes it.
func runCache(tb testing.TB, c *Cache) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done; c.Close() })
}

// fillsCounted is how many fills c has finished, whatever the outcome.
func fillsCounted(c *Cache) float64 {
	var n float64
	for _, r := range fillResults {
		n += count(c.m.fills, r)
	}
	return n
}

// holdFill asks a test's fill hook to hold the fill of code until release
// is closed.
type holdFill struct {
	code    string
	release chan struct{}
}

// TestDelayedFillCannotUndoADelete: instance A owes Redis a fill of a link
// (a create's warm-up, or a lookup's fill after a miss) and has checked
// its own state; before the SET goes out, instance B deletes the link and
// its invalidation reaches Redis. A's SET must not bring the link back:
// before tombstones it did, and every instance then served the deleted
// link from Redis until the entry's TTL (TestBrowser saw "deleted link:
// 200, want 410"). The interleaving is forced with A's fill hook, on real
// Redis; both instances share one origin and one outbox, as two apps share
// MySQL.
func TestDelayedFillCannotUndoADelete(t *testing.T) {
	s := stacktest.StartRedis(t)
	origin := &lockedOrigin{links: map[string]shortener.Link{}}
	out := &fakeOutbox{}
	hold, entered := make(chan holdFill, 1), make(chan struct{})
	var holding atomic.Bool
	newInstance := func(hook func(string)) *Cache {
		c, err := New(testConfig(func(c *Config) {
			onStack(c, s)
			c.L1TTL, c.ReplayInterval = time.Millisecond, 50*time.Millisecond
		}), origin, out, quietLog(), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		c.beforeFillSend = hook
		runCache(t, c)
		return c
	}
	a := newInstance(func(code string) {
		select {
		case h := <-hold:
			if h.code != code {
				hold <- h
				return
			}
			holding.Store(true)
			entered <- struct{}{}
			<-h.release
		default:
		}
	})
	b := newInstance(nil)
	ctx := context.Background()
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name string
		code string
		fill func(l shortener.Link) // makes A owe Redis a fill of l
	}{
		{"create's warm-up", "created", func(l shortener.Link) { a.Add(ctx, l) }},
		{"lookup's miss fill", "looked-up", func(l shortener.Link) {
			// The first lookups may meet a cold pool (an error: no fill
			// follows); the hook says when a fill is owed.
			for !holding.Load() {
				a.Resolve(ctx, l.Code) //nolint:errcheck // the hook is the signal
				// Paces the lookups, on fill's own goroutine: the
				// test waits for the hook (<-entered), not for this.
				time.Sleep(20 * time.Millisecond)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A fill that fails (a deadline on a busy machine) proves
			// nothing: try again with a fresh code until one reached Redis.
			for attempt := 0; ; attempt++ {
				code := fmt.Sprintf("%s%d", tt.code, attempt)
				errs := count(a.m.fills, "error")
				delayFillPastDelete(t, a, b, origin, out, hold, entered, &holding, code, tt.fill)
				if count(a.m.fills, "error") == errs {
					if v, ok := redisGet(t, master, key(code)); ok {
						t.Errorf("master holds %s = %q after its delete: A's delayed fill brought the deleted link back", key(code), v)
					}
					return
				}
				if attempt == 10 {
					t.Fatal("A's fills kept failing; nothing was tested")
				}
			}
		})
	}
}

// delayFillPastDelete makes A owe Redis a fill of a live link (fill), holds
// it at A's hook, deletes the link through B until B's invalidation reached
// Redis, then lets A's fill go and waits until it finished.
func delayFillPastDelete(t *testing.T, a, b *Cache, origin *lockedOrigin, out *fakeOutbox, hold chan holdFill,
	entered chan struct{}, holding *atomic.Bool, code string, fill func(shortener.Link)) {
	t.Helper()
	ctx := context.Background()
	live := shortener.Link{Code: code, URL: "https://example.com/" + code, Redirect: 302}
	origin.set(live)
	release := make(chan struct{})
	holding.Store(false)
	hold <- holdFill{code, release}
	before := fillsCounted(a)
	go fill(live)
	<-entered // A passed its own checks; its SET is next

	deleted := live
	deleted.DeletedAt = time.Now()
	origin.set(deleted)
	out.mu.Lock()
	out.invs = append(out.invs, shortener.Invalidation{Code: code, CreatedAt: time.Now()})
	out.mu.Unlock()
	sent := count(b.m.invalidated, "sent")
	b.Invalidate(ctx, code)
	// B's own send, or its replay.
	poll.Until(t, "B's invalidation to reach Redis", func() error {
		if n := count(b.m.invalidated, "sent"); n == sent {
			return fmt.Errorf("%v invalidations sent, as before the delete", n)
		}
		return nil
	})

	close(release) // A's delayed fill goes out now
	poll.Until(t, "A's fill to finish", func() error {
		if n := fillsCounted(a); n == before {
			return fmt.Errorf("%v fills counted, as before", n)
		}
		return nil
	})
}

// redisGet reads key from one Redis node.
func redisGet(tb testing.TB, p *stack.Proc, key string) (string, bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, ok, err := p.Get(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	return v, ok
}
