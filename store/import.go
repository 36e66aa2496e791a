package store

import (
	"context"
	"fmt"
	"shortener"
)

// importBatch is how many links one INSERT of Import carries: large enough
// that a million links take a few hundred statements, small enough to stay
// far below MySQL's 65,535 placeholders and max_allowed_packet.
const importBatch = 2000

// Import bulk-loads links that exist nowhere else yet, many per statement,
// skipping any whose ID or code is taken (so a repeated import adds only
// what is missing). It returns how many it inserted. It is for loading
// data sets (make bench), not for serving: it takes no idempotency key,
// warms no cache, and each statement runs under the query timeout.
//
// The caller picks the IDs. Snowflake never issues a negative ID, so a
// data set numbered -1, -2, … cannot collide with a link an app creates.
func (s *Store) Import(ctx context.Context, links []shortener.Link) (int64, error) {
	var inserted int64
	for start := 0; start < len(links); start += importBatch {
		batch := links[start:min(start+importBatch, len(links))]
		args := make([]any, 0, 6*len(batch))
		for _, l := range batch {
			args = append(args, l.ID, l.Code, l.URL, l.Redirect, l.CreatedAt.UTC(), nullTime(l.ExpiresAt))
		}
		n, err := s.execBatch(ctx, "INSERT IGNORE INTO links (id, code, url, redirect, created_at, expires_at) VALUES ", "(?, ?, ?, ?, ?, ?)", args)
		if err != nil {
			return inserted, fmt.Errorf("import links %d-%d: %w: %w", start, start+len(batch)-1, shortener.ErrUnavailable, err)
		}
		inserted += n
	}
	return inserted, nil
}

func (s *Store) execBatch(ctx context.Context, head, row string, args []any) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := insertValues(ctx, s.db, head, row, "", args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
