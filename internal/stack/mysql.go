package stack

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// mysqlSettings are the options mariadb-install-db and mariadbd share.
//
// Each server gets its own tmpdir: a starting mariadbd deletes every
// "#sql*" file in its tmpdir as a leftover, so servers sharing /tmp (other
// stacks, other packages' tests running in parallel) delete each other's
// temporary tables, which breaks mariadb-install-db halfway.
//
// The buffer pool and redo log are the stack's (Config.MySQLBufferPool,
// MySQLLogFile), small by default: a small data directory and a fast
// start. utf8mb4 is what the application stores.
func mysqlSettings(p *Proc) []string {
	return []string{
		"--tmpdir=" + mysqlTmpDir(p),
		"--innodb-buffer-pool-size=" + cmp.Or(p.s.st.MySQLBufferPool, "64M"),
		"--innodb-log-file-size=" + cmp.Or(p.s.st.MySQLLogFile, "16M"),
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

// mysqlSocket is the server's unix socket: the stack's for its one
// MariaDB, and beside it one per Galera node ("…/mysql-1.sock"), still
// short enough for a sockaddr_un (socketPath leaves room).
func (p *Proc) mysqlSocket() string {
	if !p.galera() {
		return p.s.st.MySQLSocket
	}
	return strings.TrimSuffix(p.s.st.MySQLSocket, ".sock") + strings.TrimPrefix(p.Name, "mysql") + ".sock"
}

// hasSystemTables reports whether the server's data directory holds an
// installed MariaDB.
func hasSystemTables(p *Proc) bool {
	_, err := os.Stat(filepath.Join(mysqlDataDir(p), "mysql"))
	return err == nil
}

// configureMySQL initialises the data directory unless it already holds
// one, so a restart or a second Start keeps the data.
func configureMySQL(ctx context.Context, p *Proc, _ bool) error {
	if err := os.MkdirAll(mysqlTmpDir(p), 0o755); err != nil {
		return err
	}
	if hasSystemTables(p) {
		return nil
	}
	return installDB(ctx, p)
}

// installDB makes a new data directory with mariadb-install-db.
func installDB(ctx context.Context, p *Proc) error {
	data := mysqlDataDir(p)
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
		"--socket=" + p.mysqlSocket(),
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
	if err := asRoot(ctx, p, stmts...); err != nil {
		return fmt.Errorf("create database and users: %w", err)
	}
	return nil
}

// AddDatabase creates the empty database name beside the stack's own,
// the application user holding all privileges on it, and returns that
// user's DSN for it: tests that share one stack each get a schema of
// their own (package stacktest). name must match [A-Za-z0-9_]+. On a
// Galera cluster it runs on the first node, whose address the DSN names;
// the cluster replicates the database and the grant to the others.
func (s *Stack) AddDatabase(ctx context.Context, name string) (string, error) {
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("%w: database name %q: want [A-Za-z0-9_]+", ErrConfig, name)
	}
	stmts := []string{fmt.Sprintf("CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", name)}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		stmts = append(stmts, fmt.Sprintf("GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'%s'", name, appUser, host))
	}
	if err := asRoot(ctx, s.MySQL(), stmts...); err != nil {
		return "", fmt.Errorf("add database %s: %w", name, err)
	}
	if err := s.grantApplied(ctx, name); err != nil {
		return "", fmt.Errorf("add database %s: %w", name, err)
	}
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true", appUser, appPassword, s.MySQL().Addr(), name), nil
}

// grantApplied returns once every other running Galera node has applied
// the grant on database name. The first node returns from a GRANT once
// the cluster has ordered it; the others apply it a moment later, and a
// connection to one of them meanwhile is refused the database (TestGalera
// in CI: "Access denied … to database"). A read with wsrep_sync_wait
// waits until its node has applied all the cluster committed before it.
func (s *Stack) grantApplied(ctx context.Context, name string) error {
	for _, n := range s.MySQLNodes() {
		if n == s.MySQL() || !n.galera() || !n.Running() {
			continue
		}
		err := withDB(ctx, rootDSN(n), func(db *sql.DB) error {
			var grants int
			if err := db.QueryRowContext(ctx, "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT COUNT(*) FROM mysql.db WHERE Db = ? AND User = ?",
				name, appUser).Scan(&grants); err != nil {
				return err
			}
			if grants == 0 {
				return fmt.Errorf("no grant on it after the cluster's writes were applied")
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	return nil
}

// DropDatabase drops a database AddDatabase made.
func (s *Stack) DropDatabase(ctx context.Context, name string) error {
	if !namePattern.MatchString(name) || name == s.st.Database {
		return fmt.Errorf("%w: drop database %q: not one AddDatabase made", ErrConfig, name)
	}
	if err := asRoot(ctx, s.MySQL(), fmt.Sprintf("DROP DATABASE IF EXISTS `%s`", name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// asRoot runs stmts as root of p, a MariaDB server, over its socket.
func asRoot(ctx context.Context, p *Proc, stmts ...string) error {
	return withDB(ctx, rootDSN(p), func(conn *sql.DB) error {
		for _, q := range stmts {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// rootDSN is root's over p's socket. Besides the dial, the reads and
// writes have deadlines too: a frozen server accepts a connection on its
// socket but never greets it.
func rootDSN(p *Proc) string {
	return "root@unix(" + p.mysqlSocket() + ")/?timeout=2s&readTimeout=5s&writeTimeout=5s"
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
