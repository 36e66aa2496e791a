package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"shortener"
	"strings"
	"time"
)

// Delete marks the link deleted and records a cache invalidation for it in
// the same transaction, so the invalidation is as durable as the delete.
// Deleting a missing link returns shortener.ErrNotFound, an already
// deleted one shortener.ErrGone.
func (s *Store) Delete(ctx context.Context, code string, now time.Time) error {
	for try := 1; ; try++ {
		if err := s.delete(ctx, code, now); !s.again(ctx, err, try) {
			return err
		}
	}
}

// delete is one try of Delete.
func (s *Store) delete(ctx context.Context, code string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete link %s: %w: %w", code, shortener.ErrUnavailable, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx,
		"UPDATE links SET deleted_at = ? WHERE code = ? AND deleted_at IS NULL", now.UTC(), code)
	if err != nil {
		return fmt.Errorf("delete link %s: %w: %w", code, shortener.ErrUnavailable, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete link %s: %w: %w", code, shortener.ErrUnavailable, err)
	} else if n == 0 {
		// Already deleted is gone (410), never deleted is unknown (404).
		var one int
		switch err := tx.QueryRowContext(ctx, "SELECT 1 FROM links WHERE code = ?", code).Scan(&one); {
		case err == nil:
			return fmt.Errorf("delete link %s: %w", code, shortener.ErrGone)
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("delete link %s: %w", code, shortener.ErrNotFound)
		default:
			return fmt.Errorf("delete link %s: %w: %w", code, shortener.ErrUnavailable, err)
		}
	}
	if err := recordDeleteEvent(ctx, tx, code, now); err != nil { // webhooks.go
		return fmt.Errorf("delete link %s: %w: %w", code, shortener.ErrUnavailable, err)
	}
	if err := recordInvalidation(ctx, tx, code); err != nil {
		return fmt.Errorf("delete link %s: %w", code, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete link %s: commit: %w: %w", code, shortener.ErrUnavailable, err)
	}
	return nil
}

// recordInvalidation records code's invalidation in tx, which must then
// commit at once: it is the last statement of a delete or an edit. The
// record's time is the database's, like the leases': the grace that keeps
// it pending is measured on one clock for every instance. NOW(3) is when
// the statement began, and an instance that reads the outbox less than
// half the grace after its last read sees every record whose transaction
// committed within the other half of that time (cache/sync.go), so
// nothing may run between this statement and the commit.
func recordInvalidation(ctx context.Context, tx *sql.Tx, code string) error {
	if _, err := tx.ExecContext(ctx, "INSERT INTO invalidations (code, created_at) VALUES (?, NOW(3))", code); err != nil {
		return fmt.Errorf("record invalidation: %w: %w", shortener.ErrUnavailable, err)
	}
	return nil
}

// PendingInvalidations returns every code with an invalidation recorded,
// once each with its latest record's time, oldest first. There is no
// limit: every pending code must bypass Redis, and a code is a few bytes.
//
// On Galera the read first waits until its node has applied every
// write-set the cluster committed before it (wsrep_sync_wait=1, one
// round trip across the group): while the instances disagree on the
// writer, a delete committed through one node is read through another,
// and a read that missed its record would let an instance trust its L1
// past the record (cache/sync.go). A node that cannot catch up within
// the store's timeout fails the read, which the cache counts as a gap.
func (s *Store) PendingInvalidations(ctx context.Context) ([]shortener.Invalidation, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q := "SELECT code, MAX(created_at) AS latest FROM invalidations GROUP BY code ORDER BY latest"
	if s.cluster != nil {
		q = "SET STATEMENT wsrep_sync_wait = 1 FOR " + q
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("pending invalidations: %w: %w", shortener.ErrUnavailable, err)
	}
	defer rows.Close()
	var out []shortener.Invalidation
	for rows.Next() {
		var inv shortener.Invalidation
		if err := rows.Scan(&inv.Code, &inv.CreatedAt); err != nil {
			return nil, fmt.Errorf("pending invalidations: %w: %w", shortener.ErrUnavailable, err)
		}
		out = append(out, inv)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending invalidations: %w: %w", shortener.ErrUnavailable, err)
	}
	return out, nil
}

// DoneInvalidations removes the invalidations of codes recorded more than
// grace ago by the database's clock: they have reached Redis, more than
// once.
func (s *Store) DoneInvalidations(ctx context.Context, codes []string, grace time.Duration) error {
	if len(codes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := make([]any, 0, len(codes)+1)
	args = append(args, grace.Microseconds())
	for _, c := range codes {
		args = append(args, c)
	}
	q := "DELETE FROM invalidations WHERE created_at < NOW(3) - INTERVAL ? MICROSECOND AND code IN (?" + strings.Repeat(",?", len(codes)-1) + ")"
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("done invalidations: %w: %w", shortener.ErrUnavailable, err)
	}
	return nil
}
