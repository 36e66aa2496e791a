package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcra is a generic cell rate algorithm (the token bucket, kept as one
// number: the theoretical arrival time of the next request) run atomically
// on the master, with the master's clock, so every instance shares one
// budget per key. KEYS[1]: the bucket; ARGV[1]: microseconds between
// requests at the rate; ARGV[2]: the burst. It returns 0 when the request
// may go on, else the microseconds until it could.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = interval * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local next = tat + interval
local wait = next - now - tolerance
if wait > 0 then return wait end
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000) + 1)
return 0
`)

// errLimiterSkipped means the write breaker is not closed: the limit is
// not asked of Redis now.
var errLimiterSkipped = errors.New("cache: rate limiter skipped (write breaker not closed)")

// Allow takes one request from the bucket named key, refilled at rate per
// second up to burst, shared by every instance through the Redis master.
// While the master cannot answer (write breaker not closed, a failure) it
// returns an error, and the caller limits on its own.
func (c *Cache) Allow(ctx context.Context, key string, rate float64, burst int) (bool, time.Duration, error) {
	if rate <= 0 {
		return true, 0, nil
	}
	if !c.write.breaker.IsClosed() || !c.write.allow() {
		return false, 0, errLimiterSkipped
	}
	interval := max(1, int64(1e6/rate))
	wait, err := run(ctx, c.write, func(ctx context.Context, r *redis.Client) (int64, error) {
		return gcra.Run(ctx, r, []string{"ratelimit:" + key}, interval, burst).Int64()
	})
	if err != nil {
		return false, 0, fmt.Errorf("rate limit %s: %w", key, err)
	}
	return wait == 0, time.Duration(wait) * time.Microsecond, nil
}
