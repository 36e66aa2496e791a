package cache

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
)

// TestEditReachesEveryCache: a link both instances hold (a's L1, Redis,
// b's L1 from Redis) is edited in the origin and a is told, as the
// PATCH handler does; b then answers the edit, with every field a
// redirect decides by (destination, disabled, password, visits), and so
// does a third instance that reads it from Redis alone, once fills may
// land again.
func TestEditReachesEveryCache(t *testing.T) {
	slow := func(c *Config) { c.Redis.Timeout = time.Second }
	a, _, s := newTestCache(t, testConfig(slow))
	origin := &lockedOrigin{links: map[string]shortener.Link{}}
	a.origin = origin
	open := func(origin Origin) *Cache {
		c, err := New(testConfig(slow, func(c *Config) { onStack(c, s) }), origin, &fakeOutbox{}, quietLog(), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done; c.Close() })
		return c
	}
	b := open(origin)
	waitSubscribed(t, a, b)
	ctx := context.Background()

	before := shortener.Link{ID: 11, Code: "edit1", URL: "https://example.com/before", Redirect: 302}
	origin.set(before)
	for _, c := range []*Cache{a, b} {
		until(t, "both instances hold the link before the edit", func() bool {
			got, err := c.Resolve(ctx, "edit1")
			return err == nil && got.URL == before.URL
		})
	}
	after := before
	after.URL, after.Disabled, after.MaxVisits = "https://example.com/after", true, 5
	after.PasswordHash = "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"
	origin.set(after)
	a.Invalidate(ctx, "edit1")
	same := func(got shortener.Link) bool {
		return got.URL == after.URL && got.Disabled && got.MaxVisits == 5 && got.PasswordHash == after.PasswordHash
	}
	until(t, "the other instance answers the edit", func() bool {
		got, err := b.Resolve(ctx, "edit1")
		return err == nil && same(got)
	})

	// A third instance whose origin is down can only learn a link from
	// Redis: a link with every such field, read by a (whose miss fills
	// Redis), reaches it whole. (edit1 itself is kept out of Redis by its
	// tombstone for a while: the next lookups read MySQL.)
	c := open(downOrigin{})
	flagged := after
	flagged.Code, flagged.ID = "edit2", 12
	origin.set(flagged)
	if _, err := a.Resolve(ctx, "edit2"); err != nil {
		t.Fatal(err)
	}
	until(t, "Redis carries the edited fields to an instance without MySQL", func() bool {
		c.forget("edit2")
		got, err := c.Resolve(ctx, "edit2")
		return err == nil && same(got) && got.ID == 12
	})
}

// downOrigin is an origin that cannot be reached.
type downOrigin struct{}

func (downOrigin) Link(context.Context, string) (shortener.Link, error) {
	return shortener.Link{}, shortener.ErrUnavailable
}

// until polls cond every 10 ms until it holds; it fails the test, naming
// what was awaited, if it never does (a guard against hanging, not a
// bound on how long it may take).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
