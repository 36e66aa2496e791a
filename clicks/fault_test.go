package clicks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"shortener"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
	"shortener/store"
)

// Resource faults: a full volume, a directory restored from an older copy
// or cloned, a proxy clock in the future. Each must leave redirects
// untouched and count every click once, or drop it and count the drop.

// TestFutureRequestClamped journals a click whose proxy claims a request
// time an hour ahead (a wrong clock, a forged header) with this
// instance's time instead, and counts it; one within the allowed skew is
// kept as it is.
func TestFutureRequestClamped(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, Config{Dir: dir, NodeID: 1}, nil)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	j.now = func() time.Time { return now }
	future := click(1, now)
	future.Request = shortener.ClickRequest{ID: [16]byte{1}, At: now.Add(time.Hour).UnixMilli()}
	near := click(2, now)
	near.Request = shortener.ClickRequest{ID: [16]byte{2}, At: now.Add(maxRequestSkew / 2).UnixMilli()}
	j.Record(future)
	j.Record(near)
	if got := testutil.ToFloat64(j.clamped); got != 1 {
		t.Errorf("clamped %v, want 1", got)
	}
	j.Close()
	segs, _ := listSegments(dir)
	b, err := os.ReadFile(segmentPath(dir, segs[0]))
	if err != nil {
		t.Fatal(err)
	}
	sc := parse(nil, nil, b[headerSize:], headerSize, true, 10)
	if len(sc.clicks) != 2 {
		t.Fatalf("read %d clicks, want 2", len(sc.clicks))
	}
	if got := sc.clicks[0].Request.At; got != now.UnixMilli() {
		t.Errorf("future request journaled at %v, want the instance's %v", time.UnixMilli(got).UTC(), now)
	}
	if got, want := sc.clicks[1].Request.At, near.Request.At; got != want {
		t.Errorf("request within the skew journaled at %v, want %v as sent", time.UnixMilli(got).UTC(), time.UnixMilli(want).UTC())
	}
}

// copyDir copies a journal directory as a backup or a volume clone does:
// every file byte for byte (a segment being written is copied as it
// stands, zeros after its last record), the lock file left behind.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// restoreOlderCopy runs the restore of a journal directory from an older
// backup against sink, whose total reads the clicks counted: a journal
// ships 600 clicks, is copied, ships 600 more and closes (drained, as an
// orderly stop); its directory is replaced by the copy and a new run
// records 600. All 1,800 are counted, each once: the copy's segments are
// counted already (some forgotten), and the new run's must not be taken
// for them.
func restoreOlderCopy(t *testing.T, sink Sink, total func() int) {
	dir := t.TempDir()
	cfg := withDefaults(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 4 << 10})
	j1, err := Open(cfg, nil, discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s1 := newShipper(t, j1, sink, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s1.Run(ctx) }()
	record(j1, 600)
	poll.Until(t, "600 clicks counted", func() error {
		if got := total(); got != 600 {
			return fmt.Errorf("got %v, want %v", got, 600)
		}
		return nil
	})
	backup := filepath.Join(t.TempDir(), "backup")
	copyDir(t, dir, backup)
	record(j1, 600)
	poll.Until(t, "1,200 clicks counted", func() error {
		if got := total(); got != 1200 {
			return fmt.Errorf("got %v, want %v", got, 1200)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s1.Drain(context.Background()); !ok || err != nil {
		t.Fatalf("Drain: %v, %v", ok, err)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	copyDir(t, backup, dir)
	j2 := openJournal(t, cfg, nil)
	runShipper(t, j2, sink, nil)
	record(j2, 600)
	poll.Until(t, "the restored copy's segments deleted, the new run's shipped", func() error {
		if n, segs := total(), segmentCount(t, dir); n < 1800 || segs != 1 {
			return fmt.Errorf("%d clicks counted, %d segments", n, segs)
		}
		return nil
	})
	if got := total(); got != 1800 {
		t.Errorf("counted %d clicks, want 1800", got)
	}
}

// cloneLiveVolume runs a clone of a journal's volume taken while its
// instance runs: the clone's instance starts on the copy while the
// original goes on writing. Every click of both is counted once: the
// copies of the original's segments are counted by whichever ships
// first, and the clone's shipper, reaching the zeros of the original's
// segment in progress, does not claim the bytes yet to be written there.
func cloneLiveVolume(t *testing.T, sink Sink, total func() int) {
	dirA := t.TempDir()
	a := openJournal(t, Config{Dir: dirA, NodeID: 1, SegmentBytes: 64 << 10}, nil)
	runShipper(t, a, sink, nil)
	record(a, 300)
	poll.Until(t, "300 clicks counted", func() error {
		if got := total(); got != 300 {
			return fmt.Errorf("got %v, want %v", got, 300)
		}
		return nil
	})
	record(a, 200) // in the clone too, not yet counted
	dirB := filepath.Join(t.TempDir(), "clone")
	copyDir(t, dirA, dirB)
	b := openJournal(t, Config{Dir: dirB, NodeID: 2, SegmentBytes: 64 << 10}, nil)
	runShipper(t, b, sink, nil)
	record(b, 400)
	record(a, 500)
	poll.Until(t, "1,400 clicks counted", func() error {
		if got := total(); got < 1400 {
			return fmt.Errorf("got %v, want at least %v", got, 1400)
		}
		return nil
	})
	// Both shippers are caught up once each has reached its writer.
	poll.Until(t, "both shippers caught up", func() error {
		la, _ := a.readable(a.seq)
		lb, _ := b.readable(b.seq)
		pa, _ := sink.ShippedTo(context.Background(), a.ID(), a.seq)
		pb, _ := sink.ShippedTo(context.Background(), b.ID(), b.seq)
		if pa != la || pb != lb {
			return fmt.Errorf("a shipped to %d of %d, b to %d of %d", pa, la, pb, lb)
		}
		return nil
	})
	if got := total(); got != 1400 {
		t.Errorf("counted %d clicks, want 1400", got)
	}
}

func TestRestoredDirectoryCountsOnce(t *testing.T) {
	sink := newMemSink()
	restoreOlderCopy(t, sink, sink.total)
}

func TestClonedVolumeCountsOnce(t *testing.T) {
	sink := newMemSink()
	cloneLiveVolume(t, sink, sink.total)
}

// TestRestoreAndCloneAgainstMySQL runs the restore and the clone against
// the real store on MariaDB, whose positions, forgotten segments and
// counts are what production relies on.
func TestRestoreAndCloneAgainstMySQL(t *testing.T) {
	dsn := stacktest.Database(t, stacktest.Shared(t))
	db, err := store.Open(store.Config{DSN: dsn, MaxOpen: 8, QueryTimeout: 2 * time.Second, DialTimeout: time.Second}, discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := db.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// record's clicks go to links 1..10 on 2026-12-03 from 12:00; each
	// subtest counts what the store gained since it began.
	from := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	counted := func() int {
		n := 0
		for link := int64(1); link <= 10; link++ {
			st, err := db.ClickStats(ctx, link, from, from.Add(2*time.Hour), false, 1)
			if err != nil {
				t.Fatal(err)
			}
			n += int(st.Total)
		}
		return n
	}
	since := func() func() int {
		base := counted()
		return func() int { return counted() - base }
	}
	t.Run("restored", func(t *testing.T) { restoreOlderCopy(t, db, since()) })
	t.Run("cloned", func(t *testing.T) { cloneLiveVolume(t, db, since()) })
}
