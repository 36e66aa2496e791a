package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"shortener"
)

// TestUpdate edits a link field by field: each edit is stored, returned,
// read back whole and leaves an invalidation pending; a cleared field
// reads back empty; deleted and missing links are refused and change
// nothing.
func TestUpdate(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	l := shortener.Link{ID: 7, Code: "ed1", URL: "https://example.com/a", Redirect: 302, CreatedAt: now,
		Owner: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Tags: []string{"launch", "q4"}}
	if err := st.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Link(ctx, "ed1"); err != nil || !reflect.DeepEqual(got.Tags, l.Tags) {
		t.Fatalf("created link's tags: %v, %v; want %v", got.Tags, err, l.Tags)
	}
	ptr := func(v any) any {
		r := reflect.New(reflect.TypeOf(v))
		r.Elem().Set(reflect.ValueOf(v))
		return r.Interface()
	}
	later := now.Add(48 * time.Hour)
	steps := []struct {
		name  string
		patch shortener.LinkPatch
		want  func(shortener.Link) shortener.Link
	}{
		{"url and redirect", shortener.LinkPatch{URL: ptr("https://example.org/b").(*string), Redirect: ptr(308).(*int)},
			func(l shortener.Link) shortener.Link { l.URL, l.Redirect = "https://example.org/b", 308; return l }},
		{"expiry", shortener.LinkPatch{ExpiresAt: &later}, func(l shortener.Link) shortener.Link { l.ExpiresAt = later; return l }},
		{"disable, tags, max visits, password", shortener.LinkPatch{Disabled: ptr(true).(*bool), Tags: &[]string{"x"},
			MaxVisits: ptr(int64(3)).(*int64), PasswordHash: ptr("$2a$10$abcdefghijklmnopqrstuv").(*string)},
			func(l shortener.Link) shortener.Link {
				l.Disabled, l.Tags, l.MaxVisits, l.PasswordHash = true, []string{"x"}, 3, "$2a$10$abcdefghijklmnopqrstuv"
				return l
			}},
		{"clear all", shortener.LinkPatch{ExpiresAt: &time.Time{}, Disabled: ptr(false).(*bool), Tags: &[]string{},
			MaxVisits: ptr(int64(0)).(*int64), PasswordHash: ptr("").(*string)},
			func(l shortener.Link) shortener.Link {
				l.ExpiresAt, l.Disabled, l.Tags, l.MaxVisits, l.PasswordHash = time.Time{}, false, nil, 0, ""
				return l
			}},
	}
	for i, s := range steps {
		before, _ := st.Link(ctx, "ed1")
		at := now.Add(time.Duration(i+1) * time.Minute)
		got, err := st.Update(ctx, "ed1", s.patch, at)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want := s.want(before)
		want.UpdatedAt = at
		if len(want.Tags) == 0 {
			want.Tags = nil
		}
		read, err := st.Link(ctx, "ed1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(read, want) {
			t.Errorf("%s:\n returned %+v\n read     %+v\n want     %+v", s.name, got, read, want)
		}
		pending, err := st.PendingInvalidations(ctx)
		if err != nil || len(pending) != 1 || pending[0].Code != "ed1" {
			t.Errorf("%s: pending invalidations %v, %v; want ed1", s.name, pending, err)
		}
	}

	if err := st.Delete(ctx, "ed1", now); err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]error{"ed1": shortener.ErrGone, "nope": shortener.ErrNotFound} {
		if _, err := st.Update(ctx, code, shortener.LinkPatch{URL: ptr("https://evil.example").(*string)}, now); !errors.Is(err, want) {
			t.Errorf("update %s: got %v, want %v", code, err, want)
		}
	}
	if got, _ := st.Link(ctx, "ed1"); got.URL != "https://example.org/b" {
		t.Errorf("a refused edit changed the URL to %s", got.URL)
	}
}
