package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"shortener"
)

// Update applies p to the link with code and records a cache invalidation
// for it in the same transaction, as Delete does: every tier forgets the
// old link through the path a delete takes, and a fill read before the
// edit cannot land after it (docs/design.md, Request paths, "Deletes and edits"). It
// returns the link as stored. A missing link is shortener.ErrNotFound, a
// deleted one shortener.ErrGone; an expired link may be edited (given a
// later expiry, it redirects again).
func (s *Store) Update(ctx context.Context, code string, p shortener.LinkPatch, now time.Time) (shortener.Link, error) {
	for try := 1; ; try++ {
		if l, err := s.update(ctx, code, p, now); !s.again(ctx, err, try) {
			return l, err
		}
	}
}

// update is one try of Update.
func (s *Store) update(ctx context.Context, code string, p shortener.LinkPatch, now time.Time) (shortener.Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) (shortener.Link, error) {
		return shortener.Link{}, fmt.Errorf("update link %s: %w: %w", code, shortener.ErrUnavailable, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	l, err := scanLink(tx.QueryRowContext(ctx, "SELECT "+linkColumns+" FROM links WHERE code = ? FOR UPDATE", code))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return shortener.Link{}, fmt.Errorf("update link %s: %w", code, shortener.ErrNotFound)
	case err != nil:
		return fail(err)
	case !l.DeletedAt.IsZero():
		return shortener.Link{}, fmt.Errorf("update link %s: %w", code, shortener.ErrGone)
	}
	l = p.Apply(l)
	if len(l.Tags) == 0 {
		l.Tags = nil
	}
	l.UpdatedAt = now.UTC().Truncate(time.Millisecond)
	if _, err := tx.ExecContext(ctx, "UPDATE links SET url = ?, redirect = ?, expires_at = ?, disabled = ?, tags = ?, "+
		"max_visits = ?, password_hash = ?, updated_at = ? WHERE id = ?",
		l.URL, l.Redirect, nullTime(l.ExpiresAt), l.Disabled, nullString(joinTags(l.Tags)),
		nullInt(l.MaxVisits), nullString(l.PasswordHash), l.UpdatedAt, l.ID); err != nil {
		return fail(err)
	}
	if err := recordLinkEvents(ctx, tx, shortener.EventLinkUpdated, l.UpdatedAt, l); err != nil { // webhooks.go
		return fail(err)
	}
	if err := recordInvalidation(ctx, tx, code); err != nil {
		return shortener.Link{}, fmt.Errorf("update link %s: %w", code, err)
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return l, nil
}
