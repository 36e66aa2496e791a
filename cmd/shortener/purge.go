package main

import (
	"context"
	"log/slog"
	"time"

	"shortener/internal/tick"
	"shortener/store"
)

// Idempotency keys are purged every minute in batches of idemPurgeBatch
// (each DELETE holds its locks briefly), batch after batch while they come
// back full, up to idemPurgeBatches: 1,000 a minute could not keep up with
// 1,000 keyed creates a second; this keeps up with over 8,000.
const (
	idemPurgeBatch   = 1000
	idemPurgeBatches = 500
)

// purgeIdempotencyKeys removes expired idempotency keys every minute until
// ctx ends.
func purgeIdempotencyKeys(ctx context.Context, st *store.Store, log *slog.Logger) {
	tick.Every(ctx, time.Minute, func() {
		if n := purgeExpiredKeys(ctx, st, log); n > 0 {
			log.Info("expired idempotency keys purged", "keys", n)
		}
	})
}

// keyPurger is the store's purge of expired idempotency keys.
type keyPurger interface {
	PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int64, error)
}

// purgeExpiredKeys is one round of the purge: batches while they come
// back full. It returns how many keys went.
func purgeExpiredKeys(ctx context.Context, p keyPurger, log *slog.Logger) int64 {
	var total int64
	for range idemPurgeBatches {
		n, err := p.PurgeIdempotencyKeys(ctx, time.Now(), idemPurgeBatch)
		if err != nil {
			log.Debug("purge idempotency keys", "err", err)
			break
		}
		total += n
		if n < idemPurgeBatch {
			break
		}
	}
	return total
}
