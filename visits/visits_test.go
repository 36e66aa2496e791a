package visits

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/sentinel"
)

// stored is a Counter with a fixed count per link ID.
type stored map[int64]int64

func (s stored) ClickTotal(_ context.Context, id int64) (int64, error) { return s[id], nil }

// The tests share one stack: each counts visits of codes of its own,
// under a prefix no other test (or earlier run, with -count) has.
func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func redisConfig(s *stack.Stack) sentinel.Config {
	return sentinel.Config{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs(),
		Password: s.RedisPassword(), SentinelPassword: s.SentinelPassword(),
		Timeout: time.Second, PoolSize: 8, BreakerFailures: 5, BreakerWindow: 10, BreakerDelay: time.Hour, BreakerSuccesses: 1}
}

func newLimiter(t *testing.T, cfg sentinel.Config, counter Counter) *Limiter {
	t.Helper()
	l, err := New(cfg, counter, quiet(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestExactAcrossInstances: two instances take visits of one link at
// once, from many goroutines: exactly MaxVisits are granted, counting
// the clicks MySQL already holds, and every other take is ErrExhausted.
func TestExactAcrossInstances(t *testing.T) {
	s := stacktest.Shared(t)
	counter := stored{1: 3} // three clicks stored before the limit
	a, b := newLimiter(t, redisConfig(s), counter), newLimiter(t, redisConfig(s), counter)
	p := stacktest.KeyPrefix(t)
	link := shortener.Link{ID: 1, Code: p + "max8", MaxVisits: 8}
	var mu sync.Mutex
	granted, exhausted := 0, 0
	var wg sync.WaitGroup
	for i := range 40 {
		l := []*Limiter{a, b}[i%2]
		wg.Go(func() {
			err := l.Take(context.Background(), link)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				granted++
			case errors.Is(err, ErrExhausted):
				exhausted++
			default:
				t.Errorf("take: %v", err)
			}
		})
	}
	wg.Wait()
	if granted != 5 || exhausted != 35 {
		t.Errorf("granted %d, exhausted %d; want 5 (8 less the 3 stored) and 35", granted, exhausted)
	}
	if err := a.Take(context.Background(), shortener.Link{ID: 2, Code: p + "free"}); err != nil {
		t.Errorf("a link without a maximum: %v", err)
	}
}

// TestWithoutRedis: with Redis out of reach an instance grants at most
// Budget visits of a link on its own, never past what it knows of the
// limit (so it never ends a link early, and never lets it run more than
// Budget over), answers ErrUnavailable past its budget, and adds what it
// granted to Redis's counter once Redis answers again.
func TestWithoutRedis(t *testing.T) {
	s := stacktest.Shared(t)
	l := newLimiter(t, redisConfig(s), stored{})
	ctx := context.Background()
	p := stacktest.KeyPrefix(t)
	link := shortener.Link{ID: 7, Code: p + "max10", MaxVisits: 10}
	for range 2 {
		if err := l.Take(ctx, link); err != nil {
			t.Fatal(err)
		}
	}
	l.redis.Breaker().Open() // Redis "unreachable"
	for i := range Budget {
		if err := l.Take(ctx, link); err != nil {
			t.Fatalf("local take %d: %v", i+1, err)
		}
	}
	if err := l.Take(ctx, link); !errors.Is(err, shortener.ErrUnavailable) {
		t.Fatalf("take past the budget: %v, want ErrUnavailable", err)
	}
	// A link this instance saw near its limit: the local grants stop at
	// the limit, not at the budget.
	near := shortener.Link{ID: 8, Code: p + "near", MaxVisits: 5}
	l.mu.Lock()
	l.seen[near.Code] = 4
	l.mu.Unlock()
	if err := l.Take(ctx, near); err != nil {
		t.Fatalf("the last visit of near: %v", err)
	}
	if err := l.Take(ctx, near); !errors.Is(err, ErrExhausted) {
		t.Fatalf("past the last visit of near: %v, want ErrExhausted", err)
	}

	l.redis.Breaker().Close() // Redis back
	if err := l.Take(ctx, link); err != nil {
		t.Fatal(err)
	}
	n, err := l.redis.Redis().Get(ctx, visitsKey(link.Code)).Int64()
	if err != nil || n != 2+Budget+1 {
		t.Errorf("Redis's count after the outage: %d, %v; want %d (2 before, %d without Redis, 1 after)", n, err, 2+Budget+1, Budget)
	}
	for range 10 - 2 - Budget - 1 {
		if err := l.Take(ctx, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Take(ctx, link); !errors.Is(err, ErrExhausted) {
		t.Errorf("the 11th visit: %v, want ErrExhausted", err)
	}
}
