package store

import "context"

// CaughtUpAt reads a journal's recorded caught-up time, for the tests.
func (s *Store) CaughtUpAt(ctx context.Context, journal int64, at any) error {
	return s.db.QueryRowContext(ctx, "SELECT caught_up_at FROM click_journals WHERE journal_id = ?", journal).Scan(at)
}
