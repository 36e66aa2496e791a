package cache

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"shortener/internal/tick"
)

// An L1 entry outlives the message that would drop it only if that
// message is lost, and a message can be lost silently: a subscription
// still open to a master that is no longer the master hears nothing, and
// go-redis drops messages its buffer cannot take. So the instance does
// not rely on the messages alone. Every delete and edit commits an
// invalidation record in MySQL, kept at least InvalidationGrace by the
// database's clock (store.DoneInvalidations), and every instance reads
// all of them every ReplayInterval (followOutbox), dropping the L1 entry
// of each code new to it. Two successful reads that began less than half
// the grace apart miss no record committed between them: a record
// committed after the first began is still there when the second begins,
// with the other half of the grace left for the record's transaction to
// commit after its NOW(3). While its reads are that close together, an
// instance is in sync: it hears of every delete and edit within one read,
// whatever happened to the messages, and its L1 entries may live the long
// L1TTL.
//
// When the reads fall behind (MySQL unreachable from this instance, or
// too slow), an entry older than L1UnsyncedTTL is no longer trusted: the
// lookup goes on to Redis and MySQL as on a miss, and the L1 is at most
// L1UnsyncedTTL stale, the bound it had when that was its only TTL. When
// a read succeeds again after such a gap, records may have come and gone
// unread, so the whole L1 is dropped before the read's codes are taken.

// syncBound is how far apart two outbox reads may begin for the second to
// see every record committed since the first began: half the grace.
func syncBound(grace time.Duration) time.Duration { return grace / 2 }

// outboxSync is what this instance knows of its reading of the outbox.
type outboxSync struct {
	born  time.Time     // the cache's clock starts here (since)
	bound time.Duration // syncBound of the grace
	// last is when the last successful read began, on the cache's clock
	// (as nanoseconds, plus one: zero is no read yet).
	last atomic.Int64
	// send holds the codes the last read found, until the replay loop
	// takes them.
	send atomic.Pointer[[]string]
}

// since is the cache's clock: the time since the cache was made, read
// from c.now (monotonic, unless a test's clock says otherwise).
func (c *Cache) since() time.Duration { return c.now().Sub(c.sync.born) }

// inSync reports whether the last successful outbox read began less than
// the sync bound before now. Without an outbox (tests, the bench's own
// cache) there are no records to miss, and the messages are all there is.
func (c *Cache) inSync(now time.Duration) bool {
	if c.outbox == nil {
		return true
	}
	last := c.sync.last.Load()
	return last != 0 && now-time.Duration(last-1) < c.sync.bound
}

// trusted reports whether an L1 entry may answer: one younger than the
// unsynced TTL always may, an older one only while this instance is in
// sync with the outbox.
func (c *Cache) trusted(e l1Entry) bool {
	now := c.since()
	return now-e.at < c.cfg.L1UnsyncedTTL || c.inSync(now)
}

// followOutbox reads the pending invalidations from MySQL every
// ReplayInterval until ctx ends (readOutbox).
func (c *Cache) followOutbox(ctx context.Context) {
	if c.outbox == nil {
		return
	}
	tick.Every(ctx, c.cfg.ReplayInterval, func() {
		if err := c.readOutbox(ctx); err != nil {
			c.log.Debug("read pending invalidations", "err", err)
		}
	})
}

// readOutbox reads the pending invalidations once: each code new to this
// instance (its message may have been lost) is dropped from L1 and
// bypasses Redis until its record is done, and the codes are handed to
// the replay loop to send. A read that follows the last successful one
// by more than the sync bound first drops the whole L1. On an error
// (MySQL unreachable) nothing changes: the instance falls out of sync
// as time passes.
func (c *Cache) readOutbox(ctx context.Context) error {
	began := c.since()
	invs, err := c.outbox.PendingInvalidations(ctx)
	if err != nil {
		return err
	}
	now := c.now()
	if last := c.sync.last.Load(); last != 0 && began-time.Duration(last-1) >= c.sync.bound {
		c.flushL1(flushUnsynced)
		c.log.Warn("invalidation outbox read again after a gap; L1 dropped", "gap", (began - time.Duration(last-1)).Round(time.Millisecond))
	}
	c.m.replayed.Set(float64(now.UnixMilli()) / 1e3)
	for _, code := range c.pending.replace(invs, now, c.cfg.InvalidationGrace) {
		c.forget(code) // deleted elsewhere; maybe its message was lost
	}
	c.m.pending.Set(float64(c.pending.len()))
	seen := make(map[string]bool, len(invs))
	codes := make([]string, 0, len(invs))
	for _, inv := range invs {
		if !seen[inv.Code] {
			seen[inv.Code] = true
			codes = append(codes, inv.Code)
		}
	}
	c.sync.send.Store(&codes)
	// Last: a lookup that sees this read as its sync has seen its codes
	// dropped.
	c.sync.last.Store(int64(began) + 1)
	return nil
}

// Reasons for dropping the whole L1 (shortener_l1_flushes_total).
const (
	flushResubscribed = "resubscribed"
	flushUnsynced     = "unsynced"
	flushRequested    = "requested"
)

// flushL1 drops every L1 entry, and moves every generation on so that no
// lookup under way puts back what it read before.
func (c *Cache) flushL1(reason string) {
	c.gens.bumpAll(c.l1.dropAll)
	c.m.l1Flushes.WithLabelValues(reason).Inc()
}

// flushAll is the message on the invalidation channel that makes every
// instance drop its whole L1: no code contains "*".
const flushAll = "*"

// FlushL1s makes every instance subscribed to the invalidation channel
// drop its whole L1, and returns how many heard it (Redis's count of
// subscribers). Nothing needs it for correctness; it is for a change made
// to MySQL behind the shortener's back, and for the bench's cold rows.
func (c *Cache) FlushL1s(ctx context.Context) (int64, error) {
	return c.write.Redis().Publish(ctx, invalidationChannel, flushAll).Result()
}

// subscribe drops L1 entries that other instances invalidate. Whenever the
// subscription is re-established, messages may have been missed while it
// was down, so the whole L1 is dropped: it refills from Redis in moments.
func (c *Cache) subscribe(ctx context.Context) {
	c.write.Subscribe(ctx, invalidationChannel, func(payload string) {
		if payload == flushAll {
			c.flushL1(flushRequested)
			c.log.Info("L1 flush requested on the invalidation channel; L1 dropped")
			return
		}
		// One code (an invalidation) or several (fills announcing links
		// just created), space-separated.
		for code := range strings.FieldsSeq(payload) {
			c.forget(code)
		}
	}, func() {
		c.flushL1(flushResubscribed)
		c.log.Info("invalidation channel resubscribed; L1 dropped")
	})
}
