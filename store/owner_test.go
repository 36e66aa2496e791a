package store_test

import (
	"context"
	"errors"
	"fmt"
	"shortener"
	"testing"
	"time"
)

// TestOwnershipAndDuplicates checks the owner column and its listing, a
// repeated delete (gone, not unknown), and that a duplicate ID is told
// from a taken code, each refused insert leaving no row behind.
func TestOwnershipAndDuplicates(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(id int64, code, owner string) shortener.Link {
		return shortener.Link{ID: id, Code: code, URL: "https://example.com/" + code, Redirect: 302, CreatedAt: now, Owner: owner}
	}
	for i := int64(1); i <= 5; i++ {
		owner := "owner-a"
		if i == 3 {
			owner = "owner-b"
		}
		if err := st.Create(ctx, mk(i, fmt.Sprintf("o%d", i), owner)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(ctx, mk(6, "anon", "")); err != nil {
		t.Fatal(err)
	}
	if l, err := st.Link(ctx, "o1"); err != nil || l.Owner != "owner-a" {
		t.Errorf("Link(o1) owner %q, %v; want owner-a", l.Owner, err)
	}
	if l, err := st.Link(ctx, "anon"); err != nil || l.Owner != "" {
		t.Errorf("Link(anon) owner %q, %v; want none", l.Owner, err)
	}
	if err := st.Delete(ctx, "o4", now); err != nil {
		t.Fatal(err)
	}
	page, err := st.OwnedLinks(ctx, "owner-a", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	next, err := st.OwnedLinks(ctx, "owner-a", page[len(page)-1].ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range append(page, next...) {
		got = append(got, l.Code)
	}
	if fmt.Sprint(got) != "[o5 o2 o1]" {
		t.Errorf("owner-a's links by page: %v, want [o5 o2 o1] (newest first, deleted and others' left out)", got)
	}

	for _, tt := range []struct {
		name string
		err  error
	}{
		{"delete again", shortener.ErrGone},
		{"delete unknown", shortener.ErrNotFound},
	} {
		code := "o4"
		if tt.err == shortener.ErrNotFound {
			code = "nosuch"
		}
		if err := st.Delete(ctx, code, now); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}

	for _, tt := range []struct {
		name string
		link shortener.Link
		want error
	}{
		{"taken code", mk(100, "o1", "owner-a"), shortener.ErrCodeTaken},
		{"taken ID", mk(1, "fresh-code", "owner-a"), shortener.ErrIDTaken},
	} {
		if err := st.Create(ctx, tt.link); !errors.Is(err, tt.want) {
			t.Errorf("Create, %s: %v, want %v", tt.name, err, tt.want)
		}
		if _, _, err := st.CreateIdempotent(ctx, tt.link, shortener.Idempotency{Key: "k-" + tt.name, RequestHash: "h", ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, tt.want) {
			t.Errorf("CreateIdempotent, %s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := st.Link(ctx, "fresh-code"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("a refused insert left a row: %v", err)
	}
}

// TestPurgeIdempotencyKeys removes expired keys only.
func TestPurgeIdempotencyKeys(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, exp := range []time.Time{now.Add(-time.Hour), now.Add(-time.Minute), now.Add(time.Hour)} {
		l := shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("p%d", i), URL: "https://example.com/", Redirect: 302, CreatedAt: now.Add(-2 * time.Hour)}
		if _, _, err := st.CreateIdempotent(ctx, l, shortener.Idempotency{Key: l.Code, RequestHash: "h", ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.PurgeIdempotencyKeys(ctx, now, 1000); err != nil || n != 2 {
		t.Errorf("purge: %d, %v; want the 2 expired keys", n, err)
	}
	if n, err := st.PurgeIdempotencyKeys(ctx, now, 1000); err != nil || n != 0 {
		t.Errorf("second purge: %d, %v; want 0", n, err)
	}
}

// TestIdempotencyScopes: one Idempotency-Key in two scopes (two callers)
// makes two links; in one scope it replays.
func TestIdempotencyScopes(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, tt := range []struct {
		scope, code  string
		wantCode     string
		wantReplayed bool
	}{
		{"caller-a", "sa", "sa", false},
		{"caller-b", "sb", "sb", false},
		{"caller-a", "sc", "sa", true},
	} {
		l := shortener.Link{ID: int64(i + 1), Code: tt.code, URL: "https://example.com/", Redirect: 302, CreatedAt: now}
		got, replayed, err := st.CreateIdempotent(ctx, l, shortener.Idempotency{Scope: tt.scope, Key: "same-key", RequestHash: "h", ExpiresAt: now.Add(time.Hour)})
		if err != nil || got.Code != tt.wantCode || replayed != tt.wantReplayed {
			t.Errorf("scope %s: %s replayed=%v %v; want %s replayed=%v", tt.scope, got.Code, replayed, err, tt.wantCode, tt.wantReplayed)
		}
	}
	if _, err := st.Link(ctx, "sc"); err == nil {
		t.Error("the replayed request stored a link")
	}
}
