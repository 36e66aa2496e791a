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

// ErrKeyNameTaken means an API key with that name exists.
var ErrKeyNameTaken = errors.New("store: API key name taken")

// APIKey describes a stored key; the key itself is never stored.
type APIKey struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	RevokedAt time.Time // zero: active
	Admin     bool      // may manage every link
}

// CreateAPIKey stores the hash of a new key under name; an admin key may
// manage every link.
func (s *Store) CreateAPIKey(ctx context.Context, name, hash string, admin bool, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.db.ExecContext(ctx, "INSERT INTO api_keys (name, key_hash, created_at, admin) VALUES (?, ?, ?, ?)", name, hash, now.UTC(), admin)
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == 1062:
		return fmt.Errorf("create API key %q: %w", name, ErrKeyNameTaken)
	case err != nil:
		return fmt.Errorf("create API key %q: %w: %w", name, shortener.ErrUnavailable, err)
	}
	return nil
}

// RevokeAPIKey revokes the active key called name; shortener.ErrNotFound if none.
func (s *Store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.db.ExecContext(ctx, "UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", now.UTC(), name)
	if err != nil {
		return fmt.Errorf("revoke API key %q: %w: %w", name, shortener.ErrUnavailable, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke API key %q: %w", name, shortener.ErrNotFound)
	}
	return nil
}

// APIKeys lists every key, revoked ones included.
func (s *Store) APIKeys(ctx context.Context) ([]APIKey, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, "SELECT id, name, created_at, revoked_at, admin FROM api_keys ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w: %w", shortener.ErrUnavailable, err)
	}
	defer rows.Close()
	var out []APIKey
	for rows.Next() {
		var k APIKey
		var revoked sql.NullTime
		if err := rows.Scan(&k.ID, &k.Name, &k.CreatedAt, &revoked, &k.Admin); err != nil {
			return nil, fmt.Errorf("list API keys: %w: %w", shortener.ErrUnavailable, err)
		}
		k.RevokedAt = revoked.Time
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list API keys: %w: %w", shortener.ErrUnavailable, err)
	}
	return out, nil
}

// ActiveKeys returns the hash of every key not revoked, and whether it
// is an admin key.
func (s *Store) ActiveKeys(ctx context.Context) ([]shortener.APIKeyHash, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, "SELECT key_hash, admin FROM api_keys WHERE revoked_at IS NULL")
	if err != nil {
		return nil, fmt.Errorf("active API keys: %w: %w", shortener.ErrUnavailable, err)
	}
	defer rows.Close()
	var out []shortener.APIKeyHash
	for rows.Next() {
		var k shortener.APIKeyHash
		if err := rows.Scan(&k.Hash, &k.Admin); err != nil {
			return nil, fmt.Errorf("active API keys: %w: %w", shortener.ErrUnavailable, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("active API keys: %w: %w", shortener.ErrUnavailable, err)
	}
	return out, nil
}
