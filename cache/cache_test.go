package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"shortener"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/sentinel"
)

// fakeOrigin serves links from memory and counts the calls.
type fakeOrigin struct {
	links map[string]shortener.Link
	calls atomic.Int64
}

var _ Origin = (*fakeOrigin)(nil)

func (f *fakeOrigin) Link(_ context.Context, code string) (shortener.Link, error) {
	f.calls.Add(1)
	l, ok := f.links[code]
	if !ok {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return l, nil
}

func TestMain(m *testing.M) {
	// go-redis logs every refused dial; the offline tests make many.
	RouteLibraryLogs(quietLog())
	os.Exit(m.Run())
}

func TestEncodeDecode(t *testing.T) {
	exp := time.UnixMilli(1_800_000_000_123).UTC()
	for _, l := range []shortener.Link{
		{Code: "a", URL: "https://example.com/a b?c=d e", Redirect: 302},
		{Code: "b", URL: "https://example.com/", Redirect: 308, ExpiresAt: exp, ID: 42},
		{Code: "c", URL: "https://example.com/x", Redirect: 302, ID: 7, Disabled: true},
		{Code: "d", URL: "https://example.com/y", Redirect: 307, ID: 8, MaxVisits: 3,
			PasswordHash: "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
	} {
		got, err := decode(l.Code, encode(l))
		if err != nil || !reflect.DeepEqual(got, l) {
			t.Errorf("decode(encode(%+v)) = %+v, %v", l, got, err)
		}
	}
	// An entry an earlier version wrote.
	if got, err := decode("e", "v1 301 0 https://example.com/a b"); err != nil ||
		!reflect.DeepEqual(got, shortener.Link{Code: "e", URL: "https://example.com/a b", Redirect: 301}) {
		t.Errorf("decode(v1) = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "v1", "v3 302 0 https://x", "v1 x 0 https://x", "v1 302 y https://x",
		"v2 302 0 1 - 0 https://x", "v2 302 0 x - 0 - https://x", "v2 302 0 1 q 0 - https://x", "v2 302 0 1 - z - https://x"} {
		if _, err := decode("c", bad); err == nil {
			t.Errorf("decode(%q) succeeded, want an error", bad)
		}
	}
}

// fakeOutbox is an in-memory Outbox.
type fakeOutbox struct {
	mu   sync.Mutex
	invs []shortener.Invalidation
}

func (f *fakeOutbox) PendingInvalidations(context.Context) ([]shortener.Invalidation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]shortener.Invalidation(nil), f.invs...), nil
}

func (f *fakeOutbox) DoneInvalidations(_ context.Context, codes []string, grace time.Duration) error {
	before := time.Now().Add(-grace)
	f.mu.Lock()
	defer f.mu.Unlock()
	done := map[string]bool{}
	for _, c := range codes {
		done[c] = true
	}
	kept := f.invs[:0]
	for _, inv := range f.invs {
		if !done[inv.Code] || !inv.CreatedAt.Before(before) {
			kept = append(kept, inv)
		}
	}
	f.invs = kept
	return nil
}

func testLinks(n int) *fakeOrigin {
	origin := &fakeOrigin{links: map[string]shortener.Link{}}
	for i := range n {
		code := fmt.Sprintf("c%d", i)
		origin.links[code] = shortener.Link{Code: code, URL: "https://example.com/" + code, Redirect: 302}
	}
	return origin
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is a complete Config, the production values of cmd/shortener
// but for the Sentinel addresses (a closed port), changed by each mod.
func testConfig(mods ...func(*Config)) Config {
	cfg := Config{
		Redis: sentinel.Config{
			MasterName: "shortener", SentinelAddrs: []string{"127.0.0.1:1"},
			Timeout: testTimeout, PoolSize: 32,
			BreakerFailures: 5, BreakerWindow: 10, BreakerDelay: time.Second, BreakerSuccesses: 3,
		},
		TTL:    24 * time.Hour,
		L1Size: 100_000, L1Bytes: 48 << 20, L1TTL: 5 * time.Minute, L1UnsyncedTTL: 5 * time.Second, L1NegativeTTL: time.Second,
		ReplayInterval: 500 * time.Millisecond, InvalidationGrace: 3 * time.Second,
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	return cfg
}

func TestConfigValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatalf("complete config: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		// The Redis settings are sentinel.Config's to check (its own
		// tests list them); one row shows that they are checked.
		{"no sentinels", func(c *Config) { c.Redis.SentinelAddrs = nil }, "SentinelAddrs are required"},
		{"zero TTL", func(c *Config) { c.TTL = 0 }, "TTL must be positive"},
		{"zero L1 TTL", func(c *Config) { c.L1TTL = 0 }, "L1TTL must be positive"},
		{"zero negative TTL", func(c *Config) { c.L1NegativeTTL = 0 }, "L1NegativeTTL must be positive"},
		{"zero replay", func(c *Config) { c.ReplayInterval = 0 }, "ReplayInterval must be positive"},
		{"zero unsynced TTL", func(c *Config) { c.L1UnsyncedTTL = 0 }, "L1UnsyncedTTL must be positive"},
		{"replay too slow to stay in sync", func(c *Config) { c.ReplayInterval = 1500 * time.Millisecond },
			"ReplayInterval must be less than half the InvalidationGrace (3s), got 1.5s"},
		{"zero grace", func(c *Config) { c.InvalidationGrace = 0 }, "InvalidationGrace must be positive"},
		{"zero L1 size", func(c *Config) { c.L1Size = 0 }, "L1Size must be positive"},
		{"L1 bytes below an entry", func(c *Config) { c.L1Bytes = 100 }, "L1Bytes must be at least 260 (one entry), got 100"},
	}
	for _, tt := range tests {
		_, err := New(testConfig(tt.mod), testLinks(1), nil, quietLog(), prometheus.NewRegistry())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// newOfflineCache is a Cache whose Redis is a closed port: every Redis
// call fails at once, which is all the unit tests of L1 and singleflight
// need.
func newOfflineCache(tb testing.TB, origin Origin, cfg Config) *Cache {
	tb.Helper()
	c, err := New(cfg, origin, nil, quietLog(), prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// newTestCache is a running cache over 20 links, on Redis and sentinels
// of the test's own (no MariaDB: the origin is a fake). Tests cannot
// share one: the cache names its keys (link:, gone:, ratelimit:) and its
// invalidation channel without a prefix, and some tests break Redis.
func newTestCache(tb testing.TB, cfg Config) (*Cache, *fakeOrigin, *stack.Stack) {
	tb.Helper()
	return newTestCacheHooked(tb, cfg, func(*Cache) {})
}

// onStack points cfg at s's sentinels, with s's passwords: every Redis
// node and sentinel of a stack requires one.
func onStack(cfg *Config, s *stack.Stack) {
	cfg.Redis.MasterName, cfg.Redis.SentinelAddrs = s.MasterName(), s.SentinelAddrs()
	cfg.Redis.Password, cfg.Redis.SentinelPassword = s.RedisPassword(), s.SentinelPassword()
}

// newTestCacheHooked is newTestCache with hook run on the cache before it
// starts (to set test hooks without a race).
func newTestCacheHooked(tb testing.TB, cfg Config, hook func(*Cache)) (*Cache, *fakeOrigin, *stack.Stack) {
	tb.Helper()
	s := stacktest.StartRedis(tb)
	origin := testLinks(20)
	onStack(&cfg, s)
	c, err := New(cfg, origin, &fakeOutbox{}, quietLog(), prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	hook(c)
	runCache(tb, c)
	return c, origin, s
}

const testTimeout = 50 * time.Millisecond

func count(c *prometheus.CounterVec, labels ...string) float64 {
	return testutil.ToFloat64(c.WithLabelValues(labels...))
}

func TestL1AndNegativeEntries(t *testing.T) {
	origin := testLinks(3)
	c := newOfflineCache(t, origin, testConfig(func(c *Config) { c.L1TTL, c.L1NegativeTTL = time.Hour, time.Hour }))
	ctx := context.Background()
	for range 10 {
		if l, err := c.Resolve(ctx, "c1"); err != nil || l.URL != "https://example.com/c1" {
			t.Fatalf("Resolve(c1) = %+v, %v", l, err)
		}
		if _, err := c.Resolve(ctx, "missing"); !errors.Is(err, shortener.ErrNotFound) {
			t.Fatalf("Resolve(missing) error = %v, want ErrNotFound", err)
		}
	}
	if got := origin.calls.Load(); got != 2 {
		t.Errorf("20 lookups of 2 codes reached the origin %d times, want 2 (L1 keeps hits and misses)", got)
	}
	if got := count(c.m.l1, "hit"); got != 9 {
		t.Errorf("L1 hits = %v, want 9", got)
	}
	if got := count(c.m.l1, "negative_hit"); got != 9 {
		t.Errorf("L1 negative hits = %v, want 9", got)
	}
	c.l1.drop("c1")
	if _, err := c.Resolve(ctx, "c1"); err != nil || origin.calls.Load() != 3 {
		t.Errorf("after drop: origin calls = %d, %v; want 3", origin.calls.Load(), err)
	}
}

// gatedOrigin blocks every call until the gate opens, so concurrent misses
// pile up on one code.
type gatedOrigin struct {
	fakeOrigin
	gate chan struct{}
}

func (g *gatedOrigin) Link(ctx context.Context, code string) (shortener.Link, error) {
	<-g.gate
	return g.fakeOrigin.Link(ctx, code)
}

func TestSingleflight(t *testing.T) {
	g := &gatedOrigin{fakeOrigin: *testLinks(1), gate: make(chan struct{})}
	c := newOfflineCache(t, g, testConfig())
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Resolve(context.Background(), "c0")
			errs <- err
		}()
	}
	// Open the gate once every lookup is past Redis, on its way to (or
	// waiting on) the one query.
	poll.Until(t, "every lookup past Redis", func() error {
		if past := count(c.m.redis, roleReplica, resultError) + count(c.m.redis, roleReplica, resultSkipped); past < n {
			return fmt.Errorf("%v of %d past Redis", past, n)
		}
		return nil
	})
	close(g.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A lookup may still be between Redis and the flight when the gate
	// opens, so allow one straggler's query; without singleflight it is n.
	calls, shared := g.calls.Load(), testutil.ToFloat64(c.m.shared)
	if calls > 2 || shared < n-1 {
		t.Errorf("%d concurrent misses of one code: %d origin queries, %v shared; want 1 (or 2) queries and the rest shared", n, calls, shared)
	}
}

func TestPendingSetReplace(t *testing.T) {
	var p pendingSet
	now := time.Unix(1000, 0)
	p.add("local", now)
	added := p.replace([]shortener.Invalidation{{Code: "a"}, {Code: "b"}, {Code: "a"}}, now, time.Second)
	if len(added) != 2 || !p.has("a") || !p.has("b") || !p.has("local") {
		t.Fatalf("replace: added %v, set a=%v b=%v local=%v; want a, b added and local kept", added, p.has("a"), p.has("b"), p.has("local"))
	}
	added = p.replace([]shortener.Invalidation{{Code: "b"}}, now.Add(2*time.Second), time.Second)
	if len(added) != 0 || p.has("a") || p.has("local") || !p.has("b") {
		t.Fatalf("second replace: added %v, a=%v local=%v b=%v; want only b left", added, p.has("a"), p.has("local"), p.has("b"))
	}
}

func TestOnSentinelEvent(t *testing.T) {
	c := newOfflineCache(t, testLinks(1), testConfig())
	ctx := t.Context()
	c.onSentinelEvent(ctx, "+odown", "master other 127.0.0.1 1 #quorum 2/2")
	if r, w := c.BreakerStates(); w != "closed" || r != "closed" {
		t.Fatalf("odown of another master moved breakers: read %s write %s", r, w)
	}
	c.onSentinelEvent(ctx, "+odown", "master shortener 127.0.0.1 1 #quorum 2/2")
	if r, w := c.BreakerStates(); w != "open" || r != "closed" {
		t.Fatalf("after +odown: read %s write %s, want read closed, write open", r, w)
	}
	// Ports 1 and 2 are closed (a real Redis may listen on 6380-6382 of
	// this machine): the write client never reaches the new master, so
	// only the read breaker closes.
	c.read.Breaker().Open()
	c.onSentinelEvent(ctx, "+switch-master", "shortener 127.0.0.1 1 127.0.0.1 2")
	if r, w := c.BreakerStates(); w != "open" || r != "closed" {
		t.Fatalf("after +switch-master with no master reachable: read %s write %s, want read closed, write open", r, w)
	}
	if got := count(c.m.events, "switch_master"); got != 1 {
		t.Errorf("switch_master events = %v, want 1", got)
	}
	// A just-promoted master that does not answer is down indeed.
	c.write.Breaker().Close()
	c.onSentinelEvent(ctx, "+odown", "master shortener 127.0.0.1 2 #quorum 2/2")
	if w := c.write.Breaker().State(); w != "open" {
		t.Fatalf("after +odown of a promoted master that does not answer: write %s, want open", w)
	}
}

// TestSentinelEventsOnRealMaster plays the events of a failover onto the
// stack's master as it is: +switch-master closes the write breaker once
// the write client reaches a master; an +odown of a master promoted
// moments ago that answers leaves writes on; one past promotionGrace
// stops them.
func TestSentinelEventsOnRealMaster(t *testing.T) {
	var now atomic.Pointer[time.Time]
	// A breaker delay longer than the test: only the event can close the
	// write breaker (its own probes wait out the delay).
	c, _, s := newTestCacheHooked(t, testConfig(func(c *Config) { c.Redis.BreakerDelay = time.Hour }), func(c *Cache) {
		c.now = func() time.Time {
			if p := now.Load(); p != nil {
				return *p
			}
			return time.Now()
		}
	})
	ctx := t.Context()
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(master.Addr())
	c.write.Breaker().Open()
	c.onSentinelEvent(ctx, "+switch-master", "shortener 127.0.0.1 1 "+host+" "+port)
	poll.Until(t, "the write breaker to close after +switch-master to a healthy master", func() error {
		if !c.write.Breaker().IsClosed() {
			return fmt.Errorf("write breaker %s", c.write.Breaker().State())
		}
		return nil
	})
	odown := "master shortener " + host + " " + port + " #quorum 2/2"
	c.onSentinelEvent(ctx, "+odown", odown)
	if w := c.write.Breaker().State(); w != "closed" {
		t.Fatalf("+odown of a just-promoted master that answers: write %s, want closed", w)
	}
	later := time.Now().Add(promotionGrace)
	now.Store(&later)
	c.onSentinelEvent(ctx, "+odown", odown)
	if w := c.write.Breaker().State(); w != "open" {
		t.Fatalf("+odown %v after the promotion: write %s, want open", promotionGrace, w)
	}
}

// TestCacheAside walks the tiers on real servers: origin, then L1, then
// (with L1 expired) a Redis replica.
func TestCacheAside(t *testing.T) {
	c, origin, _ := newTestCache(t, testConfig(func(c *Config) { c.L1TTL = 100 * time.Millisecond }))
	ctx := context.Background()
	if _, err := c.Resolve(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	// The fill runs off the lookup's path; wait for it. (On a loaded
	// machine the very first Redis call may time out: no fill follows an
	// error, so lookups go on until one missed cleanly.)
	poll.Until(t, "the first lookup's fill", func() error {
		if count(c.m.fills, "ok") >= 1 {
			return nil
		}
		c.Resolve(ctx, "c1") //nolint:errcheck // checked above and below
		return fmt.Errorf("fills ok %v (skipped %v, error %v, dropped %v), redis misses %v", count(c.m.fills, "ok"), count(c.m.fills, "skipped"), count(c.m.fills, "error"), count(c.m.fills, "dropped"), count(c.m.redis, roleReplica, resultMiss))
	})
	calls0 := origin.calls.Load()
	// Poll until a lookup is answered by Redis (L1 expired, replica has
	// the fill); the origin must not be asked again.
	poll.Until(t, "three lookups answered by a replica", func() error {
		if hits := count(c.m.redis, roleReplica, resultHit); hits < 3 {
			if l, err := c.Resolve(ctx, "c1"); err != nil || l.URL != "https://example.com/c1" {
				t.Fatalf("Resolve = %+v, %v", l, err)
			}
			return fmt.Errorf("%v replica hits", hits)
		}
		return nil
	})
	if got := origin.calls.Load() - calls0; got > 1 {
		t.Errorf("origin calls after the fill = %d, want at most 1 (if a replica lagged the fill)", got)
	}
	// Misses are answers: they leave the error count and the breaker alone.
	errs0, misses0 := count(c.m.redis, roleReplica, resultError), count(c.m.redis, roleReplica, resultMiss)
	for i := range 20 {
		if _, err := c.Resolve(ctx, fmt.Sprintf("nope%d", i)); !errors.Is(err, shortener.ErrNotFound) {
			t.Fatalf("unknown code: error = %v, want ErrNotFound", err)
		}
	}
	misses := count(c.m.redis, roleReplica, resultMiss) - misses0
	if errs := count(c.m.redis, roleReplica, resultError) - errs0; errs > 0 || misses < 19 {
		t.Errorf("20 unknown codes: %v Redis misses, %v errors; want misses, not failures", misses, errs)
	}
	if r, _ := c.BreakerStates(); r != "closed" {
		t.Errorf("read breaker %s after misses, want closed", r)
	}
}

// TestNoReplicaReachable kills both replicas: lookups never fail (they
// fall back to MySQL), and once the sentinels mark the replicas down,
// go-redis reads from the master, which the test sees in the master's own
// keyspace_hits.
func TestNoReplicaReachable(t *testing.T) {
	c, origin, s := newTestCache(t, testConfig(func(c *Config) { c.L1TTL = time.Millisecond }))
	ctx := t.Context()
	for code := range origin.links {
		if _, err := c.Resolve(ctx, code); err != nil {
			t.Fatal(err)
		}
	}
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Redis() {
		if p.Name != master.Name {
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	mc := redis.NewClient(&redis.Options{Addr: master.Addr(), Password: s.RedisPassword()})
	defer mc.Close()
	hitsOnMaster := func() int {
		info, err := mc.Info(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "keyspace_hits:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatal("no keyspace_hits in INFO stats")
		return 0
	}
	start, i := hitsOnMaster(), 0
	poll.Until(t, "reads to reach the master after the replicas died", func() error {
		if hits := hitsOnMaster(); hits < start+20 {
			code := fmt.Sprintf("c%d", i%20)
			i++
			if l, err := c.Resolve(ctx, code); err != nil || l.URL != origin.links[code].URL {
				t.Fatalf("Resolve(%s) with no replica = %+v, %v", code, l, err)
			}
			return fmt.Errorf("%d of 20 hits on the master (breakers %v)", hits-start, fmt.Sprint(c.BreakerStates()))
		}
		return nil
	})
}

// TestWriteBreakerRecoversWithoutEvents opens the write breaker by hand
// (as a burst of failed fills would) and checks that it closes on its own
// probes, with no Sentinel event: fills are skipped while it is open, so
// nothing else would give it trial calls.
func TestWriteBreakerRecoversWithoutEvents(t *testing.T) {
	c, _, _ := newTestCache(t, testConfig(func(c *Config) { c.Redis.BreakerDelay, c.ReplayInterval = 200*time.Millisecond, 50*time.Millisecond }))
	c.write.Breaker().Open()
	poll.Until(t, "the write breaker to close with a healthy master", func() error {
		if !c.write.Breaker().IsClosed() {
			return fmt.Errorf("write breaker %s", c.write.Breaker().State())
		}
		return nil
	})
	if got := count(c.m.events, "switch_master"); got != 0 {
		t.Fatalf("a Sentinel event (%v) closed the breaker; this test wants the probes to", got)
	}
}

// TestAddMany warms Redis in bulk: every link but the expired one lands,
// in more than one pipeline, and lookups then find them on a replica
// without asking the origin.
func TestAddMany(t *testing.T) {
	c, origin, _ := newTestCache(t, testConfig())
	ctx := context.Background()
	links := make([]shortener.Link, 0, addBatch+5)
	for i := range addBatch + 4 {
		code := fmt.Sprintf("bulk%d", i)
		links = append(links, shortener.Link{Code: code, URL: "https://example.com/" + code, Redirect: 302})
	}
	links = append(links, shortener.Link{Code: "expired", URL: "https://example.com/", ExpiresAt: time.Now().Add(-time.Hour)})
	// The first calls may meet a cold pool, or a deadline on a busy
	// machine: AddMany is idempotent, so call it until one call took
	// every batch, and check that call's counts.
	poll.Until(t, "one AddMany to take every batch", func() error {
		skipped := count(c.m.fills, "skipped")
		if got := c.AddMany(ctx, links); got != addBatch+4 {
			return fmt.Errorf("AddMany took %d, want %d", got, addBatch+4)
		}
		if got := count(c.m.fills, "skipped") - skipped; got != 1 {
			t.Errorf("skipped fills = %v, want 1 (the expired link)", got)
		}
		return nil
	})
	// Poll until the replica has the last one: replication is asynchronous.
	for _, code := range []string{"bulk0", fmt.Sprintf("bulk%d", addBatch+3)} {
		poll.Until(t, code+" on a replica", func() error {
			l, res := c.fromRedis(code)
			if res != resultHit {
				return fmt.Errorf("lookup: %s", res)
			}
			if l.URL != "https://example.com/"+code || l.Redirect != 302 {
				t.Errorf("%s from Redis: got %+v", code, l)
			}
			return nil
		})
	}
	if got := origin.calls.Load(); got != 0 {
		t.Errorf("origin calls = %d, want 0", got)
	}
}

// TestL1TTLJitter: an L1 entry lives between four fifths of the TTL and
// the TTL, at random, so links filled together do not expire together.
func TestL1TTLJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 100 {
		d := jittered(5 * time.Second)
		if d <= 4*time.Second || d > 5*time.Second {
			t.Fatalf("jittered(5s) = %s, want in (4s, 5s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 jittered TTLs took %d values; they should spread", len(seen))
	}
}

// TestStallProbe: the probe observes a timer's lateness every tick into
// shortener_stall_seconds, in the deadline's buckets (StallBound among
// them), and stops with its context.
func TestStallProbe(t *testing.T) {
	cfg := testConfig()
	c := newOfflineCache(t, testLinks(1), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.probeStalls(ctx); close(done) }()
	poll.Until(t, "three stall observations", func() error {
		if n := histogramCount(t, c.m.stalls); n < 3 {
			return fmt.Errorf("%d observations", n)
		}
		return nil
	})
	cancel()
	<-done
	var m dto.Metric
	if err := c.m.stalls.Write(&m); err != nil {
		t.Fatal(err)
	}
	bound := StallBound(cfg.Redis.Timeout)
	if !slices.ContainsFunc(m.GetHistogram().GetBucket(), func(b *dto.Bucket) bool { return b.GetUpperBound() == bound }) {
		t.Errorf("buckets %v lack StallBound %g", m.GetHistogram().GetBucket(), bound)
	}
}

func histogramCount(tb testing.TB, h prometheus.Histogram) uint64 {
	tb.Helper()
	return histogramOf(tb, h).GetSampleCount()
}

func histogramSum(tb testing.TB, h prometheus.Histogram) float64 {
	tb.Helper()
	return histogramOf(tb, h).GetSampleSum()
}

func histogramOf(tb testing.TB, h prometheus.Histogram) *dto.Histogram {
	tb.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetHistogram()
}
