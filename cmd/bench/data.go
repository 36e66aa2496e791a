package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"shortener"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"shortener/cache"
	"shortener/internal/stack"
	"shortener/sentinel"
	"shortener/store"
)

// The bench's links: bench-0000000 … bench-(n-1), loaded straight into
// MySQL with negative IDs (Snowflake never issues one), so they never
// collide with links the apps create and a second run finds them there.
const codePrefix = "bench-"

func benchCode(i int) string { return fmt.Sprintf("%s%07d", codePrefix, i) }

func benchLink(i int, created time.Time) shortener.Link {
	code := benchCode(i)
	return shortener.Link{ID: -int64(i + 1), Code: code, URL: "https://example.com/" + code, Redirect: 302, CreatedAt: created}
}

// picker draws link indexes in [0, n).
type picker func() int

// uniform draws every link alike.
func uniform(rng *rand.Rand, n int) picker { return func() int { return rng.IntN(n) } }

// zipf draws link ranks by Zipf's law with exponent s (> 1), as the chaos
// load does, and spreads the ranks over the links with a fixed
// permutation, so that the most popular links are not simply the first
// ones (which the hot rows use).
func zipf(rng *rand.Rand, s float64, n int) picker {
	z := rand.NewZipf(rng, s, 1, uint64(n-1))
	return func() int { return permute(int(z.Uint64()), n) }
}

// permute maps rank r to a link index, one to one on [0, n) unless 7919
// divides n: 7919 is prime.
func permute(r, n int) int { return int((uint64(r)*7919 + 13) % uint64(n)) }

// writeCodes writes count codes drawn by pick to w, one a line, the format
// bench.lua reads.
func writeCodes(w io.Writer, count int, pick picker) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for range count {
		bw.WriteString(benchCode(pick()))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeCodesFile is writeCodes into a new file at path.
func writeCodesFile(path string, count int, pick picker) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write codes: %w", err)
	}
	if err := writeCodes(f, count, pick); err != nil {
		f.Close()
		return fmt.Errorf("write codes %s: %w", path, err)
	}
	return f.Close()
}

// loadLinks makes sure links 0 … n-1 are in MySQL, importing them unless
// the first and last are there already. It reports how many it inserted.
func loadLinks(ctx context.Context, st *store.Store, n int, progress io.Writer) (int64, error) {
	_, errFirst := st.Link(ctx, benchCode(0))
	_, errLast := st.Link(ctx, benchCode(n-1))
	if errFirst == nil && errLast == nil {
		return 0, nil
	}
	if e := errors.Join(errFirst, errLast); !errors.Is(e, shortener.ErrNotFound) {
		return 0, fmt.Errorf("look for bench links: %w", e)
	}
	created := time.Now().UTC()
	var total int64
	const chunk = 50_000
	for start := 0; start < n; start += chunk {
		links := make([]shortener.Link, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			links = append(links, benchLink(i, created))
		}
		k, err := st.Import(ctx, links)
		total += k
		if err != nil {
			return total, err
		}
		fmt.Fprintf(progress, "\rbulk load: %d/%d links", min(start+chunk, n), n)
	}
	fmt.Fprintln(progress)
	return total, nil
}

// redisTier makes Redis cold or warm for the bench's links: cold by
// deleting them from the master (the replicas follow), warm by writing
// every one through cache.Cache.AddMany, the apps' own fill path and format.
type redisTier struct {
	master *redis.Client
	cache  *cache.Cache
}

func newRedisTier(s *stack.Stack, st *store.Store) (*redisTier, error) {
	reg := prometheus.NewRegistry()
	// The bench's own client: generous deadlines and a breaker that does
	// not open on a few slow calls of a busy machine, since this fills a
	// cache ahead of a measurement, and no lookup waits on it.
	c, err := cache.New(cache.Config{
		Redis: sentinel.Config{
			MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs(),
			Password: s.RedisPassword(), SentinelPassword: s.SentinelPassword(),
			Timeout: 2 * time.Second, PoolSize: 64,
			BreakerFailures: 1000, BreakerWindow: 1000, BreakerDelay: time.Second, BreakerSuccesses: 1,
		},
		TTL:    24 * time.Hour,
		L1Size: 1, L1Bytes: 1 << 20, L1TTL: time.Second, L1UnsyncedTTL: time.Second, L1NegativeTTL: time.Second,
		ReplayInterval: 100 * time.Millisecond, InvalidationGrace: time.Second, // never run: it has no outbox
	}, st, nil, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		return nil, err
	}
	master := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs(),
		Password: s.RedisPassword(), SentinelPassword: s.SentinelPassword(),
		ReadTimeout: 10 * time.Second,
	})
	return &redisTier{master: master, cache: c}, nil
}

func (t *redisTier) close() { t.master.Close(); t.cache.Close() }

// benchKeys matches the Redis keys of the bench's links: cache's key for a
// code is "link:" + code (cache/redis.go).
const benchKeys = "link:" + codePrefix + "*"

// cold deletes every bench link from Redis and returns how many it found.
func (t *redisTier) cold(ctx context.Context) (int, error) {
	var cursor uint64
	n := 0
	for {
		keys, next, err := t.master.Scan(ctx, cursor, benchKeys, 10_000).Result()
		if err != nil {
			return n, fmt.Errorf("make redis cold: scan: %w", err)
		}
		if len(keys) > 0 {
			if err := t.master.Unlink(ctx, keys...).Err(); err != nil {
				return n, fmt.Errorf("make redis cold: unlink: %w", err)
			}
			n += len(keys)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// warm writes links 0 … n-1 to Redis with cache.Cache.AddMany, four
// writers of pipelines at once, and returns how many Redis took.
func (t *redisTier) warm(ctx context.Context, n int) (int64, error) {
	const chunk = 20_000
	var next, took atomic.Int64
	var wg sync.WaitGroup
	created := time.Now().UTC()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			links := make([]shortener.Link, 0, chunk)
			for ctx.Err() == nil {
				start := int(next.Add(chunk)) - chunk
				if start >= n {
					return
				}
				links = links[:0]
				for i := start; i < min(start+chunk, n); i++ {
					links = append(links, benchLink(i, created))
				}
				took.Add(int64(t.cache.AddMany(ctx, links)))
			}
		}()
	}
	wg.Wait()
	return took.Load(), ctx.Err()
}

// keysString is n with thousands separators, for progress lines.
func keysString(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
