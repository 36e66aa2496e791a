package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
	"shortener/internal/poll"
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
		poll.Until(t, "both instances to hold the link before the edit", func() error {
			got, err := c.Resolve(ctx, "edit1")
			if err == nil && got.URL != before.URL {
				err = fmt.Errorf("got %+v", got)
			}
			return err
		})
	}
	after := before
	after.URL, after.Disabled, after.MaxVisits = "https://example.com/after", true, 5
	after.PasswordHash = "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"
	origin.set(after)
	a.Invalidate(ctx, "edit1")
	// edited says how got differs from the edit, if it does.
	edited := func(got shortener.Link, err error) error {
		if err == nil && (got.URL != after.URL || !got.Disabled || got.MaxVisits != 5 || got.PasswordHash != after.PasswordHash) {
			err = fmt.Errorf("got %+v", got)
		}
		return err
	}
	poll.Until(t, "the other instance to answer the edit", func() error {
		return edited(b.Resolve(ctx, "edit1"))
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
	poll.Until(t, "Redis to carry the edited fields to an instance without MySQL", func() error {
		c.forget("edit2")
		got, err := c.Resolve(ctx, "edit2")
		if err == nil && got.ID != 12 {
			err = fmt.Errorf("got ID %d, want 12", got.ID)
		}
		if err != nil {
			return err
		}
		return edited(got, nil)
	})
}

// downOrigin is an origin that cannot be reached.
type downOrigin struct{}

func (downOrigin) Link(context.Context, string) (shortener.Link, error) {
	return shortener.Link{}, shortener.ErrUnavailable
}
