package main

import (
	"os"
	"testing"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// servers are what an app under test runs against: Redis with its
// sentinels, and a MariaDB database.
type servers struct {
	*stack.Stack
	dsn string
}

// MySQLDSN is the app's database, which need not be the stack's own.
func (s servers) MySQLDSN() string { return s.dsn }

// newServers are Redis and sentinels of the test's own, and a database of
// its own on the package's shared MariaDB: an app names its Redis keys
// without a prefix (its cache, ranking and limits), so two tests' apps
// cannot share a Redis, and most of these tests break it.
func newServers(tb testing.TB) servers {
	tb.Helper()
	dsn := stacktest.Database(tb, stacktest.Shared(tb))
	return servers{stacktest.StartRedis(tb), dsn}
}

// ownServers are a whole stack of the test's own, for a chaos run: its
// ledger reads what the app stored in the stack's MariaDB.
func ownServers(tb testing.TB) servers {
	tb.Helper()
	s := stacktest.Start(tb)
	return servers{s, s.MySQLDSN()}
}
