package main

import (
	"context"
	"database/sql"
	"fmt"

	"shortener/internal/stack"
)

// deployBufferPool and deployRedoLog are deploy/'s MariaDB sizes
// (deploy/mariadb/entrypoint.sh). The local stack runs smaller ones (64
// MiB and 16 MiB) so that the tests' many stacks start fast; with those,
// a million bench links overflow the buffer pool and the redo log forces
// dirty pages out every few seconds of creates, and the create row read
// 2,518-2,771 creates/s against 3,348-3,560 at deploy's sizes (three
// rounds each, the same stack minutes apart).
const (
	deployBufferPool = 128 << 20
	deployRedoLog    = 64 << 20
)

// sizeMySQL raises the stack's MariaDB to at least deploy's buffer pool
// and redo log for the run (both are dynamic in MariaDB 10.11) and
// returns what the report says of it, and restore, which puts the
// stack's sizes back. make up's stack runs larger ones than deploy's
// defaults (1 GiB and 256 MiB: internal/topology), which it keeps.
func sizeMySQL(ctx context.Context, s *stack.Stack) (string, func(), error) {
	db, err := sql.Open("mysql", "root@tcp("+s.MySQL().Addr()+")/?timeout=2s")
	if err != nil {
		return "", nil, err
	}
	var pool, redo int64
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_size, @@innodb_log_file_size").Scan(&pool, &redo); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("read MariaDB's sizes: %w", err)
	}
	set := func(ctx context.Context, pool, redo int64) error {
		_, err := db.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_size = ?, innodb_log_file_size = ?", pool, redo)
		return err
	}
	if err := set(ctx, max(pool, deployBufferPool), max(redo, deployRedoLog)); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("size MariaDB as deploy/ does: %w", err)
	}
	restore := func() {
		set(context.WithoutCancel(ctx), pool, redo) //nolint:errcheck // best effort: a restart of the stack puts them back too
		db.Close()
	}
	return fmt.Sprintf("MariaDB for the run: buffer pool %d MiB, redo log %d MiB, the larger of deploy/'s defaults (%d and %d MiB) and the stack's own (%d and %d MiB, put back after)",
		max(pool, deployBufferPool)>>20, max(redo, deployRedoLog)>>20, deployBufferPool>>20, deployRedoLog>>20, pool>>20, redo>>20), restore, nil
}
