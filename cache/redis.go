package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"shortener"
	"strconv"
	"strings"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/redis/go-redis/v9"
)

// Breaker and role names, used in metrics and logs.
const (
	breakerRead  = "read"  // lookups, served by the replicas
	breakerWrite = "write" // fills, deletes and messages, sent to the master
	roleReplica  = "replica"
	roleMaster   = "master"
)

// node is one route into the Sentinel group (the master, or the replicas)
// with its own breaker: a dead master must not stop lookups that the
// replicas can answer, and a dead replica must not stop fills.
type node struct {
	name    string
	rdb     *redis.Client
	breaker circuitbreaker.CircuitBreaker[any]
	timeout time.Duration
}

// newNode builds a failover client for the master, or for the replicas when
// replicas is set. go-redis asks the sentinels for the address at every
// dial; for replicas it picks a random one the sentinels consider healthy
// and falls back to the master when they list none.
func newNode(name string, cfg Config, replicas bool, m *metrics, log *slog.Logger) *node {
	n := &node{name: name, timeout: cfg.Timeout}
	n.rdb = redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       cfg.MasterName,
		SentinelAddrs:    cfg.SentinelAddrs,
		Password:         cfg.Password,
		SentinelPassword: cfg.SentinelPassword,
		ReplicaOnly:      replicas,
		// One deadline per call, enforced on the socket: a breaker or a
		// timeout wrapper alone cannot unblock a read on a frozen master.
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.Timeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		PoolTimeout:           cfg.Timeout,
		// No retries: a retry would make one lookup wait several deadlines.
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      cfg.PoolSize,
		MinIdleConns:  2,
	})
	n.breaker = circuitbreaker.NewBuilder[any]().
		WithFailureThresholdRatio(cfg.BreakerFailures, cfg.BreakerWindow).
		WithDelay(cfg.BreakerDelay).
		WithSuccessThreshold(cfg.BreakerSuccesses).
		OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
			m.transitions.WithLabelValues(name, e.OldState.String(), e.NewState.String()).Inc()
			m.state.WithLabelValues(name).Set(float64(e.NewState))
			level := slog.LevelWarn
			if e.NewState == circuitbreaker.ClosedState {
				level = slog.LevelInfo
			}
			// e.Metrics() is not read here: failsafe-go v0.9.8 hands the
			// listener stats that other goroutines keep writing (the race
			// detector reports it), so the log names the states only.
			log.Log(context.Background(), level, "redis breaker state changed", "breaker", name,
				"from", e.OldState.String(), "to", e.NewState.String())
		}).
		Build()
	return n
}

// allow reports whether the breaker lets a call through now; a true
// answer must be followed by exactly one call to run.
func (n *node) allow() bool { return n.breaker.TryAcquirePermit() }

// run executes one command under its own deadline and records the outcome
// in the breaker. The deadline is detached from the caller's cancellation:
// a client that hangs up must not count against Redis.
func run[T any](ctx context.Context, n *node, fn func(context.Context, *redis.Client) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.timeout)
	defer cancel()
	v, err := fn(ctx, n.rdb)
	if err == nil || errors.Is(err, redis.Nil) {
		n.breaker.RecordSuccess()
	} else {
		n.breaker.RecordFailure()
	}
	return v, err
}

// state names the breaker's state: closed, open or half-open.
func (n *node) state() string { return n.breaker.State().String() }

// Links in Redis: one string per code, under key(code), written by
// setLink and read by lookupRedis, in the format of encode.

// key is the Redis key of a code.
func key(code string) string { return "link:" + code }

// tombKey is the key of a code's tombstone: the code was deleted, and no
// fill may write it (fill.go).
func tombKey(code string) string { return "gone:" + code }

// fillScript writes links where no tombstone is. KEYS: a link key and its
// tombstone key per link. ARGV[1]: the invalidation channel; then per
// link: the value, the TTL in milliseconds, and the code to announce or
// "" for none. The codes to announce go out in one message, separated by
// spaces (a code has none). It returns how many links it wrote.
var fillScript = redis.NewScript(`
local written, announce = 0, {}
for i = 1, #KEYS, 2 do
  local a = 2 + (i - 1) / 2 * 3
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then
    redis.call('SET', KEYS[i], ARGV[a], 'PX', ARGV[a + 1])
    written = written + 1
  end
  if ARGV[a + 2] ~= '' then
    announce[#announce + 1] = ARGV[a + 2]
  end
end
if #announce > 0 then
  redis.call('PUBLISH', ARGV[1], table.concat(announce, ' '))
end
return written
`)

// lookupRedis reads code from a replica, when the read breaker allows it;
// fromRedis counts the outcome.
func (c *Cache) lookupRedis(ctx context.Context, code string) (shortener.Link, string) {
	if !c.read.allow() {
		return shortener.Link{}, resultSkipped
	}
	began := time.Now()
	val, err := run(ctx, c.read, func(ctx context.Context, r *redis.Client) (string, error) {
		return r.Get(ctx, key(code)).Result()
	})
	c.m.redisWait.Observe(time.Since(began).Seconds())
	switch {
	case errors.Is(err, redis.Nil):
		return shortener.Link{}, resultMiss
	case err != nil:
		c.log.Debug("redis lookup failed", "code", code, "err", err)
		return shortener.Link{}, resultError
	}
	l, err := decode(code, val)
	if err != nil {
		// A value this version cannot read is a miss; the fill that
		// follows overwrites it.
		c.log.Warn("undecodable redis entry", "code", code, "err", err)
		return shortener.Link{}, resultMiss
	}
	return l, resultHit
}

// setLinks writes links to the master, each for ttl(l), except those
// with a tombstone, in one script call (EVALSHA; EVAL once after a new
// master), announcing on the invalidation channel the codes that announce
// holds true (nil: none). It returns how many it wrote.
func (n *node) setLinks(ctx context.Context, links []shortener.Link, ttl func(shortener.Link) time.Duration, announce map[string]bool) (int, error) {
	keys := make([]string, 0, 2*len(links))
	args := make([]any, 0, 1+3*len(links))
	args = append(args, invalidationChannel)
	for _, l := range links {
		code := ""
		if announce[l.Code] {
			code = l.Code
		}
		keys = append(keys, key(l.Code), tombKey(l.Code))
		args = append(args, encode(l), max(1, ttl(l).Milliseconds()), code)
	}
	written, err := run(ctx, n, func(ctx context.Context, r *redis.Client) (int64, error) {
		return fillScript.Run(ctx, r, keys, args...).Int64()
	})
	return int(written), err
}

// encode writes a link as "v1 <redirect> <expires unix ms> <url>": the
// entry carries its own expiry, so a stale TTL can never outlive it.
func encode(l shortener.Link) string {
	var exp int64
	if !l.ExpiresAt.IsZero() {
		exp = l.ExpiresAt.UnixMilli()
	}
	return "v1 " + strconv.Itoa(l.Redirect) + " " + strconv.FormatInt(exp, 10) + " " + l.URL
}

func decode(code, val string) (shortener.Link, error) {
	parts := strings.SplitN(val, " ", 4)
	if len(parts) != 4 || parts[0] != "v1" {
		return shortener.Link{}, errors.New("unknown format")
	}
	redirect, err := strconv.Atoi(parts[1])
	if err != nil {
		return shortener.Link{}, fmt.Errorf("redirect: %w", err)
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return shortener.Link{}, fmt.Errorf("expiry: %w", err)
	}
	l := shortener.Link{Code: code, URL: parts[3], Redirect: redirect}
	if exp != 0 {
		l.ExpiresAt = time.UnixMilli(exp).UTC()
	}
	return l, nil
}
