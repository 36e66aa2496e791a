package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"shortener"
	"strconv"
	"sync"
	"testing"
	"time"

	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
	"shortener/store"
)

func openStore(tb testing.TB, dsn string) *store.Store {
	tb.Helper()
	// Webhook creates answer SubscribedTTL after their commit: short here.
	return openStoreWith(tb, store.Config{DSN: dsn, MaxOpen: 8, QueryTimeout: 2 * time.Second, DialTimeout: time.Second, SubscribedTTL: 100 * time.Millisecond})
}

// openStoreWith opens a store with cfg and closes it when the test ends.
func openStoreWith(tb testing.TB, cfg store.Config) *store.Store {
	tb.Helper()
	st, err := store.Open(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// database is the DSN of an empty database of the test's own on the
// package's shared MariaDB.
func database(tb testing.TB) string {
	tb.Helper()
	return stacktest.Database(tb, stacktest.Shared(tb))
}

// migrated is a store on a database of the test's own, migrated.
func migrated(tb testing.TB) *store.Store {
	tb.Helper()
	st := openStore(tb, database(tb))
	if err := st.Migrate(context.Background(), 30*time.Second); err != nil {
		tb.Fatal(err)
	}
	return st
}

// TestMigrateConcurrently starts four "instances" migrating the same empty
// database at once: all succeed and each migration is applied once.
func TestMigrateConcurrently(t *testing.T) {
	dsn := database(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = openStore(t, dsn).Migrate(ctx, 30*time.Second)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: Migrate: %v", i, err)
		}
	}
	st := openStore(t, dsn)
	n, err := st.AppliedMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := store.Migrations()
	if n != want {
		t.Errorf("schema_migrations has %d rows, want %d (one per migration)", n, want)
	}
	// Running again is a no-op.
	if err := st.Migrate(ctx, 10*time.Second); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}

	now := time.Now().UTC().Truncate(time.Millisecond)
	link := shortener.Link{ID: 42, Code: "Abc", URL: "https://example.com/é?q=1", Redirect: 307, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.Create(ctx, link); err != nil {
		t.Fatal(err)
	}
	got, err := st.Link(ctx, "Abc")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != link.ID || got.URL != link.URL || got.Redirect != link.Redirect || !got.CreatedAt.Equal(link.CreatedAt) || !got.ExpiresAt.Equal(link.ExpiresAt) {
		t.Errorf("Link(Abc) = %+v, want %+v", got, link)
	}
	// Codes are case-sensitive: "abc" is another code.
	if _, err := st.Link(ctx, "abc"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("Link(abc) error = %v, want shortener.ErrNotFound", err)
	}
	dup := link
	dup.ID = 43
	if err := st.Create(ctx, dup); !errors.Is(err, shortener.ErrCodeTaken) {
		t.Errorf("Create with a taken code: error = %v, want shortener.ErrCodeTaken", err)
	}
}

// TestUnavailable shows that a dead database is a prompt shortener.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	s := stacktest.Start(t) // a stack of its own: it kills MariaDB
	st := openStore(t, s.MySQLDSN())
	ctx := context.Background()
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.MySQL().Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Link(ctx, "x"); !errors.Is(err, shortener.ErrUnavailable) {
		t.Errorf("Link with MySQL down: error = %v, want shortener.ErrUnavailable", err)
	}
	if err := st.Create(ctx, shortener.Link{ID: 1, Code: "x", URL: "https://e.com", Redirect: 302, CreatedAt: time.Now()}); !errors.Is(err, shortener.ErrUnavailable) {
		t.Errorf("Create with MySQL down: error = %v, want shortener.ErrUnavailable", err)
	}
	if err := s.MySQL().Restart(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the store to reconnect after MySQL restarted", func() error { return st.Ping(ctx) })
}

// TestCreateIdempotent sends one create ten times at once under one key:
// one link is stored and every answer names it; the key with another
// request is refused; an expired key creates afresh.
func TestCreateIdempotent(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	idem := shortener.Idempotency{Key: "retry-me", RequestHash: "h1", ExpiresAt: now.Add(time.Hour)}
	var wg sync.WaitGroup
	codes := make([]string, 10)
	replays := make([]bool, 10)
	errs := make([]error, 10)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := shortener.Link{ID: int64(100 + i), Code: "i" + strconv.Itoa(i), URL: "https://example.com/x", Redirect: 302, CreatedAt: now}
			var got shortener.Link
			got, replays[i], errs[i] = st.CreateIdempotent(ctx, l, idem)
			codes[i] = got.Code
		}()
	}
	wg.Wait()
	created := 0
	for i := range codes {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if codes[i] != codes[0] {
			t.Errorf("request %d got code %s, want %s (the first answer)", i, codes[i], codes[0])
		}
		if !replays[i] {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d requests created a link, want 1", created)
	}
	if _, _, err := st.CreateIdempotent(ctx, shortener.Link{ID: 200, Code: "other", URL: "https://example.com/y", Redirect: 302, CreatedAt: now},
		shortener.Idempotency{Key: "retry-me", RequestHash: "h2", ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, shortener.ErrKeyReused) {
		t.Errorf("same key, other request: error %v, want shortener.ErrKeyReused", err)
	}
	if _, err := st.Link(ctx, "other"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("the refused request left a link behind: %v", err)
	}
	later := now.Add(2 * time.Hour)
	l, replayed, err := st.CreateIdempotent(ctx, shortener.Link{ID: 300, Code: "fresh", URL: "https://example.com/z", Redirect: 302, CreatedAt: later},
		shortener.Idempotency{Key: "retry-me", RequestHash: "h3", ExpiresAt: later.Add(time.Hour)})
	if err != nil || replayed || l.Code != "fresh" {
		t.Errorf("expired key: got %s replayed=%v %v, want a fresh link", l.Code, replayed, err)
	}
}

// TestValuesRoundTrip stores values that need escaping, now that the
// driver interpolates arguments into the statement text (one round trip
// per query): quotes, backslashes, comment and statement marks, multibyte
// text and a NUL come back byte for byte, and nothing else is touched.
func TestValuesRoundTrip(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	nasty := "https://example.com/a'b\"c\\d%_e;--f/*g*/h?q=ü€😀&x=\x00'); DROP TABLE links; --"
	want := shortener.Link{ID: 901, Code: "q'uote", URL: nasty, Redirect: 307, CreatedAt: now,
		ExpiresAt: now.Add(time.Hour + 7*time.Millisecond), Owner: `o\'wner`}
	if err := st.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	other := shortener.Link{ID: 902, Code: "plain", URL: "https://example.com/plain", Redirect: 302, CreatedAt: now}
	if err := st.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	for _, l := range []shortener.Link{want, other} {
		got, err := st.Link(ctx, l.Code)
		if err != nil {
			t.Fatalf("link %q: %v", l.Code, err)
		}
		if got.ID != l.ID || got.URL != l.URL || got.Redirect != l.Redirect || got.Owner != l.Owner ||
			!got.CreatedAt.Equal(l.CreatedAt) || !got.ExpiresAt.Equal(l.ExpiresAt) {
			t.Errorf("link %q came back as %+v, want %+v", l.Code, got, l)
		}
	}
}
