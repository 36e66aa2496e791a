package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
	"shortener/store"
)

// fakeStore is a Store whose answers a test scripts: the node is held
// by "other" for the first heldFor claims, renewals answer renewErrs in
// turn (then nil), and it records what it was told.
type fakeStore struct {
	mu        sync.Mutex
	heldFor   int
	reserved  time.Time
	free      int64
	renewErrs []error
	claims    int
	renewed   []time.Time
	released  []time.Time
	owner     string
}

func (f *fakeStore) ClaimNode(_ context.Context, nodeID int64, owner string, _ time.Duration) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims++
	if f.claims <= f.heldFor {
		return time.Time{}, &store.NodeHeldError{NodeID: nodeID, Owner: "other@host pid 1", Until: time.Now()}
	}
	f.owner = owner
	return f.reserved, nil
}

func (f *fakeStore) ClaimFreeNode(_ context.Context, lo, hi int64, owner string, _ time.Duration) (int64, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims++
	if f.claims <= f.heldFor {
		return 0, time.Time{}, store.ErrNodeLost
	}
	f.owner = owner
	return f.free, f.reserved, nil
}

func (f *fakeStore) RenewNode(_ context.Context, _ int64, owner string, _ time.Duration, reserved time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if owner != f.owner {
		return store.ErrNodeLost
	}
	f.renewed = append(f.renewed, reserved)
	if len(f.renewErrs) > 0 {
		err := f.renewErrs[0]
		f.renewErrs = f.renewErrs[1:]
		return err
	}
	return nil
}

func (f *fakeStore) ReleaseNode(_ context.Context, _ int64, _ string, reserved time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, reserved)
	return nil
}

var _ Store = (*fakeStore)(nil)

func newLease(t *testing.T, cfg Config, st Store, now func() time.Time) (*Lease, *prometheus.Registry) {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = 60 * time.Millisecond
	}
	cfg.MaxNode, cfg.Retry, cfg.Instance = 1023, time.Millisecond, "app9"
	if cfg.MaxClockWait == 0 {
		cfg.MaxClockWait = time.Second
	}
	reg := prometheus.NewRegistry()
	l, err := New(cfg, st, now, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	return l, reg
}

func TestClaim(t *testing.T) {
	past := time.Now().Add(-time.Hour)
	tests := []struct {
		name    string
		cfg     Config
		st      *fakeStore
		wantID  int64
		wantErr string // a substring; "" for success
	}{
		{"free", Config{NodeID: 5}, &fakeStore{reserved: past}, 5, ""},
		{"held by a crashed instance until its lease expires", Config{NodeID: 5}, &fakeStore{heldFor: 3, reserved: past}, 5, ""},
		{"held by a live instance", Config{NodeID: 5}, &fakeStore{heldFor: 1 << 30}, -1, "node ID 5 is in use by other@host pid 1"},
		{"auto", Config{Auto: true}, &fakeStore{free: 17, reserved: past}, 17, ""},
		{"auto after a wait", Config{Auto: true}, &fakeStore{heldFor: 2, free: 3, reserved: past}, 3, ""},
		{"auto, none free", Config{Auto: true}, &fakeStore{heldFor: 1 << 30}, -1, "claim a free node ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, reg := newLease(t, tt.cfg, tt.st, time.Now)
			err := l.Claim(context.Background())
			gauge := testutil.ToFloat64(l.node)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Claim: got %v, want an error with %q", err, tt.wantErr)
				}
				if gauge != -1 {
					t.Errorf("shortener_node_id is %v after a refused claim, want -1", gauge)
				}
				return
			}
			if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			if l.NodeID() != tt.wantID || gauge != float64(tt.wantID) {
				t.Errorf("node ID %d, gauge %v; want %d", l.NodeID(), gauge, tt.wantID)
			}
			if tt.st.owner != l.Owner() || !strings.HasPrefix(l.Owner(), "app9@") {
				t.Errorf("the store's owner %q, the lease's %q", tt.st.owner, l.Owner())
			}
			if n, err := testutil.GatherAndCount(reg, "shortener_node_lease_renewals_total"); err != nil || n != 3 {
				t.Errorf("renewal series: %d, %v; want 3 (ok, error, lost)", n, err)
			}
		})
	}
}

// TestClaimClockBehind: a clock a little behind the node's reserved time
// is waited out, so the first ID issued is after it; one far behind is
// refused and the lease released with the reserved time kept.
func TestClaimClockBehind(t *testing.T) {
	reserved := time.Now()
	behind := func() time.Time { return time.Now().Add(-20 * time.Millisecond) }
	l, _ := newLease(t, Config{NodeID: 1}, &fakeStore{reserved: reserved}, behind)
	if err := l.Claim(context.Background()); err != nil {
		t.Fatalf("Claim with the clock 20 ms behind: %v", err)
	}
	if now := behind(); !now.After(reserved) {
		t.Errorf("Claim returned at %s, not after the reserved time %s", now, reserved)
	}

	st := &fakeStore{reserved: time.Now()}
	far := func() time.Time { return time.Now().Add(-time.Hour) }
	l, _ = newLease(t, Config{NodeID: 1}, st, far)
	if err := l.Claim(context.Background()); err == nil || !strings.Contains(err.Error(), "behind the last ID issued") {
		t.Fatalf("Claim with the clock an hour behind: got %v, want a refusal", err)
	}
	if len(st.released) != 1 || !st.released[0].Equal(st.reserved) {
		t.Errorf("released %v, want once with the reserved time %s", st.released, st.reserved)
	}
}

// TestKeep renews until a renewal finds the lease lost: errors in
// between are counted and survived, each renewal reserves two renewals
// ahead of the horizon, and the loss is an error.
func TestKeep(t *testing.T) {
	st := &fakeStore{reserved: time.Now().Add(-time.Hour), renewErrs: []error{nil, errors.New("dial tcp: refused"), nil, store.ErrNodeLost}}
	l, _ := newLease(t, Config{NodeID: 2, TTL: 30 * time.Millisecond}, st, time.Now)
	if err := l.Claim(context.Background()); err != nil {
		t.Fatal(err)
	}
	var horizons []time.Time
	err := l.Keep(context.Background(), func(now time.Time) time.Time {
		horizons = append(horizons, now)
		return now
	})
	if err == nil || !strings.Contains(err.Error(), "lease lost") {
		t.Fatalf("Keep: got %v, want the lease lost", err)
	}
	for r, want := range map[string]float64{"ok": 2, "error": 1, "lost": 1} {
		if got := testutil.ToFloat64(l.renewals.WithLabelValues(r)); got != want {
			t.Errorf("renewals %s: got %v, want %v", r, got, want)
		}
	}
	for i, r := range st.renewed {
		if want := horizons[i].Add(20 * time.Millisecond); !r.Equal(want) {
			t.Errorf("renewal %d reserved %s, want the horizon + 2 × TTL/3 = %s", i, r, want)
		}
	}
}

// TestKeepStops: Keep returns nil when its context ends.
func TestKeepStops(t *testing.T) {
	st := &fakeStore{reserved: time.Now().Add(-time.Hour)}
	l, _ := newLease(t, Config{NodeID: 2, TTL: 30 * time.Millisecond}, st, time.Now)
	if err := l.Claim(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Keep(ctx, func(now time.Time) time.Time { return now }) }()
	poll.Until(t, "two renewals", func() error {
		st.mu.Lock()
		defer st.mu.Unlock()
		if n := len(st.renewed); n < 2 {
			return fmt.Errorf("%d renewals", n)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Keep after cancel: %v, want nil", err)
	}
}

func TestNewRefuses(t *testing.T) {
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, cfg := range []Config{{NodeID: 1024, MaxNode: 1023, TTL: time.Second}, {NodeID: -1, MaxNode: 1023, TTL: time.Second}, {NodeID: 1, MaxNode: 1023}} {
		if _, err := New(cfg, &fakeStore{}, time.Now, log, reg); err == nil {
			t.Errorf("New(%+v): got nil, want an error", cfg)
		}
	}
}
