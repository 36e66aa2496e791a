package store

import (
	"context"
	"fmt"
	"shortener"
	"strings"
	"time"
)

// exportPage is how many links ExportLinks reads per query: memory stays
// at one page however many links an owner has, and each page is a short
// query of its own, never a cursor held open while a slow client reads.
const exportPage = 500

// ExportLinks calls fn with every link of owner that is not deleted,
// oldest first, and its clicks counted so far (every click shipped from
// the instances' journals). It reads a page of links and their totals at
// a time, each query under the query timeout, and calls fn between
// queries, so fn may write to a client at the client's pace. It is not a
// snapshot: a link created or deleted while it runs may or may not be
// given. An error from fn ends it and is returned as it is.
func (s *Store) ExportLinks(ctx context.Context, owner string, fn func(l shortener.Link, clicks int64) error) error {
	var cursor int64
	for {
		page, err := s.SearchLinks(ctx, owner, "", "", time.Time{}, time.Time{}, cursor, true, exportPage)
		if err != nil {
			return fmt.Errorf("export links: %w", err)
		}
		if len(page) == 0 {
			return nil
		}
		totals, err := s.clickTotals(ctx, page)
		if err != nil {
			return fmt.Errorf("export links: %w", err)
		}
		for _, l := range page {
			if err := fn(l, totals[l.ID]); err != nil {
				return err
			}
		}
		if len(page) < exportPage {
			return nil
		}
		cursor = page[len(page)-1].ID
	}
}

// clickTotals returns the clicks counted for each of links, by ID; a link
// never clicked is absent. One query on the primary keys of click_hours
// and click_pending, both led by link_id.
func (s *Store) clickTotals(ctx context.Context, links []shortener.Link) (map[int64]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := make([]any, len(links))
	for i, l := range links {
		args[i] = l.ID
	}
	in := "link_id IN (?" + strings.Repeat(", ?", len(links)-1) + ")"
	rows, err := s.db.QueryContext(ctx, "SELECT link_id, SUM(n) FROM (SELECT link_id, SUM(clicks) AS n FROM click_hours WHERE "+in+
		" GROUP BY link_id UNION ALL SELECT link_id, COUNT(*) FROM click_pending WHERE "+in+" GROUP BY link_id) t GROUP BY link_id",
		append(args, args...)...)
	if err != nil {
		return nil, fmt.Errorf("click totals: %w: %w", shortener.ErrUnavailable, err)
	}
	defer rows.Close()
	out := make(map[int64]int64, len(links))
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("click totals: %w: %w", shortener.ErrUnavailable, err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("click totals: %w: %w", shortener.ErrUnavailable, err)
	}
	return out, nil
}
