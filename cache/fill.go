package cache

import (
	"context"
	"hash/maphash"
	"shortener"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"shortener/sentinel"
)

// generations orders fills against invalidations. Every invalidation of a
// code bumps its generation while it drops the code from L1; a lookup
// reads the generation before it reads Redis or MySQL and puts what it
// read into L1 only if the generation has not moved, under the same lock.
// So a lookup that read a link just before its delete committed can never
// put it back after the delete dropped it. Codes share 4,096 stripes: a
// bump may cost another code's fill (a later lookup refills it), never
// correctness.
type generations struct {
	seed    maphash.Seed
	stripes [4096]struct {
		mu sync.Mutex
		n  uint64
	}
}

func newGenerations() *generations { return &generations{seed: maphash.MakeSeed()} }

func (g *generations) stripe(code string) int {
	return int(maphash.String(g.seed, code) % uint64(len(g.stripes)))
}

// get returns code's generation now.
func (g *generations) get(code string) uint64 {
	s := &g.stripes[g.stripe(code)]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// bump moves code's generation on and runs fn (the L1 drop) under the
// stripe's lock.
func (g *generations) bump(code string, fn func()) {
	s := &g.stripes[g.stripe(code)]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	fn()
}

// bumpAll moves every generation on, then runs fn.
func (g *generations) bumpAll(fn func()) {
	for i := range g.stripes {
		g.stripes[i].mu.Lock()
		g.stripes[i].n++
	}
	defer func() {
		for i := range g.stripes {
			g.stripes[i].mu.Unlock()
		}
	}()
	fn()
}

// ifUnchanged runs fn (the L1 put) only if code's generation is still gen,
// and reports whether it did.
func (g *generations) ifUnchanged(code string, gen uint64, fn func()) bool {
	s := &g.stripes[g.stripe(code)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n != gen {
		return false
	}
	fn()
	return true
}

// forget drops code from L1 as an invalidation: whatever a lookup in
// flight read before now will not be put back.
func (c *Cache) forget(code string) {
	c.gens.bump(code, func() { c.l1.drop(code) })
}

// fill is a Redis write owed after a lookup or a create. Fills run on one
// goroutine of their own (Run), never on a request's path: a frozen
// master costs a fill, not a client's wait.
type fill struct {
	link shortener.Link
	gen  uint64    // the code's generation when the link was read
	read time.Time // when the read began (a create: when it committed)
	// announce publishes the code on the invalidation channel too, so
	// other instances drop a negative entry for a code just created.
	announce bool
}

// fillResults label shortener_redis_fills_total: written; failed; skipped
// (stale, gone, or the write breaker not closed); dropped (queue full);
// deleted (Redis holds the code's tombstone: deleted since it was read).
var fillResults = []string{"ok", "error", "skipped", "dropped", fillDeleted}

const fillDeleted = "deleted"

// A fill checks this instance's pending set and generations, but another
// instance's delete can reach Redis after that check and before the SET
// (the fill queue may hold it for a while), and the SET would then bring
// the deleted link back into Redis, for every instance, until its TTL.
// So a delete writes a tombstone (tombKey) with its DEL, in one
// transaction, and every fill is a script that SETs only where no
// tombstone is: atomic on the master, one round trip. A fill older than
// fillMaxAge is dropped before it is sent, which bounds how long after a
// delete a fill that read the link before it can arrive; the tombstone
// lives longer than that (Cache.tombstoneTTL).
const fillMaxAge = 30 * time.Second

// fillQueue bounds the fills waiting for Redis; past it they are dropped
// (Redis is a cache: a later lookup fills again).
const fillQueue = 1024

// enqueue hands f to the fill goroutine without waiting, or drops it when
// the write breaker is not closed or the queue is full.
func (c *Cache) enqueue(f fill) {
	if !c.write.Breaker().IsClosed() {
		c.m.fills.WithLabelValues("skipped").Inc()
		return
	}
	select {
	case c.fills <- f:
	default:
		c.m.fills.WithLabelValues("dropped").Inc()
	}
}

// fillBatch caps the fills one script call carries. Under load fills
// queue while a call is in flight, and the next call takes them together:
// one round trip and one announcement (a message of space-separated codes
// that every other instance wakes for once) instead of one per fill.
const fillBatch = 128

// writeFills sends queued fills to the master, all that are waiting in
// one call, until ctx ends.
func (c *Cache) writeFills(ctx context.Context) {
	batch := make([]fill, 0, fillBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.fills:
			batch = append(batch[:0], f)
		}
	waiting:
		for len(batch) < fillBatch {
			select {
			case f := <-c.fills:
				batch = append(batch, f)
			default:
				break waiting
			}
		}
		c.writeBatch(ctx, batch)
	}
}

// writeBatch sends the fills of batch that are still good.
func (c *Cache) writeBatch(ctx context.Context, batch []fill) {
	now := c.now()
	links := make([]shortener.Link, 0, len(batch))
	announce := make(map[string]bool, len(batch))
	var skipped int
	var forget []string // creates whose fill is stale: announced all the same
	for _, f := range batch {
		l := f.link
		if l.Gone(now) || c.pending.has(l.Code) || c.gens.get(l.Code) != f.gen || now.Sub(f.read) > fillMaxAge {
			// Gone, invalidated since it was read, or too old for the
			// tombstones to guard: the fill is stale. A create's
			// announcement still goes out: it only makes the other
			// instances forget the code, which is always safe, and
			// without it they keep a "no such code" for their negative
			// TTL (a generation moved by an unrelated bump was enough).
			skipped++
			if f.announce {
				forget = append(forget, l.Code)
			}
			continue
		}
		links = append(links, l)
		announce[l.Code] = announce[l.Code] || f.announce
	}
	if len(links) > 0 && (!c.write.Breaker().IsClosed() || !c.write.Breaker().Allow()) {
		skipped, links = skipped+len(links), nil
	}
	c.m.fills.WithLabelValues("skipped").Add(float64(skipped))
	if len(forget) > 0 && c.write.Breaker().Allow() {
		sentinel.Run(ctx, c.write, func(ctx context.Context, r *redis.Client) (int64, error) { //nolint:errcheck // the breaker records it
			return r.Publish(ctx, invalidationChannel, strings.Join(forget, " ")).Result()
		})
	}
	if len(links) == 0 {
		return
	}
	if c.beforeFillSend != nil {
		for _, l := range links {
			c.beforeFillSend(l.Code)
		}
	}
	n, err := c.setLinks(ctx, links, func(l shortener.Link) time.Duration { return c.redisTTL(l, now) }, announce)
	if err != nil {
		c.m.fills.WithLabelValues("error").Add(float64(len(links)))
		c.log.Debug("redis fill failed", "links", len(links), "first", links[0].Code, "err", err)
		return
	}
	c.m.fills.WithLabelValues("ok").Add(float64(n))
	c.m.fills.WithLabelValues(fillDeleted).Add(float64(len(links) - n))
}
