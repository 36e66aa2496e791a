package cache

import (
	"context"
	"hash/maphash"
	"shortener"
	"sync"

	"github.com/redis/go-redis/v9"
)

// generations orders fills against invalidations. Every invalidation of a
// code bumps its generation while it drops the code from L1; a lookup
// reads the generation before it reads Redis or MySQL and puts what it
// read into L1 only if the generation has not moved, under the same lock.
// So a lookup that read a link just before its delete committed can never
// put it back after the delete dropped it. Codes share 256 stripes: a
// bump may cost another code's fill (a later lookup refills it), never
// correctness.
type generations struct {
	seed    maphash.Seed
	stripes [256]struct {
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
	gen  uint64 // the code's generation when the link was read
	// announce publishes the code on the invalidation channel too, so
	// other instances drop a negative entry for a code just created.
	announce bool
}

// fillQueue bounds the fills waiting for Redis; past it they are dropped
// (Redis is a cache: a later lookup fills again).
const fillQueue = 1024

// enqueue hands f to the fill goroutine without waiting, or drops it when
// the write breaker is not closed or the queue is full.
func (c *Cache) enqueue(f fill) {
	if !c.write.breaker.IsClosed() {
		c.m.fills.WithLabelValues("skipped").Inc()
		return
	}
	select {
	case c.fills <- f:
	default:
		c.m.fills.WithLabelValues("dropped").Inc()
	}
}

// writeFills sends queued fills to the master until ctx ends.
func (c *Cache) writeFills(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.fills:
			c.writeFill(ctx, f)
		}
	}
}

func (c *Cache) writeFill(ctx context.Context, f fill) {
	l, now := f.link, c.now()
	if l.Gone(now) || c.pending.has(l.Code) || c.gens.get(l.Code) != f.gen {
		// Gone, or invalidated since it was read: the fill is stale.
		c.m.fills.WithLabelValues("skipped").Inc()
		return
	}
	ttl := c.redisTTL(l, now)
	if !c.write.breaker.IsClosed() || !c.write.allow() {
		c.m.fills.WithLabelValues("skipped").Inc()
		return
	}
	var err error
	if f.announce {
		_, err = run(ctx, c.write, func(ctx context.Context, r *redis.Client) ([]redis.Cmder, error) {
			return r.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key(l.Code), encode(l), ttl)
				p.Publish(ctx, invalidationChannel, l.Code)
				return nil
			})
		})
	} else {
		err = c.write.setLink(ctx, l, ttl)
	}
	if err != nil {
		c.m.fills.WithLabelValues("error").Inc()
		c.log.Debug("redis fill failed", "code", l.Code, "err", err)
		return
	}
	c.m.fills.WithLabelValues("ok").Inc()
}
