package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
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

// Migrate applies the embedded migrations that the database lacks. Two
// instances may call it at once: the one that takes the lock row applies
// them while the other waits, then finds nothing to do (lockMigrations).
func (s *Store) Migrate(ctx context.Context, wait time.Duration) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()

	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close()

	unlock, err := lockMigrations(ctx, conn, wait)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer unlock()

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

// lockMigrations takes the migration lock, a row in schema_lock, waiting
// up to wait for it; unlock gives it back. It is a row rather than
// GET_LOCK, which is the same server's alone: on a Galera cluster two
// instances migrating through different nodes were both granted it
// (checked by hand). Taking the row is one UPDATE that matches only a
// free row, so two takers through one node queue on its lock, and two
// through different nodes conflict at certification, where the loser's
// statement is run again by the server (wsrep_retry_autocommit) and then
// matches nothing. The lock lapses after wait, so an instance that dies
// holding it delays the next start by no more than that.
func lockMigrations(ctx context.Context, conn *sql.Conn, wait time.Duration) (unlock func(), err error) {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS schema_lock (
			id     TINYINT     NOT NULL PRIMARY KEY,
			holder VARCHAR(64) NULL,
			until  DATETIME(3) NULL
		) ENGINE=InnoDB`,
		"INSERT INTO schema_lock (id) VALUES (1) ON DUPLICATE KEY UPDATE id = id",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
	}
	var b [12]byte
	rand.Read(b[:]) //nolint:errcheck // never fails (crypto/rand)
	holder := hex.EncodeToString(b[:])
	ms := max(wait.Milliseconds(), 1000)
	for {
		res, err := conn.ExecContext(ctx, `UPDATE schema_lock SET holder = ?, until = NOW(3) + INTERVAL ? * 1000 MICROSECOND
			WHERE id = 1 AND (holder IS NULL OR until < NOW(3))`, holder, ms)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		} else if n == 1 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock not acquired within %s: %w", wait, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return func() {
		// A failed release lapses by itself after wait.
		conn.ExecContext(context.WithoutCancel(ctx), "UPDATE schema_lock SET holder = NULL, until = NULL WHERE id = 1 AND holder = ?", holder) //nolint:errcheck
	}, nil
}
