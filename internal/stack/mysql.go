package stack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// mysqlSettings are the options mariadb-install-db and mariadbd share.
//
// Each server gets its own tmpdir: a starting mariadbd deletes every
// "#sql*" file in its tmpdir as a leftover, so servers sharing /tmp (other
// stacks, other packages' tests running in parallel) delete each other's
// temporary tables, which breaks mariadb-install-db halfway.
//
// A small buffer pool and redo log make the data directory small and
// start-up fast, and utf8mb4 is what the application stores.
func mysqlSettings(p *Proc) []string {
	return []string{
		"--tmpdir=" + mysqlTmpDir(p),
		"--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size=16M",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_unicode_ci",
	}
}

func mysqlKind() kind {
	return kind{
		name:      KindMySQL,
		program:   "mariadbd",
		tools:     []string{"mariadb-install-db"},
		configure: configureMySQL,
		args:      mysqlArgs,
		ready:     mysqlReady,
		setup:     setupMySQL,
	}
}

func mysqlDataDir(p *Proc) string { return filepath.Join(p.dir(), "data") }
func mysqlTmpDir(p *Proc) string  { return filepath.Join(p.dir(), "tmp") }

// configureMySQL initialises the data directory unless it already holds
// one, so a restart or a second Start keeps the data.
func configureMySQL(ctx context.Context, p *Proc, _ bool) error {
	if err := os.MkdirAll(mysqlTmpDir(p), 0o755); err != nil {
		return err
	}
	data := mysqlDataDir(p)
	if _, err := os.Stat(filepath.Join(data, "mysql")); err == nil {
		return nil
	}
	// No system tables: nothing there, or an install that was interrupted.
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	install, err := programPath("mariadb-install-db")
	if err != nil {
		return err
	}
	args := []string{
		"--no-defaults",
		"--datadir=" + data,
		"--user=root",
		// Password (here: none) authentication rather than unix_socket, so
		// that root works the same over the socket whoever runs the stack.
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
	}
	cmd := exec.CommandContext(ctx, install, append(args, mysqlSettings(p)...)...)
	cmd.Dir = p.dir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	p.s.log.Info("initialised MariaDB data directory", "proc", p.Name, "datadir", data)
	return nil
}

func mysqlArgs(p *Proc) []string {
	args := []string{
		"--no-defaults", // must come first
		"--datadir=" + mysqlDataDir(p),
		"--port=" + strconv.Itoa(p.Port),
		"--bind-address=127.0.0.1",
		"--socket=" + p.s.st.MySQLSocket,
		"--pid-file=" + filepath.Join(p.dir(), "mariadbd.pid"),
		"--user=root",
		"--skip-log-bin",
		"--skip-name-resolve",
	}
	return append(args, mysqlSettings(p)...)
}

// mysqlReady pings the server over TCP, the way the application connects.
// Any answer from the server counts, a refused login too (root may log
// in only over the socket): it is up and speaking the protocol, which is
// what readiness means here; setup then logs in over the socket.
func mysqlReady(ctx context.Context, p *Proc) error {
	return withDB(ctx, "root@tcp("+p.Addr()+")/?timeout=1s", func(db *sql.DB) error {
		err := db.PingContext(ctx)
		var me *mysql.MySQLError
		if err != nil && !errors.As(err, &me) {
			return fmt.Errorf("ping %s: %w", p.Name, err)
		}
		return nil
	})
}

// setupMySQL creates the database and its two users: the application's,
// from both TCP (127.0.0.1, as the app connects) and the socket
// (localhost), and a read-only one for checks that must not write.
func setupMySQL(ctx context.Context, p *Proc) error {
	db := "`" + p.s.st.Database + "`" // validated to [A-Za-z0-9_]+
	stmts := []string{fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", db)}
	for _, u := range []struct{ user, password, grant string }{
		{appUser, appPassword, "ALL PRIVILEGES"},
		{readOnlyUser, readOnlyPassword, "SELECT"},
	} {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			stmts = append(stmts,
				fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY '%s'", u.user, host, u.password),
				fmt.Sprintf("GRANT %s ON %s.* TO '%s'@'%s'", u.grant, db, u.user, host))
		}
	}
	if err := p.s.asRoot(ctx, stmts...); err != nil {
		return fmt.Errorf("create database and users: %w", err)
	}
	return nil
}

// AddDatabase creates the empty database name beside the stack's own,
// the application user holding all privileges on it, and returns that
// user's DSN for it: tests that share one stack each get a schema of
// their own (package stacktest). name must match [A-Za-z0-9_]+.
func (s *Stack) AddDatabase(ctx context.Context, name string) (string, error) {
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("%w: database name %q: want [A-Za-z0-9_]+", ErrConfig, name)
	}
	stmts := []string{fmt.Sprintf("CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", name)}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		stmts = append(stmts, fmt.Sprintf("GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'%s'", name, appUser, host))
	}
	if err := s.asRoot(ctx, stmts...); err != nil {
		return "", fmt.Errorf("add database %s: %w", name, err)
	}
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true", appUser, appPassword, s.MySQL().Addr(), name), nil
}

// DropDatabase drops a database AddDatabase made.
func (s *Stack) DropDatabase(ctx context.Context, name string) error {
	if !namePattern.MatchString(name) || name == s.st.Database {
		return fmt.Errorf("%w: drop database %q: not one AddDatabase made", ErrConfig, name)
	}
	if err := s.asRoot(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS `%s`", name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// asRoot runs stmts as MariaDB's root, over the socket.
func (s *Stack) asRoot(ctx context.Context, stmts ...string) error {
	return withDB(ctx, "root@unix("+s.st.MySQLSocket+")/?timeout=2s", func(conn *sql.DB) error {
		for _, q := range stmts {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// withDB runs f with a one-connection pool on dsn and closes it, so that
// the server logs a clean quit rather than an aborted connection.
func withDB(ctx context.Context, dsn string, f func(*sql.DB) error) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return f(db)
}
