package stack_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"shortener/internal/stack/stacktest"
)

func TestMySQLUsersAndRestart(t *testing.T) {
	s := stacktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	app, ro := s.MySQLDSN(), s.MySQLReadOnlyDSN()
	mustSQL(t, ctx, app, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
	if got := mustSQL(t, ctx, ro, "SELECT COUNT(*) FROM t"); got != "1" {
		t.Fatalf("read-only count: got %q, want 1", got)
	}
	if out, err := runSQL(ctx, ro, "INSERT INTO t VALUES (2)"); err == nil {
		t.Fatalf("read-only user could insert: %s", out)
	}
	if got := mustSQL(t, ctx, app, "SELECT @@character_set_database"); got != "utf8mb4" {
		t.Errorf("database charset: got %q, want utf8mb4", got)
	}

	// A crashed server comes back on the same data, not a fresh one.
	my := s.MySQL()
	if err := my.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := runSQL(ctx, app, "SELECT 1"); err == nil {
		t.Fatal("query succeeded with MariaDB killed")
	}
	if err := my.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustSQL(t, ctx, app, "SELECT id FROM t"); got != "1" {
		t.Fatalf("after restart: got %q, want the row written before the kill", got)
	}
}

// runSQL runs statements with the mariadb client as the user of a
// go-sql-driver DSN "user:password@tcp(host:port)/db?…", over TCP as the
// application connects.
func runSQL(ctx context.Context, dsn, sql string) (string, error) {
	user, rest, _ := strings.Cut(dsn, "@tcp(")
	user, password, _ := strings.Cut(user, ":")
	addr, rest, _ := strings.Cut(rest, ")/")
	db, _, _ := strings.Cut(rest, "?")
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "--protocol=tcp", "--host="+host, "--port="+port,
		"--user="+user, "--password="+password, "--batch", "--skip-column-names", "--execute="+sql, db)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustSQL(tb testing.TB, ctx context.Context, dsn, sql string) string {
	tb.Helper()
	out, err := runSQL(ctx, dsn, sql)
	if err != nil {
		tb.Fatalf("%s as %s: %v: %s", sql, strings.SplitN(dsn, ":", 2)[0], err, out)
	}
	return out
}
