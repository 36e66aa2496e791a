//go:build linux

package clicks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
)

// A full volume, for real: a tmpfs mounted for the test (Linux, root).

// tmpfs mounts a tmpfs of size bytes on a fresh directory until the test
// ends: a volume that really fills (as root; the test fails without root
// under make test, and skips otherwise).
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	stacktest.RequireRoot(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount tmpfs: %v", err)
		}
	})
	return dir
}

// fill writes a file in dir until the volume has no room left, and
// returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			return p
		}
	}
}

func dropped(j *Journal, reason string) float64 {
	return testutil.ToFloat64(j.dropped.WithLabelValues(reason))
}

// TestFullVolume fills the journal's volume (a 256 KiB tmpfs, 64 KiB
// segments) under a writer: no signal kills the process, the clicks that
// find no room are dropped and counted as disk_full, the shipper still
// ships what was journaled, and journaling resumes by itself once space
// returns. On the old sparse mapping the first write to an unbacked page
// was a SIGBUS, which ends this test binary.
func TestFullVolume(t *testing.T) {
	dir := tmpfs(t, 256<<10)
	reg := prometheus.NewRegistry()
	j, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 64 << 10}), nil, discard(), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	now := time.Now()
	j.now = func() time.Time { return now }
	filler := fill(t, dir)

	// The current segment was allocated before the volume filled: it
	// takes clicks until it is full, then none can be begun.
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	n := 0
	for ; dropped(j, "disk_full") == 0; n++ {
		if n > 100_000 {
			t.Fatal("no click dropped as disk_full after 100,000 on a full volume")
		}
		j.Record(click(int64(n%10+1), at))
	}
	recorded := int(testutil.ToFloat64(j.recorded))
	for range 1000 {
		j.Record(click(1, at))
	}
	if got := dropped(j, "disk_full"); got != 1001 {
		t.Errorf("disk_full drops %v, want 1001 (one per click after the volume filled)", got)
	}
	if got := int(testutil.ToFloat64(j.recorded)); got != recorded {
		t.Errorf("recorded %d while full, want still %d", got, recorded)
	}
	if free := j.freeBytes(); free >= float64(64<<10) {
		t.Errorf("free bytes gauge %v on a full volume", free)
	}

	// The shipper ships what was journaled (the sealed segment), and
	// deleting it frees room for the next.
	sink := newMemSink()
	runShipper(t, j, sink, nil)
	poll.Until(t, "the journaled clicks shipped", func() error {
		if got := sink.total(); got != recorded {
			return fmt.Errorf("got %v, want %v", got, recorded)
		}
		return nil
	})

	// Space returns: within a retry interval the next click begins a
	// segment and is journaled.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	j.Record(click(1, at)) // still inside the retry interval
	if got := dropped(j, "disk_full"); got != 1002 {
		t.Errorf("disk_full drops %v, want 1002: no retry before %s", got, segmentRetry)
	}
	j.mu.Lock()
	now = now.Add(segmentRetry)
	j.mu.Unlock()
	j.Record(click(1, at))
	if got := int(testutil.ToFloat64(j.recorded)); got != recorded+1 {
		t.Fatalf("recorded %d after space returned, want %d", got, recorded+1)
	}
	poll.Until(t, "the click after the outage shipped", func() error {
		if got := sink.total(); got != recorded+1 {
			return fmt.Errorf("got %v, want %v", got, recorded+1)
		}
		return nil
	})
}

// TestOpenOnFullVolume starts a journal on a volume that is already full:
// Open succeeds (the app must start and serve redirects), every click is
// dropped and counted until there is room, then journaled.
func TestOpenOnFullVolume(t *testing.T) {
	dir := tmpfs(t, 128<<10)
	if err := os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)
	j, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 64 << 10}), nil, discard(), nil)
	if err != nil {
		t.Fatalf("Open on a full volume: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	now := time.Now()
	j.now = func() time.Time { return now }
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for range 10 {
		j.Record(click(1, at))
	}
	if got := dropped(j, "disk_full"); got != 10 {
		t.Errorf("disk_full drops %v, want 10", got)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	now = now.Add(segmentRetry)
	j.mu.Unlock()
	j.Record(click(1, at))
	if got := testutil.ToFloat64(j.recorded); got != 1 {
		t.Errorf("recorded %v once space returned, want 1", got)
	}
	if got := segmentCount(t, dir); got != 1 {
		t.Errorf("%d segments, want 1", got)
	}
}
