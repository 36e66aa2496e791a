package store

import (
	"context"
	"fmt"

	"shortener"
)

// ClickTotal is every click of the link MySQL holds, counted or pending
// (clickfold.go): what its visit
// counter starts from when it has none (visits.Limiter). Clicks still in
// an instance's journal are not in it yet.
func (s *Store) ClickTotal(ctx context.Context, linkID int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT COALESCE(SUM(clicks), 0) FROM click_hours WHERE link_id = ?)
		+ (SELECT COUNT(*) FROM click_pending WHERE link_id = ?)`, linkID, linkID).Scan(&n); err != nil {
		return 0, fmt.Errorf("click total of link %d: %w: %w", linkID, shortener.ErrUnavailable, err)
	}
	return n, nil
}
