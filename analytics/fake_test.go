package analytics

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeKeys is a KeySource in memory: one random-looking key per day,
// the same for every Enricher given it (as MySQL's table is for every
// instance), and a switch that makes it fail as MySQL down does.
type fakeKeys struct {
	down  atomic.Bool
	mu    sync.Mutex
	calls map[string]int // per day
}

var _ KeySource = (*fakeKeys)(nil)

var errDown = errors.New("fake key source down")

func (f *fakeKeys) VisitorKey(ctx context.Context, day time.Time) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("fake key source: called without a deadline")
	}
	if f.down.Load() {
		return nil, errDown
	}
	d := day.Format(time.DateOnly)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[d]++
	k := sha256.Sum256([]byte("fake visitor key " + d))
	return k[:], nil
}

// fakeClock is a settable clock.
type fakeClock struct{ ns atomic.Int64 }

func newClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}

func (c *fakeClock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// newEnricher returns an Enricher on keys and clock, closed when the
// test ends.
func newEnricher(tb testing.TB, cfg Config, keys KeySource, clock *fakeClock) *Enricher {
	tb.Helper()
	e, err := New(cfg, keys, clock.now)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Error(err)
		}
	})
	return e
}
