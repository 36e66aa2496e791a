package deploy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shortener/store"
)

// TestMariaDBEntrypointGrants runs the MariaDB image's entrypoint with a
// real mariadbd (outside a container, in a temporary directory) and
// checks that the app's user can run every migration and no more than its
// grant: the least privilege the image gives it. A user an older image
// granted ALL loses it at the next start.
func TestMariaDBEntrypointGrants(t *testing.T) {
	requireTool(t, "mariadbd", "mariadb-server")
	ctx := context.Background()
	dir := t.TempDir()
	for _, d := range []string{"data", "run", "tmp", "bin"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// mariadbd refuses to run as root without --user=root; the image runs
	// it as mysql, a test may run as root.
	if os.Geteuid() == 0 {
		for _, prog := range []string{"mariadbd", "mariadb-install-db"} {
			real, err := exec.LookPath(prog)
			if err != nil {
				t.Fatal(err)
			}
			shim := fmt.Sprintf("#!/bin/sh\nexec %s \"$@\" --user=root\n", real)
			if err := os.WriteFile(filepath.Join(dir, "bin", prog), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A password the entrypoint must escape for SQL and the shell alike.
	password := `pa'ss\w"rd` + secret()
	port := freePort(t)
	env := append(os.Environ(),
		"PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH")+":/usr/sbin",
		"MARIADB_PASSWORD="+password,
		"MARIADB_DATADIR="+filepath.Join(dir, "data"),
		"MARIADB_RUNDIR="+filepath.Join(dir, "run"),
		"TMPDIR="+filepath.Join(dir, "tmp"),
		fmt.Sprintf("MARIADB_PORT=%d", port),
		"MARIADB_BUFFER_POOL=32M",
	)
	socket := filepath.Join(dir, "run", "mysqld.sock")
	user := func(ctx context.Context, sql string) (string, error) {
		cmd := exec.CommandContext(ctx, "mariadb", "--protocol=tcp", "-h127.0.0.1", fmt.Sprintf("-P%d", port),
			"-ushortener", "--batch", "--skip-column-names", "-e", sql)
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+password)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	root := func(sql string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, "mariadb", "--socket="+socket, "-uroot", "-e", sql).CombinedOutput(); err != nil {
			t.Fatalf("as root: %s: %v\n%s", sql, err, out)
		}
	}

	var stop func()
	start := func() {
		t.Helper()
		cmd := exec.Command("sh", "mariadb/entrypoint.sh")
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopped := false
		stop = func() {
			if stopped {
				return
			}
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
			cmd.Wait()                          //nolint:errcheck // killed
		}
		t.Cleanup(stop)
		// mariadb-install-db and the first start take seconds; the
		// deadline is only for a server that never comes up.
		wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		for {
			if _, err := user(wait, "SELECT 1"); err == nil {
				return
			}
			select {
			case <-wait.Done():
				t.Fatal("the entrypoint's MariaDB did not accept the app's user")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	start()

	// Every migration applies as the app's user.
	dsn := fmt.Sprintf("shortener:%s@tcp(127.0.0.1:%d)/shortener", password, port)
	st, err := store.Open(store.Config{DSN: dsn, MaxOpen: 2, MaxIdle: 2, DialTimeout: 5 * time.Second, QueryTimeout: 30 * time.Second},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx, time.Minute); err != nil {
		t.Fatalf("migrations as the app's user: %v", err)
	}
	checkGrants(t, user)

	// An install whose user an older image granted ALL: the next start
	// takes it back. Only root may log in as MariaDB's root (unix_socket).
	if os.Geteuid() != 0 {
		t.Log("not root: the grant of an older image is not tried")
		return
	}
	root("GRANT ALL ON `shortener`.* TO 'shortener'@'%'; GRANT CREATE USER ON *.* TO 'shortener'@'%'")
	if got, _ := user(ctx, "SHOW GRANTS"); !strings.Contains(got, "ALL PRIVILEGES") {
		t.Fatalf("GRANT ALL did not take: %s", got)
	}
	stop()
	start()
	checkGrants(t, user)
	if err := st.Migrate(ctx, time.Minute); err != nil {
		t.Fatalf("migrations after a restart: %v", err)
	}
}

// checkGrants checks the app's user has exactly the privileges it needs on
// its database and cannot reach beyond it.
func checkGrants(t *testing.T, user func(context.Context, string) (string, error)) {
	t.Helper()
	ctx := context.Background()
	got, err := user(ctx, "SHOW GRANTS")
	if err != nil {
		t.Fatalf("SHOW GRANTS: %v: %s", err, got)
	}
	want := "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER ON `shortener`.* TO `shortener`@`%`"
	if !strings.Contains(got, want) || strings.Contains(got, "ALL PRIVILEGES") || strings.Contains(got, "GRANT OPTION") ||
		strings.Count(got, "\n") != 1 {
		t.Errorf("grants of the app's user:\n%s\nwant its USAGE line and\n%s", got, want)
	}
	for _, sql := range []string{
		"CREATE DATABASE other",
		"CREATE USER 'x'@'%'",
		"SELECT COUNT(*) FROM mysql.user",
		"CREATE VIEW shortener.v AS SELECT 1",
		"CREATE PROCEDURE shortener.p() SELECT 1",
	} {
		if out, err := user(ctx, sql); err == nil {
			t.Errorf("the app's user may %s (%s); want it refused", sql, out)
		}
	}
}
