// Package store keeps links in MySQL (MariaDB), the source of truth.
//
// The schema lives in versioned migrations embedded in the binary and is
// applied at start-up (Migrate). Every query runs under its own deadline,
// so a stalled database costs a request a bounded wait, never a hang, and
// every failure to reach the database wraps shortener.ErrUnavailable so the HTTP
// layer can answer 503 without guessing.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"shortener"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Config tunes the connection pool and deadlines.
type Config struct {
	DSN          string        // go-sql-driver DSN
	MaxOpen      int           // pool size
	MaxIdle      int           // idle connections kept
	MaxLifetime  time.Duration // recycle connections after this long
	DialTimeout  time.Duration // TCP connect deadline
	QueryTimeout time.Duration // deadline of every query
}

// Store reads and writes links. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	log     *slog.Logger
	timeout time.Duration
}

// Open prepares a pool for cfg. It does not connect; call Ping or Migrate.
func Open(cfg Config, log *slog.Logger) (*Store, error) {
	dc, err := mysql.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("open store: parse DSN: %w", err)
	}
	// Socket deadlines back up the context deadlines: a query on a
	// half-dead connection must not outlive its request.
	dc.ParseTime = true
	dc.Loc = time.UTC
	// RowsAffected counts matched rows, not changed ones, so "did this
	// UPDATE find its row" has one answer.
	dc.ClientFoundRows = true
	if cfg.DialTimeout > 0 {
		dc.Timeout = cfg.DialTimeout
	}
	if cfg.QueryTimeout > 0 {
		if dc.ReadTimeout == 0 {
			dc.ReadTimeout = 2 * cfg.QueryTimeout
		}
		if dc.WriteTimeout == 0 {
			dc.WriteTimeout = 2 * cfg.QueryTimeout
		}
	}
	conn, err := mysql.NewConnector(dc)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(cfg.MaxOpen)
	db.SetMaxIdleConns(cfg.MaxIdle)
	db.SetConnMaxLifetime(cfg.MaxLifetime)
	timeout := cfg.QueryTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	return &Store{db: db, log: log, timeout: timeout}, nil
}

// Close closes the pool.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping: %w: %w", shortener.ErrUnavailable, err)
	}
	return nil
}

// Create inserts l. It returns shortener.ErrCodeTaken if the code is in use; the
// insert is committed when Create returns nil.
func (s *Store) Create(ctx context.Context, l shortener.Link) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.db.ExecContext(ctx,
		"INSERT INTO links (id, code, url, redirect, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
		l.ID, l.Code, l.URL, l.Redirect, l.CreatedAt.UTC(), nullTime(l.ExpiresAt))
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 { // ER_DUP_ENTRY
			return fmt.Errorf("create link %s: %w", l.Code, shortener.ErrCodeTaken)
		}
		return fmt.Errorf("create link %s: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	return nil
}

// shortener.Link returns the link with code, including expired and deleted links
// (the caller decides what Gone means for it).
func (s *Store) Link(ctx context.Context, code string) (shortener.Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		l                  shortener.Link
		expires, deletedAt sql.NullTime
	)
	err := s.db.QueryRowContext(ctx,
		"SELECT id, code, url, redirect, created_at, expires_at, deleted_at FROM links WHERE code = ?", code).
		Scan(&l.ID, &l.Code, &l.URL, &l.Redirect, &l.CreatedAt, &expires, &deletedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return shortener.Link{}, fmt.Errorf("get link %s: %w", code, shortener.ErrNotFound)
	case err != nil:
		return shortener.Link{}, fmt.Errorf("get link %s: %w: %w", code, shortener.ErrUnavailable, err)
	}
	l.ExpiresAt = expires.Time
	l.DeletedAt = deletedAt.Time
	return l, nil
}

func nullTime(t time.Time) sql.NullTime {
	return sql.NullTime{Time: t.UTC(), Valid: !t.IsZero()}
}

// RedactDSN returns dsn with its password masked, for logs.
func RedactDSN(dsn string) string {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparseable DSN)"
	}
	if c.Passwd != "" {
		c.Passwd = "***"
	}
	return c.FormatDSN()
}
