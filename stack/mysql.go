package stack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
		tools:     []string{"mariadb-install-db", "mariadb", "mariadb-admin"},
		tier:      0,
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
	args = append(args, mysqlSettings(p)...)
	out, err := runTool(ctx, p, install, args...)
	if err != nil {
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

// mysqlReady pings the server over TCP, the way the application connects;
// the socket, which setup uses, is created before either answers. The
// ping logs in (root has no password on this local server), because a bare
// TCP connect would leave an "aborted connection" warning in the log.
func mysqlReady(ctx context.Context, p *Proc) error {
	admin, err := programPath("mariadb-admin")
	if err != nil {
		return permanent{err}
	}
	out, err := runTool(ctx, p, admin, "--no-defaults", "--protocol=tcp", "--host=127.0.0.1",
		"--port="+strconv.Itoa(p.Port), "--user=root", "--connect-timeout=1", "ping")
	if err != nil {
		return fmt.Errorf("mariadb-admin ping: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// setupMySQL creates the database and its two users: the application's,
// from both TCP (127.0.0.1, as the app connects) and the socket
// (localhost), and a read-only one for checks that must not write.
func setupMySQL(ctx context.Context, p *Proc) error {
	db := "`" + p.s.st.Database + "`" // validated to [A-Za-z0-9_]+
	var sql strings.Builder
	fmt.Fprintf(&sql, "CREATE DATABASE IF NOT EXISTS %s CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;\n", db)
	for _, u := range []struct{ user, password, grant string }{
		{appUser, appPassword, "ALL PRIVILEGES"},
		{readOnlyUser, readOnlyPassword, "SELECT"},
	} {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			fmt.Fprintf(&sql, "CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY '%s';\n", u.user, host, u.password)
			fmt.Fprintf(&sql, "GRANT %s ON %s.* TO '%s'@'%s';\n", u.grant, db, u.user, host)
		}
	}
	client, err := programPath("mariadb")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, client, "--no-defaults", "--protocol=socket", "--socket="+p.s.st.MySQLSocket,
		"--user=root", "--batch")
	cmd.Stdin = strings.NewReader(sql.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("create database and users: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// runTool runs a short-lived MariaDB tool and returns its output.
func runTool(ctx context.Context, p *Proc, prog string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = p.dir()
	return cmd.CombinedOutput()
}
