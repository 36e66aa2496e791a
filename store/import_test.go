package store_test

import (
	"context"
	"errors"
	"shortener"
	"strconv"
	"testing"
	"time"
)

// TestImport loads links in more than one statement, then again with one
// more: the second import adds only the new link, and every link reads
// back as it was given.
func TestImport(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, database(t))
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	links := make([]shortener.Link, 4500) // three statements
	for i := range links {
		code := "imp-" + strconv.Itoa(i)
		links[i] = shortener.Link{ID: -int64(i + 1), Code: code, URL: "https://example.com/" + code, Redirect: 302, CreatedAt: created}
	}
	n, err := st.Import(ctx, links[:4000])
	if err != nil || n != 4000 {
		t.Fatalf("first import: got %d, %v; want 4000 inserted", n, err)
	}
	if n, err = st.Import(ctx, links); err != nil || n != 500 {
		t.Fatalf("second import: got %d, %v; want the 500 new ones inserted", n, err)
	}
	for _, i := range []int{0, 1999, 2000, 4499} {
		got, err := st.Link(ctx, links[i].Code)
		if err != nil || got.ID != links[i].ID || got.URL != links[i].URL || got.Redirect != 302 || !got.CreatedAt.Equal(created) {
			t.Errorf("link %d: got %+v, %v; want %+v", i, got, err, links[i])
		}
	}
	if _, err := st.Link(ctx, "imp-4500"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("a code never imported: got %v, want ErrNotFound", err)
	}
}
