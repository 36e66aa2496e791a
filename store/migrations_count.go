package store

import (
	"context"
	"fmt"
	"shortener"
)

// AppliedMigrations counts the migrations recorded as applied.
func (s *Store) AppliedMigrations(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		return 0, fmt.Errorf("count migrations: %w: %w", shortener.ErrUnavailable, err)
	}
	return n, nil
}

// Migrations returns how many migrations the binary embeds.
func Migrations() (int, error) {
	ms, err := migrations()
	return len(ms), err
}
