package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"shortener"
	"time"
)

// visitorKeyDays is how many days a visitor key outlives its day. One
// keeps a click stamped just before midnight and enriched just after
// hashable under its own day's key on every instance; the second is a
// margin for clocks. Then the key goes, and with it any way to tell
// whose a stored hash was.
const visitorKeyDays = 2

// VisitorKey returns the 32-byte visitor key of the UTC day day falls
// in, creating it at random if no instance has yet: every instance asking
// for a day gets the same key (the first insert wins, the others find it).
// It also deletes the keys of days that ended more than visitorKeyDays
// ago by the database's clock: a primary-key range delete, cheap enough
// for a call made about once a day per instance.
func (s *Store) VisitorKey(ctx context.Context, day time.Time) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	d := day.UTC().Format(time.DateOnly)
	if _, err := s.db.ExecContext(ctx,
		"DELETE FROM visitor_keys WHERE day < UTC_DATE() - INTERVAL ? DAY", visitorKeyDays); err != nil {
		return nil, fmt.Errorf("visitor key %s: delete old keys: %w: %w", d, shortener.ErrUnavailable, err)
	}
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand's contract)
	// A no-op update rather than INSERT IGNORE: only a duplicate day is
	// ignored, and any other error is still one.
	if _, err := s.db.ExecContext(ctx,
		"INSERT INTO visitor_keys (day, vkey) VALUES (?, ?) ON DUPLICATE KEY UPDATE day = day", d, key); err != nil {
		return nil, fmt.Errorf("visitor key %s: create: %w: %w", d, shortener.ErrUnavailable, err)
	}
	var got []byte
	if err := s.db.QueryRowContext(ctx, "SELECT vkey FROM visitor_keys WHERE day = ?", d).Scan(&got); err != nil {
		return nil, fmt.Errorf("visitor key %s: read: %w: %w", d, shortener.ErrUnavailable, err)
	}
	return got, nil
}
