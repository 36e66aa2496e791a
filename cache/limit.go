package cache

import (
	"context"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/redis/go-redis/v9"

	"shortener/sentinel"
)

// Create rate limits are shared by every instance through the master, but
// no request waits on it: a frozen master would make every create wait one
// Redis deadline until the write breaker opened. So the request's path
// only reads what the master last said about its key (Refused) and counts
// the request it admitted (Take); one goroutine (Run) sends the counts in
// batches and keeps the master's answers. The handler admits on its own
// per-instance bucket too, so a key the master has not yet turned down can
// at most take one burst per instance, and each instance learns of a
// refusal from its next report; counts are never lost on a refusal (the
// shared bucket goes into debt), so over time all instances together admit
// the shared rate. While the master cannot answer, the per-instance
// buckets are the limit.

// gcraTake is a generic cell rate algorithm (the token bucket, kept as one
// number: the theoretical arrival time of the next request) run
// atomically on the master, with the master's clock. For each KEYS[i]
// (a bucket), ARGV holds three numbers: the microseconds between requests
// at the rate, the burst, and how many requests were admitted. It adds
// them (into debt if need be) and returns, per bucket, the microseconds
// until the next request would fit (0: it fits now).
var gcraTake = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local waits = {}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[3 * i - 2])
  local tolerance = interval * tonumber(ARGV[3 * i - 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  tat = tat + tonumber(ARGV[3 * i]) * interval
  redis.call('SET', KEYS[i], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
  local wait = tat + interval - now - tolerance
  if wait < 0 then wait = 0 end
  waits[i] = wait
end
return waits
`)

// Bounds of the shared limiter's local state.
const (
	// takeQueue bounds the counts waiting for the master; past it they
	// are dropped (the per-instance bucket still limited them).
	takeQueue = 4096
	// takeBatch bounds the counts one round trip carries.
	takeBatch = 512
	// maxRefusals bounds the keys the master turned down that an instance
	// remembers, the least used forgotten first.
	maxRefusals = 100_000
)

// take is one admitted request, owed to the shared bucket.
type take struct {
	key      string // the bucket's name, as the caller gave it
	interval int64  // microseconds between requests at the rate
	burst    int
}

// bucketKey is the Redis key of the bucket named key.
func bucketKey(key string) string { return "ratelimit:" + key }

// limits is what an instance knows of the shared buckets.
type limits struct {
	takes chan take
	// refused maps a key the master turned down to when its bucket admits
	// again, by this instance's clock.
	refused *otter.Cache[string, time.Time]
}

func newLimits() *limits {
	return &limits{
		takes: make(chan take, takeQueue),
		refused: otter.Must(&otter.Options[string, time.Time]{
			MaximumSize:      maxRefusals,
			ExpiryCalculator: otter.ExpiryWriting[string, time.Time](time.Hour),
		}),
	}
}

// Refused reports whether the shared bucket named key turned this
// instance's last count down, and if so how long until it admits again.
// It does no I/O.
func (c *Cache) Refused(key string) (time.Duration, bool) {
	until, ok := c.limits.refused.GetIfPresent(key)
	if !ok {
		return 0, false
	}
	if wait := until.Sub(c.now()); wait > 0 {
		return wait, true
	}
	return 0, false
}

// Take counts one request admitted under the bucket named key, refilled
// at rate per second up to burst and shared by every instance through the
// Redis master. It never waits: the count is queued for the master (and
// dropped while the write breaker is not closed, or the queue is full),
// and the master's answer shows in later Refused calls.
func (c *Cache) Take(key string, rate float64, burst int) {
	if rate <= 0 {
		return
	}
	if !c.write.Breaker().IsClosed() {
		c.m.limits.WithLabelValues("skipped").Inc()
		return
	}
	select {
	case c.limits.takes <- take{key: key, interval: max(1, int64(1e6/rate)), burst: burst}:
	default:
		c.m.limits.WithLabelValues("dropped").Inc()
	}
}

// sendTakes sends queued counts to the master, a batch per round trip,
// until ctx ends.
func (c *Cache) sendTakes(ctx context.Context) {
	for {
		var first take
		select {
		case <-ctx.Done():
			return
		case first = <-c.limits.takes:
		}
		batch := map[string]*takeCount{first.key: {take: first, n: 1}}
		order := []string{first.key}
	drain:
		for range takeBatch - 1 {
			select {
			case t := <-c.limits.takes:
				if b, ok := batch[t.key]; ok {
					b.n++
					continue
				}
				batch[t.key] = &takeCount{take: t, n: 1}
				order = append(order, t.key)
			default:
				break drain
			}
		}
		c.sendTakeBatch(ctx, batch, order)
	}
}

// takeCount is how many requests of one bucket a batch carries.
type takeCount struct {
	take
	n int
}

func (c *Cache) sendTakeBatch(ctx context.Context, batch map[string]*takeCount, order []string) {
	n := 0
	for _, b := range batch {
		n += b.n
	}
	if c.beforeLimitSend != nil {
		c.beforeLimitSend()
	}
	if !c.write.Breaker().IsClosed() || !c.write.Breaker().Allow() {
		c.m.limits.WithLabelValues("skipped").Add(float64(n))
		return
	}
	keys, args := make([]string, 0, len(order)), make([]any, 0, 3*len(order))
	for _, k := range order {
		b := batch[k]
		keys = append(keys, bucketKey(k))
		args = append(args, b.interval, b.burst, b.n)
	}
	waits, err := sentinel.Run(ctx, c.write, func(ctx context.Context, r *redis.Client) ([]int64, error) {
		return gcraTake.Run(ctx, r, keys, args...).Int64Slice()
	})
	if err != nil || len(waits) != len(order) {
		c.m.limits.WithLabelValues("error").Add(float64(n))
		c.log.Debug("shared rate limit not counted", "requests", n, "err", err)
		return
	}
	c.m.limits.WithLabelValues("ok").Add(float64(n))
	now := c.now()
	for i, k := range order {
		if waits[i] > 0 {
			c.limits.refused.Set(k, now.Add(time.Duration(waits[i])*time.Microsecond))
		} else {
			c.limits.refused.Invalidate(k)
		}
	}
}
