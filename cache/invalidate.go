package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"shortener"

	"github.com/redis/go-redis/v9"

	"shortener/internal/tick"
	"shortener/sentinel"
)

// invalidationChannel carries the codes whose L1 entries every instance
// must drop: one a message from an invalidation, or several separated by
// spaces from a batch of fills announcing links just created. PUBLISH is
// replicated, so subscribers on any node hear it.
const invalidationChannel = "shortener:invalidate"

// pendingSet holds the codes with an invalidation not yet known to have
// reached Redis. Lookups of those codes bypass Redis, and fills skip them,
// so a stale Redis entry cannot answer while its DEL is still owed.
type pendingSet struct {
	mu    sync.RWMutex
	codes map[string]pending
}

// pending is what the set knows of a code's invalidation.
type pending struct {
	learned time.Time // when this instance learned of it (for the grace)
	record  time.Time // the latest record MySQL showed for it; zero before one
}

func (p *pendingSet) has(code string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.codes[code]
	return ok
}

func (p *pendingSet) add(code string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.codes == nil {
		p.codes = map[string]pending{}
	}
	e := p.codes[code]
	e.learned = now
	p.codes[code] = e
}

// replace makes the set what MySQL holds, keeping codes this instance added
// within grace (a read that began before their commit may lack them). It
// returns the codes with an invalidation new to this instance: new to
// the set, or with a record later than the one it knew (a link edited
// again while its earlier edit was still pending: an L1 entry read
// between the two must go too).
func (p *pendingSet) replace(invs []shortener.Invalidation, now time.Time, grace time.Duration) (added []string) {
	latest := make(map[string]time.Time, len(invs)) // each code's latest record
	for _, inv := range invs {
		if t, ok := latest[inv.Code]; !ok || inv.CreatedAt.After(t) {
			latest[inv.Code] = inv.CreatedAt
		}
	}
	next := make(map[string]pending, len(latest))
	p.mu.Lock()
	defer p.mu.Unlock()
	for code, record := range latest {
		e, known := p.codes[code]
		switch {
		case !known:
			e = pending{learned: now, record: record}
			added = append(added, code)
		case record.After(e.record):
			if !e.record.IsZero() { // a record after the one this instance knew
				added = append(added, code)
			}
			e.record = record
		}
		next[code] = e
	}
	for code, e := range p.codes {
		if _, ok := next[code]; !ok && now.Sub(e.learned) < grace {
			next[code] = e
		}
	}
	p.codes = next
	return added
}

func (p *pendingSet) len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.codes)
}

// Invalidate drops code from every cache tier after its delete was
// committed (with its invalidation record) in MySQL: this instance's L1 at
// once, then Redis and the other instances' L1 through DEL + PUBLISH. If
// Redis cannot be reached, the replay loop sends it later from the record.
func (c *Cache) Invalidate(ctx context.Context, code string) {
	c.pending.add(code, c.now())
	c.m.pending.Set(float64(c.pending.len()))
	c.forget(code)
	c.send(ctx, []string{code})
}

// queueInvalidations adds to p, for each code, its tombstone, the DEL of
// its link and the message to the other instances. The tombstone comes
// first and p is a transaction, so no fill can land between them
// (fill.go).
func (c *Cache) queueInvalidations(ctx context.Context, p redis.Pipeliner, codes []string) {
	for _, code := range codes {
		p.Set(ctx, tombKey(code), "1", c.tombstoneTTL)
		p.Del(ctx, key(code))
		p.Publish(ctx, invalidationChannel, code)
	}
}

// send deletes codes from Redis and announces them to every instance, in
// one round trip under one deadline. It reports whether Redis took them.
func (c *Cache) send(ctx context.Context, codes []string) bool {
	return c.deliver(ctx, codes, func(ctx context.Context, r *redis.Client) ([]redis.Cmder, error) {
		return r.TxPipelined(ctx, func(p redis.Pipeliner) error {
			c.queueInvalidations(ctx, p, codes)
			return nil
		})
	})
}

// deliver runs tx, a transaction of codes' invalidations (send's, or
// sendAndWait's on a connection of its own), through the write breaker,
// and counts and logs what became of it. A transaction the master refused
// for want of memory is followed by the announcement alone.
func (c *Cache) deliver(ctx context.Context, codes []string, tx func(context.Context, *redis.Client) ([]redis.Cmder, error)) bool {
	if !c.write.Breaker().Allow() {
		c.m.invalidated.WithLabelValues("skipped").Inc()
		return false
	}
	if _, err := sentinel.Run(ctx, c.write, tx); err != nil {
		c.m.invalidated.WithLabelValues("error").Inc()
		c.log.Warn("invalidation not delivered; kept for replay", "codes", len(codes), "err", err)
		if sentinel.Full(err) {
			c.announce(ctx, codes)
		}
		return false
	}
	c.m.invalidated.WithLabelValues("sent").Inc()
	return true
}

// announce deletes codes from Redis and tells every instance, without
// their tombstones, outside a transaction: what a master out of memory
// still takes (it refuses a transaction whole, and a SET). Without it the
// other instances would serve their L1 entries until their next outbox
// read (chaos redis-oom: a deleted code answered 302 after its 204). The
// tombstones are not needed while the master refuses writes, as it
// refuses fills too; the records stay pending, and the replay sends them
// whole once it takes them.
func (c *Cache) announce(ctx context.Context, codes []string) {
	_, err := sentinel.Run(ctx, c.write, func(ctx context.Context, r *redis.Client) ([]redis.Cmder, error) {
		return r.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, code := range codes {
				p.Del(ctx, key(code))
				p.Publish(ctx, invalidationChannel, code)
			}
			return nil
		})
	})
	if err == nil {
		c.m.invalidated.WithLabelValues("announced").Inc()
	}
}

// replay sends the pending invalidations that the last outbox read found
// (followOutbox, sync.go) to Redis every ReplayInterval. A record is
// removed only once it is older than InvalidationGrace (by MySQL's clock)
// and Redis took it, so each is sent at least twice: the second DEL beats
// a fill by any instance that read the link from MySQL just before the
// delete committed. Reading and sending are apart so that a slow send
// (replicas that do not acknowledge) never delays the reads that keep
// this instance in sync.
//
// The same tick probes the master while the write breaker is not closed:
// fills are skipped then, so without a probe nothing would ever give the
// breaker its trial calls, and it would stay open until a Sentinel event.
func (c *Cache) replay(ctx context.Context) {
	tick.Every(ctx, c.cfg.ReplayInterval, func() {
		if !c.write.Breaker().IsClosed() && c.write.Breaker().Allow() {
			sentinel.Run(ctx, c.write, func(ctx context.Context, r *redis.Client) (string, error) { //nolint:errcheck // the breaker records it
				return r.Ping(ctx).Result()
			})
		}
		if c.outbox != nil {
			c.replayOnce(ctx)
		}
	})
}

// LoadPending reads the pending invalidations from MySQL once, so that an
// instance starting while others' deletes have not reached Redis yet
// bypasses Redis for those codes from its first lookup. Without it, the
// set filled at the first replay tick, and an app restarted during a
// master failover (chaos master-and-app) answered 302 from Redis for
// links deleted seconds before. Call it before serving.
func (c *Cache) LoadPending(ctx context.Context) error {
	if c.outbox == nil {
		return nil
	}
	if err := c.readOutbox(ctx); err != nil {
		return fmt.Errorf("load pending invalidations: %w", err)
	}
	return nil
}

// sendBatch bounds the codes sent in one round trip.
const sendBatch = 500

// replayOnce sends the codes of the last outbox read, once: while no
// read succeeds (MySQL down), nothing is sent again, as records done
// meanwhile must not be.
func (c *Cache) replayOnce(ctx context.Context) {
	p := c.sync.send.Swap(nil)
	if p == nil || len(*p) == 0 {
		return
	}
	codes := *p
	// Every replica Sentinel knows must apply the DEL before a record is
	// done (replicas.go); if the sentinels cannot say, nothing is done.
	want, werr := c.sentinels.KnownReplicas(ctx)
	for len(codes) > 0 {
		batch := codes[:min(sendBatch, len(codes))]
		codes = codes[len(batch):]
		sent, applied := c.sendAndWait(ctx, batch, want)
		if !sent {
			return
		}
		if werr != nil || !applied {
			continue // sent again next tick; the codes stay pending
		}
		// Records younger than the grace stay, so each is sent again.
		if err := c.outbox.DoneInvalidations(ctx, batch, c.cfg.InvalidationGrace); err != nil {
			c.log.Debug("mark invalidations done", "err", err)
		}
	}
}
