package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"shortener"
	"time"

	"github.com/go-sql-driver/mysql"
)

// CreateIdempotent inserts l under an idempotency key, in one transaction
// with the key's record. If the key was already used for the same request,
// it inserts nothing and returns the link made the first time, with
// replayed set. Concurrent requests with one key serialise on the key's
// row: the second waits for the first to commit, then replays it.
func (s *Store) CreateIdempotent(ctx context.Context, l shortener.Link, idem shortener.Idempotency) (_ shortener.Link, replayed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for try := 1; ; try++ {
		l2, replayed, err := s.createIdempotent(ctx, l, idem)
		// Requests racing to reclaim an expired key can deadlock, and on
		// Galera two through different nodes conflict at commit; one is
		// rolled back, and it is safe to run again.
		if !s.again(ctx, err, try) {
			return l2, replayed, err
		}
	}
}

func (s *Store) createIdempotent(ctx context.Context, l shortener.Link, idem shortener.Idempotency) (shortener.Link, bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return shortener.Link{}, false, fmt.Errorf("create link %s: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	now := l.CreatedAt.UTC()
	// Insert first: concurrent requests with one key queue on the row's
	// lock and then see it taken. (Deleting an expired key first would
	// take gap locks on which first-time requests deadlock.)
	_, err = tx.ExecContext(ctx,
		"INSERT INTO idempotency_keys (scope, idem_key, request_hash, code, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
		idem.Scope, idem.Key, idem.RequestHash, l.Code, now, idem.ExpiresAt.UTC())
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == 1062: // the key is taken
		var expires time.Time
		if err := tx.QueryRowContext(ctx, "SELECT expires_at FROM idempotency_keys WHERE scope = ? AND idem_key = ?", idem.Scope, idem.Key).Scan(&expires); err != nil {
			return shortener.Link{}, false, fmt.Errorf("create link %s: read key: %w: %w", l.Code, shortener.ErrUnavailable, err)
		}
		if expires.After(now) { // live: replay the first answer
			tx.Rollback() //nolint:errcheck
			return s.replay(ctx, idem)
		}
		// Expired: the key is free again; claim it.
		res, err := tx.ExecContext(ctx,
			"UPDATE idempotency_keys SET request_hash = ?, code = ?, created_at = ?, expires_at = ? WHERE scope = ? AND idem_key = ? AND expires_at <= ?",
			idem.RequestHash, l.Code, now, idem.ExpiresAt.UTC(), idem.Scope, idem.Key, now)
		if err != nil {
			return shortener.Link{}, false, fmt.Errorf("create link %s: reclaim key: %w: %w", l.Code, shortener.ErrUnavailable, err)
		}
		if n, _ := res.RowsAffected(); n != 1 { // another request reclaimed it first
			tx.Rollback() //nolint:errcheck
			return s.replay(ctx, idem)
		}
	case err != nil:
		return shortener.Link{}, false, fmt.Errorf("create link %s: record key: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	if err := insertLink(ctx, tx, l); err != nil {
		return shortener.Link{}, false, err
	}
	if err := recordLinkEvents(ctx, tx, shortener.EventLinkCreated, l.CreatedAt, l); err != nil { // webhooks.go
		return shortener.Link{}, false, fmt.Errorf("create link %s: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	if err := tx.Commit(); err != nil {
		return shortener.Link{}, false, fmt.Errorf("create link %s: commit: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	return l, false, nil
}

// replay returns the link an idempotency key made.
func (s *Store) replay(ctx context.Context, idem shortener.Idempotency) (shortener.Link, bool, error) {
	var hash, code string
	err := s.db.QueryRowContext(ctx,
		"SELECT request_hash, code FROM idempotency_keys WHERE scope = ? AND idem_key = ?", idem.Scope, idem.Key).Scan(&hash, &code)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Expired and removed between our insert and this read: rare;
		// the client's retry will create afresh.
		return shortener.Link{}, false, fmt.Errorf("replay key: %w: key vanished", shortener.ErrUnavailable)
	case err != nil:
		return shortener.Link{}, false, fmt.Errorf("replay key: %w: %w", shortener.ErrUnavailable, err)
	}
	if hash != idem.RequestHash {
		return shortener.Link{}, false, fmt.Errorf("replay key: %w", shortener.ErrKeyReused)
	}
	l, err := s.Link(ctx, code)
	if err != nil {
		return shortener.Link{}, false, fmt.Errorf("replay key: %w", err)
	}
	return l, true, nil
}

// PurgeIdempotencyKeys removes up to limit keys that expired before
// before, and says how many it removed. Expired keys are dead weight: a
// reused expired key is reclaimed in place anyway, so nothing reads them.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.db.ExecContext(ctx, "DELETE FROM idempotency_keys WHERE expires_at < ? LIMIT ?", before.UTC(), limit)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w: %w", shortener.ErrUnavailable, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
