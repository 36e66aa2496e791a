package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// batches is a keyPurger with a backlog of expired keys.
type batches struct {
	left  int64
	calls int
}

func (b *batches) PurgeIdempotencyKeys(_ context.Context, _ time.Time, limit int) (int64, error) {
	b.calls++
	n := min(b.left, int64(limit))
	b.left -= n
	return n, nil
}

// TestPurgeKeepsUpWithCreates: a minute of 1,000 keyed creates a second
// leaves 60,000 expired keys; one round of the purge removes them all
// (the purge of 1,000 a minute fell behind without bound), and a backlog
// beyond a round's bound is left for the next.
func TestPurgeKeepsUpWithCreates(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := &batches{left: 60_000}
	if n := purgeExpiredKeys(context.Background(), b, log); n != 60_000 || b.left != 0 || b.calls != 61 {
		t.Errorf("purged %d in %d calls, %d left; want 60000 in 61 calls, 0 left", n, b.calls, b.left)
	}
	b = &batches{left: idemPurgeBatch*idemPurgeBatches + 5}
	if n := purgeExpiredKeys(context.Background(), b, log); n != idemPurgeBatch*idemPurgeBatches || b.left != 5 {
		t.Errorf("a backlog past the bound: purged %d, %d left; want %d, 5", n, b.left, idemPurgeBatch*idemPurgeBatches)
	}
}
