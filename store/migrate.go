package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded migrations in version order. File names
// are NNNN_name.sql; each file holds one statement, because MySQL commits
// DDL implicitly and a half-applied multi-statement file could not be
// retried safely.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", base)
		}
		body, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrateLock names the MySQL advisory lock that serialises migrations
// across instances starting at the same moment.
const migrateLock = "shortener.migrate"

// Migrate applies the embedded migrations that the database lacks. Two
// instances may call it at once: a named lock (GET_LOCK) held on one
// connection lets one apply while the other waits, then finds nothing to do.
func (s *Store) Migrate(ctx context.Context, wait time.Duration) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()

	// GET_LOCK belongs to a session, so everything runs on one connection.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close()

	var got sql.NullInt64
	secs := int(wait / time.Second)
	if secs < 1 {
		secs = 1
	}
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", migrateLock, secs).Scan(&got); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("migrate: lock %q not acquired within %s", migrateLock, wait)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", migrateLock) //nolint:errcheck // the session ends with the connection anyway

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INT          NOT NULL PRIMARY KEY,
		name       VARCHAR(255) NOT NULL,
		applied_at DATETIME(3)  NOT NULL
	) ENGINE=InnoDB`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("migrate: read versions: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: read versions: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrate: read versions: %w", err)
	}

	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := conn.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.name, err)
		}
		if _, err := conn.ExecContext(ctx,
			"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, time.Now().UTC()); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.name, err)
		}
		s.log.Info("migration applied", "version", m.version, "name", m.name)
	}
	return nil
}
