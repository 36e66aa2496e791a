package analytics

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
)

const (
	chromeUA  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
)

var (
	day1 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	addr = netip.MustParseAddr("203.0.113.7")
)

// waitShared waits until e holds the shared key of the day of t.
func waitShared(tb testing.TB, e *Enricher, t time.Time) {
	tb.Helper()
	poll.Until(tb, "the shared visitor key of "+t.Format(time.DateOnly), func() error {
		if k := e.ring.Load().find(dayOf(t)); k == nil || !k.shared {
			return fmt.Errorf("held: %+v", e.ring.Load().keys)
		}
		return nil
	})
}

// TestVisitorAcrossInstances: two instances on the same key source hash
// a client alike on a day, and differently the next day; a different
// address or agent is a different visitor; the hash is the documented
// one under the source's key.
func TestVisitorAcrossInstances(t *testing.T) {
	keys := &fakeKeys{}
	clock := newClock(day1)
	cfg := Config{Enabled: true, GeoDB: "none", AgentCacheSize: 10}
	a, b := newEnricher(t, cfg, keys, clock), newEnricher(t, cfg, keys, clock)
	day2 := day1.Add(24 * time.Hour)
	for _, e := range []*Enricher{a, b} {
		waitShared(t, e, day1)
		waitShared(t, e, day2) // tomorrow's, fetched ahead
	}

	v := a.Enrich(addr, chromeUA, false, day1).Visitor
	if got := b.Enrich(addr, chromeUA, false, day1.Add(13*time.Hour)).Visitor; got != v {
		t.Errorf("the other instance, later the same day: got %#x, want %#x", got, v)
	}
	if got := a.Enrich(addr, chromeUA, false, day1).Visitor; got != v {
		t.Errorf("the same click again: got %#x, want %#x", got, v)
	}
	raw, _ := keys.VisitorKey(ctxDeadline(t), dayStart(dayOf(day1)))
	key := sha256.Sum256(raw)
	ua := sha256.Sum256([]byte(chromeUA))
	if want := visitorHash(&key, addr, (*[16]byte)(ua[:16])); v != want {
		t.Errorf("got %#x, want the hash under the day's key %#x", v, want)
	}
	for name, got := range map[string]uint64{
		"next day":        b.Enrich(addr, chromeUA, false, day2).Visitor,
		"another address": a.Enrich(netip.MustParseAddr("203.0.113.8"), chromeUA, false, day1).Visitor,
		"another agent":   a.Enrich(addr, firefoxUA, false, day1).Visitor,
	} {
		if got == v {
			t.Errorf("%s: got the same visitor %#x", name, got)
		}
	}
	// The next day's hash is the same on both instances too.
	if x, y := a.Enrich(addr, chromeUA, false, day2).Visitor, b.Enrich(addr, chromeUA, false, day2).Visitor; x != y {
		t.Errorf("next day: instances disagree: %#x and %#x", x, y)
	}
	// An IPv4 client seen through a dual-stack socket is the same client.
	if got := a.Enrich(netip.MustParseAddr("::ffff:203.0.113.7"), chromeUA, false, day1).Visitor; got != v {
		t.Errorf("IPv4-mapped address: got %#x, want %#x", got, v)
	}
}

// TestVisitorNeverZero: 0 means unknown, so no client hashes to it.
func TestVisitorNeverZero(t *testing.T) {
	var key [32]byte
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		a := netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
		var ua [16]byte
		for i := range ua {
			ua[i] = byte(r.Uint32())
		}
		if v := visitorHash(&key, a, &ua); v == 0 || v&1 == 0 {
			t.Fatalf("%s: visitor %#x, want the low bit set", a, v)
		}
	}
}

// TestVisitorKeyRotation moves the clock through the days: each day's
// key is fetched the day before, a day's key differs from the next's, and
// keys older than yesterday are dropped from memory.
func TestVisitorKeyRotation(t *testing.T) {
	keys := &fakeKeys{}
	clock := newClock(day1)
	e := newEnricher(t, Config{Enabled: true, GeoDB: "none", AgentCacheSize: 10}, keys, clock)
	waitShared(t, e, day1)
	waitShared(t, e, day1.Add(24*time.Hour))
	ctx := ctxDeadline(t)
	seen := map[uint64]bool{}
	for i := range 5 {
		now := day1.Add(time.Duration(i) * 24 * time.Hour)
		clock.set(now)
		if wait := e.refresh(ctx); wait <= 0 || wait > idleMax {
			t.Fatalf("day %d: refresh asks to wait %s, want (0, %s]", i, wait, idleMax)
		}
		if k := e.ring.Load().find(dayOf(now) + 1); k == nil || !k.shared {
			t.Fatalf("day %d: tomorrow's key not held ahead", i)
		}
		v := e.Enrich(addr, chromeUA, false, now).Visitor
		if seen[v] {
			t.Errorf("day %d: visitor %#x seen on an earlier day", i, v)
		}
		seen[v] = true
		for _, k := range e.ring.Load().keys {
			if k.day < dayOf(now)-1 {
				t.Errorf("day %d: still holds the key of %s", i, dayStart(k.day).Format(time.DateOnly))
			}
		}
	}
	keys.mu.Lock()
	defer keys.mu.Unlock()
	for d, n := range keys.calls {
		if n != 1 {
			t.Errorf("the key of %s was fetched %d times, want once", d, n)
		}
	}
}

// TestVisitorLocalKey: with the key source down at start, each instance
// hashes with a key of its own (so two instances disagree, and the
// metric says so); once the source answers, they agree again.
func TestVisitorLocalKey(t *testing.T) {
	keys := &fakeKeys{}
	keys.down.Store(true)
	clock := newClock(day1)
	cfg := Config{Enabled: true, GeoDB: "none", AgentCacheSize: 10}
	a, b := newEnricher(t, cfg, keys, clock), newEnricher(t, cfg, keys, clock)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(a)
	poll.Until(t, "a local key after a failed fetch", func() error {
		if !a.localKey() {
			return fmt.Errorf("held: %+v", a.ring.Load().keys)
		}
		return nil
	})
	if n := a.fetchErrors.Load(); n == 0 {
		t.Errorf("a local key in use, yet %d failed fetches", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP shortener_analytics_visitor_key_local 1 while the visitor key of the current UTC day is this instance's own rather than the shared one (MySQL has not answered): that day's unique visitors may be over-counted across instances.
# TYPE shortener_analytics_visitor_key_local gauge
shortener_analytics_visitor_key_local 1
`), "shortener_analytics_visitor_key_local"); err != nil {
		t.Error(err)
	}
	va, vb := a.Enrich(addr, chromeUA, false, day1).Visitor, b.Enrich(addr, chromeUA, false, day1).Visitor
	if va == vb {
		t.Errorf("two local keys gave the same visitor %#x", va)
	}
	if got := a.Enrich(addr, chromeUA, false, day1).Visitor; got != va {
		t.Errorf("the same instance, the same local key: got %#x, want %#x", got, va)
	}

	keys.down.Store(false)
	ctx := ctxDeadline(t)
	for _, e := range []*Enricher{a, b} {
		if wait := e.refresh(ctx); wait == 0 {
			t.Fatal("refresh failed with the source up")
		}
	}
	if a.localKey() {
		t.Error("the source is up and fetched, yet the key in use is local")
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP shortener_analytics_visitor_key_local 1 while the visitor key of the current UTC day is this instance's own rather than the shared one (MySQL has not answered): that day's unique visitors may be over-counted across instances.
# TYPE shortener_analytics_visitor_key_local gauge
shortener_analytics_visitor_key_local 0
`), "shortener_analytics_visitor_key_local"); err != nil {
		t.Error(err)
	}
	if va, vb := a.Enrich(addr, chromeUA, false, day1).Visitor, b.Enrich(addr, chromeUA, false, day1).Visitor; va != vb {
		t.Errorf("shared key: instances disagree: %#x and %#x", va, vb)
	}
}

// TestClickOnAnotherDay: a click stamped on a day whose key is not held
// (a clock jump) gets a local key for that day, the same for the rest of
// that day's clicks.
func TestClickOnAnotherDay(t *testing.T) {
	e := newEnricher(t, Config{Enabled: true, GeoDB: "none", AgentCacheSize: 10}, &fakeKeys{}, newClock(day1))
	past := day1.Add(-30 * 24 * time.Hour)
	v := e.Enrich(addr, chromeUA, false, past).Visitor
	if got := e.Enrich(addr, chromeUA, false, past.Add(time.Hour)).Visitor; got != v || v == 0 {
		t.Errorf("got %#x, then %#x, want the same nonzero visitor", v, got)
	}
}

// TestDisabled: the privacy switch opens nothing (not even a database
// that is not there), fetches nothing, parses nothing and hashes
// nothing; a click keeps only its bot verdict.
func TestDisabled(t *testing.T) {
	e, err := New(Config{Enabled: false, GeoDB: "testdata/nothing.mmdb"}, nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.Enrich(netip.MustParseAddr("8.8.8.8"), chromeUA, false, time.Now()); got != (Dims{}) {
		t.Errorf("a browser: got %+v, want zero Dims", got)
	}
	if got := e.Enrich(netip.MustParseAddr("8.8.8.8"), chromeUA, true, time.Now()); got != (Dims{Agent: Agent{Device: DeviceBot}}) {
		t.Errorf("a bot: got %+v, want zero Dims but for the bot device", got)
	}
	if e.agents != nil || e.geo != nil || len(e.ring.Load().keys) != 0 {
		t.Error("disabled, yet the parser, the database or a key is there")
	}
}

func TestValidate(t *testing.T) {
	if err := (Config{Enabled: true, AgentCacheSize: 0}).Validate(); err == nil || !strings.Contains(err.Error(), "AgentCacheSize") {
		t.Errorf("no cache: got %v, want an error naming AgentCacheSize", err)
	}
	if err := (Config{Enabled: false}).Validate(); err != nil {
		t.Errorf("disabled: got %v, want no error (nothing is used)", err)
	}
}

// ctxDeadline is a context with a deadline (the fake key source refuses
// calls without one), cancelled when the test ends.
func ctxDeadline(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), poll.Patience)
	tb.Cleanup(cancel)
	return ctx
}
