package cache

import (
	"context"
	"errors"
	"fmt"
	"shortener"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
	"shortener/internal/stack"
)

// lockedOrigin is an Origin whose links tests may change while lookups
// run.
type lockedOrigin struct {
	mu    sync.Mutex
	links map[string]shortener.Link
}

func (o *lockedOrigin) Link(_ context.Context, code string) (shortener.Link, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.links[code]
	if !ok {
		return shortener.Link{}, fmt.Errorf("get link %s: %w", code, shortener.ErrNotFound)
	}
	return l, nil
}

func (o *lockedOrigin) set(l shortener.Link) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.links[l.Code] = l
}

// TestFillNeverLandsAfterItsInvalidation forces the interleavings of the
// issue: a lookup reads MySQL, then (before it fills L1) the link is
// deleted, or created, and the cache told; the lookup's stale read must
// not land in L1 after that. Run under -race.
func TestFillNeverLandsAfterItsInvalidation(t *testing.T) {
	now := time.Now()
	live := shortener.Link{Code: "x", URL: "https://example.com/x", Redirect: 302}
	deleted := live
	deleted.DeletedAt = now
	for _, tt := range []struct {
		name   string
		before *shortener.Link // in MySQL when the lookup reads
		after  shortener.Link  // committed while the lookup is in flight
		tell   func(c *Cache, l shortener.Link)
	}{
		{"delete during the read", &live, deleted, func(c *Cache, l shortener.Link) { c.Invalidate(context.Background(), l.Code) }},
		{"create during a miss", nil, live, func(c *Cache, l shortener.Link) { c.Add(context.Background(), l) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			origin := &lockedOrigin{links: map[string]shortener.Link{}}
			if tt.before != nil {
				origin.set(*tt.before)
			}
			c := newOfflineCache(t, origin, testConfig(func(c *Config) { c.L1TTL, c.L1NegativeTTL = time.Hour, time.Hour }))
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			c.afterOrigin = func(string) {
				once.Do(func() { close(entered); <-release })
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.Resolve(context.Background(), "x") //nolint:errcheck // this lookup began before the change: either answer is its own
			}()
			<-entered // the lookup holds what MySQL said before the change
			origin.set(tt.after)
			tt.tell(c, tt.after)
			close(release)
			<-done
			got, err := c.Resolve(context.Background(), "x")
			if err != nil || got.DeletedAt != tt.after.DeletedAt {
				t.Errorf("lookup after the change = %+v, %v; want %+v (the stale read landed in L1)", got, err, tt.after)
			}
		})
	}
}

// TestEveryPendingInvalidationBypasses records more invalidations than
// the old read limit (1,000): every one of them must be pending, so none
// is served from a Redis copy.
func TestEveryPendingInvalidationBypasses(t *testing.T) {
	out := &fakeOutbox{}
	for i := range 2500 {
		out.invs = append(out.invs, shortener.Invalidation{Code: fmt.Sprintf("d%d", i), CreatedAt: time.Now()})
	}
	c := newOfflineCache(t, testLinks(1), testConfig())
	c.outbox = out
	if err := c.readOutbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"d0", "d999", "d1000", "d2499"} {
		if !c.pending.has(code) {
			t.Errorf("%s is not pending, so its lookups would read Redis", code)
		}
	}
	if got := c.pending.len(); got != 2500 {
		t.Errorf("%d codes pending, want 2500", got)
	}
}

// TestCreateDoesNotWaitOnRedis: Add (a create's warm-up) and a lookup's
// fill only queue the Redis write; nothing runs on the caller's path, the
// queue is bounded, and nothing is queued while the write breaker is open.
func TestCreateDoesNotWaitOnRedis(t *testing.T) {
	c := newOfflineCache(t, testLinks(1), testConfig()) // Run is not started: nothing drains the queue
	l := shortener.Link{Code: "n", URL: "https://example.com/n", Redirect: 302}
	c.Add(context.Background(), l)
	if got := count(c.m.fills, "error") + count(c.m.fills, "ok"); got != 0 || len(c.fills) != 1 {
		t.Fatalf("Add wrote to Redis on the caller's path (%v writes), queued %d; want 0 writes, 1 queued", got, len(c.fills))
	}
	for range fillQueue + 10 {
		c.Add(context.Background(), l)
	}
	if len(c.fills) != fillQueue || count(c.m.fills, "dropped") != 11 {
		t.Errorf("queue %d, dropped %v; want %d queued and the rest dropped", len(c.fills), count(c.m.fills, "dropped"), fillQueue)
	}
	c2 := newOfflineCache(t, testLinks(1), testConfig())
	c2.write.Breaker().Open()
	c2.Add(context.Background(), l)
	if len(c2.fills) != 0 {
		t.Errorf("with the write breaker open, %d fills were queued; want them dropped", len(c2.fills))
	}
}

// TestCreateReachesOtherInstances: codes looked up (404) on two
// instances, then created on one, resolve on both while their negative
// entries would still last an hour: the creating instance drops its own,
// the other hears the creates on the invalidation channel. The creates
// queue behind a held fill, so all but the first go out in one script
// call and one message of several codes.
func TestCreateReachesOtherInstances(t *testing.T) {
	// A generous Redis deadline: this is about batching and announcing,
	// and a fill that times out on a busy machine (make test runs
	// packages side by side, under -race) loses its announcement by
	// design, which with the hour-long negative entries below would
	// fail the test for the machine's sake (seen once in CI).
	slow := func(c *Config) { c.L1NegativeTTL, c.Redis.Timeout = time.Hour, time.Second }
	a, _, s := newTestCache(t, testConfig(slow))
	origin := &lockedOrigin{links: map[string]shortener.Link{}}
	a.origin = origin
	b := running(t, testConfig(slow, func(c *Config) { onStack(c, s) }), origin)
	ctx := context.Background()

	// b's subscription must be up before the create is announced.
	waitSubscribed(t, a, b)
	var links []shortener.Link
	for i := range 20 {
		l := shortener.Link{Code: fmt.Sprintf("fresh%d", i), URL: fmt.Sprintf("https://example.com/fresh/%d", i), Redirect: 302}
		links = append(links, l)
		for _, c := range []*Cache{a, b} {
			if _, err := c.Resolve(ctx, l.Code); !errors.Is(err, shortener.ErrNotFound) {
				t.Fatalf("%s before the create: %v, want ErrNotFound", l.Code, err)
			}
		}
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.beforeFillSend = func(string) { once.Do(func() { close(held); <-release }) }
	for _, l := range links {
		origin.set(l)
		a.Add(ctx, l)
		if got, err := a.Resolve(ctx, l.Code); err != nil || got.URL != l.URL {
			t.Errorf("creating instance after the create of %s: %+v, %v; want the link", l.Code, got, err)
		}
		if l.Code == links[0].Code {
			<-held // the first fill is on its way; the rest queue behind it
		}
	}
	close(release)
	for _, l := range links {
		poll.Until(t, "the other instance to resolve "+l.Code, func() error {
			got, err := b.Resolve(ctx, l.Code)
			if err == nil && got.URL == l.URL {
				return nil
			}
			return fmt.Errorf("%+v, %v (a's fills: ok %v, skipped %v, error %v, deleted %v)",
				got, err, count(a.m.fills, "ok"), count(a.m.fills, "skipped"), count(a.m.fills, "error"), count(a.m.fills, fillDeleted))
		})
	}
	if sent := count(a.m.fills, "ok"); sent < float64(len(links)) {
		t.Errorf("%v fills written, want at least %d", sent, len(links))
	}
}

// waitSubscribed polls until a message a publishes reaches b's L1 drop.
func waitSubscribed(t *testing.T, a, b *Cache) {
	t.Helper()
	probe := shortener.Link{Code: "probe", URL: "https://example.com/p", Redirect: 302}
	announce := func() {
		b.l1.put(probe)
		a.enqueue(fill{link: probe, gen: a.gens.get("probe"), read: time.Now(), announce: true})
	}
	announce()
	poll.Until(t, "the other instance to hear the invalidation channel", func() error {
		if _, ok := b.l1.get("probe"); !ok {
			return nil
		}
		announce() // again: b's subscription may not have been up
		return errors.New("the probe is still in b's L1")
	})
}

// limitCounts is how many counts c has sent to the master or given up on.
func limitCounts(c *Cache) float64 {
	return count(c.m.limits, "ok") + count(c.m.limits, "error") + count(c.m.limits, "skipped") + count(c.m.limits, "dropped")
}

// takeAndWait is the create path's use of the limiter: a request refused
// by the shared bucket is refused; else it is admitted and counted. The
// test then waits until the count reached the master, so each request
// sees the answers of those before it. It reports whether the request was
// admitted, and the wait of a refusal.
func takeAndWait(t *testing.T, c *Cache, key string, rate float64, burst int) (bool, time.Duration) {
	t.Helper()
	if wait, refused := c.Refused(key); refused {
		return false, wait
	}
	before := limitCounts(c)
	c.Take(key, rate, burst)
	poll.Until(t, "the count to reach the master", func() error {
		if n := limitCounts(c); n == before {
			return fmt.Errorf("%v counts sent or given up, as before", n)
		}
		return nil
	})
	if got := count(c.m.limits, "ok"); got == 0 {
		t.Fatalf("the count failed (errors %v)", count(c.m.limits, "error"))
	}
	return true, 0
}

// TestTakeIsShared: two instances draw on one budget per key (burst 10,
// one request per 10 s): together they admit the burst, plus at most one
// request each before they hear the master's refusal, not 10 each; another
// key has its own budget.
func TestTakeIsShared(t *testing.T) {
	// A long deadline: this test counts admissions, and a count that
	// timed out on a busy machine would be missing from the budget.
	cfg := testConfig(func(c *Config) { c.Redis.Timeout = 2 * time.Second })
	a, _, s := newTestCache(t, cfg)
	b, err := New(testConfig(func(c *Config) {
		onStack(c, s)
		c.Redis.Timeout = cfg.Redis.Timeout
	}), testLinks(1), &fakeOutbox{}, quietLog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, b)
	allowed := 0
	var lastWait time.Duration
	for i := range 30 {
		c := a
		if i%2 == 1 {
			c = b
		}
		if ok, wait := takeAndWait(t, c, "addr:192.0.2.1", 0.1, 10); ok {
			allowed++
		} else {
			lastWait = wait
		}
	}
	if allowed < 10 || allowed > 12 {
		t.Errorf("two instances admitted %d of 30 requests at burst 10, want 10 and at most one more per instance", allowed)
	}
	if lastWait <= 0 || lastWait > 30*time.Second {
		t.Errorf("refused request's wait %s, want within three intervals (30 s)", lastWait)
	}
	if ok, _ := takeAndWait(t, b, "addr:192.0.2.2", 0.1, 10); !ok {
		t.Error("another address was refused; want it admitted")
	}
}

// TestCreateLimitDoesNotWaitOnAFrozenMaster: with the master frozen
// (SIGSTOP: the kernel still accepts connections, nothing answers), the
// create path's calls to the shared limiter return before the limiter's
// Redis call completes; the call itself goes on off the path and fails on
// the frozen master. Before, Allow sent the GCRA script on the request's
// path, and a create waited one Redis deadline (until the write breaker
// opened).
func TestCreateLimitDoesNotWaitOnAFrozenMaster(t *testing.T) {
	stalled, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	c, _, s := newTestCacheHooked(t, testConfig(func(c *Config) { c.Redis.Timeout = time.Second }), func(c *Cache) {
		c.beforeLimitSend = func() {
			if hold.Load() {
				stalled <- struct{}{}
				<-release
			}
		}
	})
	// Warm: the script is loaded and the pool connected.
	takeAndWait(t, c, "key:warm", 1000, 1000)
	master, err := s.Master(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := master.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Cont() }) //nolint:errcheck // the stack's cleanup kills it anyway
	hold.Store(true)

	before := count(c.m.limits, "ok") + count(c.m.limits, "error")
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		c.Refused("key:k")
		c.Take("key:k", 1000, 1000)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second): // the limiter call is held: only a wait on it gets here
		close(release)
		t.Fatal("the create path's limiter calls did not return while the limiter's Redis call was held")
	}
	if got := count(c.m.limits, "ok") + count(c.m.limits, "error"); got != before {
		t.Errorf("a limiter Redis call completed (%v) before the create path returned; want none", got-before)
	}
	<-stalled // the count is on its way to the frozen master
	close(release)
	poll.Until(t, "the count to fail on the frozen master", func() error {
		if count(c.m.limits, "error") == 0 {
			return fmt.Errorf("no error; ok %v", count(c.m.limits, "ok"))
		}
		return nil
	})
}

// TestDeletePendingUntilEveryReplicaApplied: an invalidation stays pending
// (its code bypassing Redis) while a replica Sentinel knows cannot have
// applied the DEL (frozen here, as a black-holed or rejoining node would
// be), however often the replay sends it; once the replica is back and
// acknowledges, it is done. Before, the record was done as soon as the
// master took it, and a node that missed it served the deleted link again.
// The sequence repeats, each time with a fresh code.
func TestDeletePendingUntilEveryReplicaApplied(t *testing.T) {
	c, _, s := newTestCache(t, testConfig(func(c *Config) {
		c.ReplayInterval, c.InvalidationGrace = 50*time.Millisecond, 150*time.Millisecond
	}))
	out := c.outbox.(*fakeOutbox)
	ctx := context.Background()
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var replica *stack.Proc
	for _, p := range s.Redis() {
		if p.Name != master.Name {
			replica = p
		}
	}
	pendingIn := func() int {
		out.mu.Lock()
		defer out.mu.Unlock()
		return len(out.invs)
	}
	for round := range 3 {
		code := fmt.Sprintf("gone%d", round)
		if err := replica.Stop(); err != nil {
			t.Fatal(err)
		}
		out.mu.Lock()
		out.invs = append(out.invs, shortener.Invalidation{Code: code, CreatedAt: time.Now().Add(-time.Hour)})
		out.mu.Unlock()
		// Let the replay send it several times while the replica is away.
		sent := count(c.m.invalidated, "sent")
		poll.Until(t, fmt.Sprintf("round %d: the replay to send %s four times", round, code), func() error {
			if count(c.m.invalidated, "sent") >= sent+4 || pendingIn() != 1 {
				return nil
			}
			r, w := c.BreakerStates()
			return fmt.Errorf("sent %v, errors %v, skipped %v; breakers read %s, write %s",
				count(c.m.invalidated, "sent")-sent, count(c.m.invalidated, "error"), count(c.m.invalidated, "skipped"), r, w)
		})
		if pendingIn() != 1 || !c.pending.has(code) {
			t.Fatalf("round %d: with a replica that missed the DEL, the record was done (outbox %d, pending %v); a stale node could serve %s", round, pendingIn(), c.pending.has(code), code)
		}
		if err := replica.Cont(); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, fmt.Sprintf("round %d: the record done once every replica is back", round), func() error {
			if n := pendingIn(); n != 0 {
				return fmt.Errorf("%d records in the outbox", n)
			}
			return nil
		})
	}
}

// TestStartBypassesPendingInvalidations: an instance that starts while
// another's delete has not reached Redis yet (its record pending in
// MySQL) bypasses Redis for that code from its first lookup, not from its
// first replay tick: chaos master-and-app saw a restarted app answer 302
// from Redis for links deleted 1.5 and 2.5 s before.
func TestStartBypassesPendingInvalidations(t *testing.T) {
	out := &fakeOutbox{invs: []shortener.Invalidation{{Code: "gone1", CreatedAt: time.Now()}}}
	c := newOfflineCache(t, testLinks(1), testConfig())
	c.outbox = out
	if c.pending.has("gone1") {
		t.Fatal("pending before LoadPending")
	}
	if err := c.LoadPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !c.pending.has("gone1") || c.pending.has("c0") {
		t.Errorf("after LoadPending: gone1 pending %v, c0 pending %v; want true, false", c.pending.has("gone1"), c.pending.has("c0"))
	}
}

// downOutbox is an outbox MySQL cannot be read from.
type downOutbox struct{ fakeOutbox }

func (*downOutbox) PendingInvalidations(context.Context) ([]shortener.Invalidation, error) {
	return nil, shortener.ErrUnavailable
}

// TestInvalidationsReadTime: the gauge of the outbox's last read moves
// with each read that succeeds and stands still while MySQL cannot be
// read, which is what ShortenerInvalidationsNotRead watches (during a
// Redis failover that read is an instance's only news of deletes).
func TestInvalidationsReadTime(t *testing.T) {
	c := newOfflineCache(t, testLinks(1), testConfig())
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	c.outbox = &fakeOutbox{}
	if err := c.readOutbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.m.replayed); got != float64(now.Unix()) {
		t.Fatalf("after a read: %v, want %v", got, float64(now.Unix()))
	}
	c.outbox = &downOutbox{}
	now = now.Add(time.Minute)
	if err := c.readOutbox(context.Background()); err == nil {
		t.Fatal("a read of an outbox that is down succeeded")
	}
	if got := testutil.ToFloat64(c.m.replayed); got != float64(now.Add(-time.Minute).Unix()) {
		t.Errorf("after a failed read: %v, want the last good read's time", got)
	}
}

// TestAddIssuedIsNotAnnounced: a link whose code its create issued goes
// to Redis, where another instance finds it, but is not announced: the
// other instance keeps what its L1 holds for the code, while an alias
// created after it is announced and dropped there.
func TestAddIssuedIsNotAnnounced(t *testing.T) {
	a, _, s := newTestCache(t, testConfig(func(c *Config) { c.L1TTL = time.Hour }))
	b := running(t, testConfig(func(c *Config) { onStack(c, s); c.L1TTL = time.Hour }), &lockedOrigin{links: map[string]shortener.Link{}})
	ctx := context.Background()
	waitSubscribed(t, a, b)

	issued := shortener.Link{Code: "issued", URL: "https://example.com/issued", Redirect: 302}
	alias := shortener.Link{Code: "alias", URL: "https://example.com/alias", Redirect: 302}
	// Entries the announcements would drop (no real instance holds one
	// for a code not yet created; these only show whether one came).
	b.l1.put(issued)
	b.l1.put(alias)
	a.AddIssued(ctx, issued)
	a.Add(ctx, alias) // after it in a's one fill queue
	poll.Until(t, "the alias's announcement to reach b", func() error {
		if _, ok := b.l1.get("alias"); ok {
			return errors.New("alias is still in b's L1")
		}
		return nil
	})
	if _, ok := b.l1.get("issued"); !ok {
		t.Error("the issued code was announced: b's L1 dropped it")
	}
	// b's origin has neither: what it resolves came from Redis.
	b.l1.drop("issued")
	if got, err := b.Resolve(ctx, "issued"); err != nil || got.URL != issued.URL {
		t.Errorf("b resolves the issued code: %+v, %v; want it from Redis", got, err)
	}
}

// running is a second instance on cfg's stack, reading origin, running
// until the test ends.
func running(t *testing.T, cfg Config, origin Origin) *Cache {
	t.Helper()
	b, err := New(cfg, origin, &fakeOutbox{}, quietLog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; b.Close() })
	return b
}
