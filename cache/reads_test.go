package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"shortener"
	"shortener/internal/poll"
	"shortener/internal/stack"
)

// TestLookupsShareMGETs: lookups that reach Redis while readLanes MGETs
// are in flight queue, and go out together: with every Redis node frozen,
// the first readLanes lookups' MGETs hang and the rest queue; thawed,
// each of 100 lookups gets its own link (or its miss), in far fewer than
// 100 MGETs. A batch that mixed up its answers would redirect a code to
// another code's URL.
func TestLookupsShareMGETs(t *testing.T) {
	c, _, s := newTestCache(t, testConfig(func(c *Config) { c.Redis.Timeout = 10 * time.Second }))
	ctx := context.Background()
	const n, absent = 100, 10 // the last absent codes are not in Redis
	links := make([]shortener.Link, n)
	for i := range links {
		links[i] = shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("m%d", i), URL: fmt.Sprintf("https://example.com/m%d", i), Redirect: 302}
	}
	if _, err := c.setLinks(ctx, links[:n-absent], func(shortener.Link) time.Duration { return time.Hour }, nil); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the replicas have the links", func() error {
		if _, res := c.lookupRedis(links[n-absent-1].Code); res != resultHit {
			return fmt.Errorf("last link: %s", res)
		}
		return nil
	})
	mgets := histogramCount(t, c.m.readKeys)

	if err := stack.AtOnce(s.Redis(), (*stack.Proc).Stop); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := stack.AtOnce(s.Redis(), (*stack.Proc).Cont); err != nil {
				t.Error(err)
			}
		}
	}
	defer thaw()
	got := make([]shortener.Link, n)
	res := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], res[i] = c.lookupRedis(links[i].Code)
		}()
	}
	poll.Until(t, "every lookup past the lanes queued", func() error {
		c.reads.mu.Lock()
		defer c.reads.mu.Unlock()
		if q := len(c.reads.queue); q != n-readLanes {
			return fmt.Errorf("%d queued, %d in flight", q, c.reads.inflight)
		}
		return nil
	})
	thaw()
	wg.Wait()

	for i, l := range links {
		want := resultHit
		if i >= n-absent {
			want = resultMiss
		}
		if res[i] != want {
			t.Errorf("%s: %s, want %s", l.Code, res[i], want)
			continue
		}
		if want == resultHit && (got[i].Code != l.Code || got[i].URL != l.URL || got[i].ID != l.ID) {
			t.Errorf("%s: got %+v, want %+v", l.Code, got[i], l)
		}
	}
	// The readLanes hung MGETs, then the n-readLanes queued in at most
	// two more (maxReadKeys and then the rest).
	if sent, most := histogramCount(t, c.m.readKeys)-mgets, uint64(readLanes+2); sent > most {
		t.Errorf("%d lookups took %d MGETs, want at most %d", n, sent, most)
	}
	c.reads.mu.Lock()
	defer c.reads.mu.Unlock()
	if c.reads.inflight != 0 || len(c.reads.queue) != 0 {
		t.Errorf("after: %d in flight, %d queued; want none", c.reads.inflight, len(c.reads.queue))
	}
}

// TestQueuedLookupPastDeadline: a lookup whose deadline passed while it
// queued is answered with an error and not sent; the rest of its batch
// is (here to a closed port: an error of its own).
func TestQueuedLookupPastDeadline(t *testing.T) {
	c := newOfflineCache(t, testLinks(1), testConfig())
	past := &readCall{key: key("a"), due: time.Now().Add(-time.Millisecond)}
	live := &readCall{key: key("b"), due: time.Now().Add(time.Minute)}
	c.reads.mget([]*readCall{past, live})
	if past.res != resultError || !errors.Is(past.err, errQueueTimeout) {
		t.Errorf("past its deadline: %s, %v; want %s, %v", past.res, past.err, resultError, errQueueTimeout)
	}
	if live.res != resultError || live.err == nil || errors.Is(live.err, errQueueTimeout) {
		t.Errorf("within its deadline: %s, %v; want the closed port's error", live.res, live.err)
	}
	if n := histogramCount(t, c.m.readKeys); n != 1 {
		t.Errorf("%d MGETs sent, want 1", n)
	}
	if sum := histogramSum(t, c.m.readKeys); sum != 1 {
		t.Errorf("%g keys sent, want 1", sum)
	}
}
