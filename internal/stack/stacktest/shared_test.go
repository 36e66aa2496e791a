package stacktest

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"shortener/internal/stack"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestShared: the package's tests get one stack, and each test's database
// is its own while it runs and gone after it.
func TestShared(t *testing.T) {
	var first *stack.Stack
	var dsns []string
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			s := Shared(t)
			if first == nil {
				first = s
			} else if s != first {
				t.Errorf("Shared started a second stack, in %s beside %s", s.Dir(), first.Dir())
			}
			dsn := Database(t, s)
			dsns = append(dsns, dsn)
			db := open(t, dsn)
			// The table exists in a's database only: b's is empty.
			if name == "a" {
				mustExec(t, db, "CREATE TABLE mine (n INT)")
			}
			var tables int
			if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"a": 1, "b": 0}[name]; tables != want {
				t.Errorf("%d tables in %s's database, want %d", tables, name, want)
			}
		})
	}
	for _, dsn := range dsns {
		if err := open(t, dsn).PingContext(context.Background()); err == nil {
			t.Errorf("the database of %s is there after its test ended", dsn)
		}
	}
	if p, q := KeyPrefix(t), KeyPrefix(t); p == q {
		t.Errorf("KeyPrefix gave %q twice", p)
	}
}

func open(tb testing.TB, dsn string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustExec(tb testing.TB, db *sql.DB, q string) {
	tb.Helper()
	if _, err := db.Exec(q); err != nil {
		tb.Fatal(err)
	}
}
