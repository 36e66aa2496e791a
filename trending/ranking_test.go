package trending

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"shortener"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/sentinel"
)

func TestMain(m *testing.M) {
	// go-redis logs every refused or timed-out dial; the outage tests make
	// many on purpose.
	sentinel.RouteLibraryLogs(quietLog())
	os.Exit(stacktest.Main(m))
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// links is a fake lookup path: every code "l<n>" is a live link unless
// deleted.
type links struct {
	mu      sync.Mutex
	deleted map[string]bool
}

var _ Resolver = (*links)(nil)

func (f *links) Resolve(_ context.Context, code string) (shortener.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := shortener.Link{Code: code, URL: "https://example.com/" + code, Redirect: 302}
	if f.deleted[code] {
		l.DeletedAt = time.Unix(1, 0)
	}
	return l, nil
}

func (f *links) delete(code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleted == nil {
		f.deleted = map[string]bool{}
	}
	f.deleted[code] = true
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// stackConfig points a Config at s's Sentinels, with s's passwords, the
// configuration's defaults and a key prefix of its own, so tests sharing
// a stack do not see each other's keys.
func stackConfig(tb testing.TB, s *stack.Stack, node string) Config {
	return Config{
		Redis: sentinel.Config{
			MasterName:       s.MasterName(),
			SentinelAddrs:    s.SentinelAddrs(),
			Password:         s.RedisPassword(),
			SentinelPassword: s.SentinelPassword(),
			Timeout:          50 * time.Millisecond,
			PoolSize:         4,
			BreakerFailures:  5,
			BreakerWindow:    10,
			BreakerDelay:     time.Second,
			BreakerSuccesses: 3,
		},
		Node:      node,
		Prefix:    stacktest.KeyPrefix(tb),
		Tick:      200 * time.Millisecond,
		Refresh:   time.Second,
		Capacity:  1_000,
		MaxQueued: 1_000_000,
	}
}

// offlineRedis is a complete sentinel.Config, the configuration's
// defaults but for the Sentinel address: a closed port, so that every
// Redis call fails at once and the answers are the local ones.
func offlineRedis() sentinel.Config {
	return sentinel.Config{
		MasterName: "shortener", SentinelAddrs: []string{"127.0.0.1:1"},
		Timeout: 50 * time.Millisecond, PoolSize: 1,
		BreakerFailures: 5, BreakerWindow: 10, BreakerDelay: time.Second, BreakerSuccesses: 3,
	}
}

func newRanking(tb testing.TB, cfg Config, res Resolver, now func() time.Time) *Ranking {
	tb.Helper()
	r, err := New(cfg, res, now, quietLog(), prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// redisCounts reads window w's counts straight from Redis.
func redisCounts(tb testing.TB, r *Ranking, w string, now time.Time) map[string]uint64 {
	tb.Helper()
	i, _ := windowIndex(w)
	// The breaker may be forced open by the test; read around it.
	win := windows()[i]
	first := win.first(now)
	out := map[string]uint64{}
	for b := first; b < first+win.buckets; b++ {
		zs, err := r.master.Redis().ZRangeWithScores(context.Background(), win.res.key(r.cfg.Prefix, b), 0, -1).Result()
		if err != nil {
			tb.Fatalf("read %s: %v", w, err)
		}
		for _, z := range zs {
			out[z.Member.(string)] += uint64(z.Score)
		}
	}
	return out
}

// TestMergeBackExactlyOnceAcrossCrash counts clicks during an outage,
// starts the merge-back, and kills the merging instance after it applied
// some batches (the last one with its reply lost). A new instance started
// on the same spool finishes the merge: every click is in Redis exactly
// once.
func TestMergeBackExactlyOnceAcrossCrash(t *testing.T) {
	s := stacktest.Shared(t)
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC)}
	cfg := stackConfig(t, s, "app1")
	cfg.Spool = filepath.Join(t.TempDir(), "trending.spool")
	cfg.Redis.BreakerDelay = time.Hour // the test opens and closes it
	// The first call dials through the Sentinels and loads the script;
	// on a loaded machine under -race that can pass 50 ms, and this test
	// is about exactly-once, not deadlines.
	cfg.Redis.Timeout = 2 * time.Second

	r1 := newRanking(t, cfg, &links{}, clk.now)
	r1.master.Breaker().Open()
	// 1,500 link-minutes: three batches.
	want := map[string]uint64{}
	for m := range 5 {
		var cs []shortener.Click
		for i := range 300 {
			code := fmt.Sprintf("l%d", i)
			for range 1 + (300-i)/30 {
				cs = append(cs, shortener.Click{Code: code, At: clk.now().Add(-time.Duration(m) * time.Minute)})
				want[code]++
			}
		}
		r1.Observe(cs)
	}
	r1.step(ctx) // breaker open: everything stays queued and spooled
	batches := len(r1.q.batches)
	if batches != 3 {
		t.Fatalf("%d batches queued, want 3", batches)
	}
	if _, err := os.Stat(cfg.Spool); err != nil {
		t.Fatalf("spool not written during the outage: %v", err)
	}

	// Redis is back; the merge starts, then the instance dies: one batch
	// applied and acknowledged, the second applied with its reply lost,
	// and the spool (written before the merge) never updated.
	r1.master.Breaker().Close()
	if err := r1.apply(ctx, r1.q.head()); err != nil {
		t.Fatal(err)
	}
	r1.q.pop()
	if err := r1.apply(ctx, r1.q.head()); err != nil {
		t.Fatal(err)
	}
	r1.Close()

	r2 := newRanking(t, cfg, &links{}, clk.now)
	if got := len(r2.q.batches); got != batches {
		t.Fatalf("restart replays %d batches, want %d", got, batches)
	}
	r2.step(ctx)
	r2.step(ctx) // a second round must change nothing
	if n := len(r2.q.batches); n != 0 {
		t.Fatalf("%d batches left after the merge", n)
	}
	if _, err := os.Stat(cfg.Spool); !os.IsNotExist(err) {
		t.Errorf("spool still there after the merge: %v", err)
	}
	if got, want := testutil.ToFloat64(r2.m.batches.WithLabelValues("duplicate")), 2.0; got != want {
		t.Errorf("batches skipped as already applied: %v, want %v", got, want)
	}
	got := redisCounts(t, r2, "5m", clk.now())
	for code, n := range want {
		if got[code] != n {
			t.Errorf("%s: Redis counts %d clicks, want %d", code, got[code], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Redis ranks %d links, want %d", len(got), len(want))
	}
	top, _ := r2.Top("5m", 3)
	if top.Source != sourceRedis || len(top.Links) != 3 || top.Links[0].Link.Code != "l0" || top.Links[0].Clicks != int64(want["l0"]) {
		t.Errorf("Top(5m, 3) = %+v, want l0 (%d clicks) first, from redis", top, want["l0"])
	}
}

// TestOutage freezes every Redis node under a running Ranking: answers
// turn local and stay right, a link deleted during the outage disappears
// at once, and after the thaw the outage's clicks are merged into Redis
// (exactly: the counts equal the clicks sent) and the deleted link is
// gone from Redis's sets too.
func TestOutage(t *testing.T) {
	s := stacktest.StartRedis(t) // a stack of its own: it stops every Redis node
	ctx, cancel := context.WithCancel(context.Background())
	cfg := stackConfig(t, s, "app1")
	cfg.Tick, cfg.Refresh = 20*time.Millisecond, 100*time.Millisecond
	cfg.Redis.BreakerDelay = 200 * time.Millisecond
	res := &links{}
	r := newRanking(t, cfg, res, time.Now)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	sent := map[string]uint64{}
	click := func(rounds int) {
		for range rounds {
			var cs []shortener.Click
			for i := range 30 {
				for range 30 - i {
					code := fmt.Sprintf("l%d", i)
					cs = append(cs, shortener.Click{Code: code, At: time.Now()})
					sent[code]++
				}
			}
			r.Observe(cs)
		}
	}
	// waitFor clicks while it waits, so that the ranking has news to
	// serve whichever way it answers.
	waitFor := func(what string, ok func(shortener.Trending) bool) shortener.Trending {
		t.Helper()
		var top shortener.Trending
		poll.Until(t, what, func() error {
			var err error
			if top, err = r.Top("5m", 10); err != nil {
				t.Fatal(err)
			}
			if !ok(top) {
				click(1)
				return fmt.Errorf("answer %+v", top)
			}
			return nil
		})
		return top
	}
	first := func(top shortener.Trending) string {
		if len(top.Links) == 0 {
			return ""
		}
		return top.Links[0].Link.Code
	}

	click(5)
	waitFor("a Redis answer", func(top shortener.Trending) bool { return top.Source == sourceRedis && first(top) == "l0" })

	for _, p := range s.Redis() {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	thawed := false
	thaw := func() {
		if thawed {
			return
		}
		thawed = true
		for _, p := range s.Redis() {
			if err := p.Cont(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)
	top := waitFor("a local answer", func(top shortener.Trending) bool { return top.Source == sourceLocal })
	if first(top) != "l0" || len(top.Links) != 10 {
		t.Errorf("local answer %+v, want l0..l9", top)
	}
	res.delete("l0")
	waitFor("l0 gone from the local answer", func(top shortener.Trending) bool {
		return top.Source == sourceLocal && first(top) == "l1"
	})

	thaw()
	waitFor("Redis again", func(top shortener.Trending) bool { return top.Source == sourceRedis })
	// Stop counting, let the last batches land, then compare.
	poll.Until(t, "Redis's counts to equal the clicks sent, l0 gone", func() error {
		got := redisCounts(t, r, "5m", time.Now())
		_, l0 := got["l0"]
		diff := 0
		for code, n := range sent {
			if code != "l0" && got[code] != n {
				diff++
			}
		}
		if diff > 0 || l0 {
			return fmt.Errorf("%d links differ from the clicks sent; l0 still ranked: %v", diff, l0)
		}
		return nil
	})
}

// TestReadLargeWindow reads a 5m window whose buckets hold many more
// codes than a read takes from each (depth), clicked Zipf-like: the
// ranking and every count equal those of the whole window, and Redis
// was never asked for a union (ZUNIONSTORE blocks it for as long as the
// buckets are large).
func TestReadLargeWindow(t *testing.T) {
	s := stacktest.Shared(t)
	ctx := context.Background()
	r := newRanking(t, stackConfig(t, s, "app1"), &links{}, time.Now)
	now := time.Now()
	w := windows()[0]
	const codes = 5 * depth
	first := w.first(now)
	for b := first; b < first+w.buckets; b++ {
		members := make([]redis.Z, codes)
		for i := range codes {
			// A Zipf-like popularity, shuffled a little per bucket.
			n := 1_000_000/(i+1) + (i*7919+int(b)*104729)%97
			members[i] = redis.Z{Member: fmt.Sprintf("l%d", i), Score: float64(n)}
		}
		if err := r.master.Redis().ZAdd(ctx, w.res.key(r.cfg.Prefix, b), members...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	unions := func() string {
		stats, err := r.master.Redis().Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(stats, "\r\n") {
			if strings.HasPrefix(l, "cmdstat_zunionstore:") {
				return l
			}
		}
		return "none"
	}
	before := unions()
	got, err := r.read(ctx, w, now)
	if err != nil {
		t.Fatal(err)
	}
	if after := unions(); after != before {
		t.Errorf("the read ran ZUNIONSTORE: %s, then %s", before, after)
	}
	all := redisCounts(t, r, "5m", now)
	want := make([]Count, 0, len(all))
	for code, n := range all {
		want = append(want, Count{Key: code, Count: n})
	}
	sortCounts(want)
	want = want[:fetch]
	if len(got.counts) != len(want) {
		t.Fatalf("read %d codes, want %d", len(got.counts), len(want))
	}
	for i := range want {
		if got.counts[i] != want[i] {
			t.Fatalf("rank %d: read %+v, want %+v", i+1, got.counts[i], want[i])
		}
	}
}
