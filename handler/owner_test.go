package handler

import (
	"encoding/json"
	"fmt"
	"shortener"
	"testing"
)

// TestOwnership walks every route about one link with every kind of
// caller: the owner's key, another key, an admin key, a wrong key and
// none. Refused calls must change nothing.
func TestOwnership(t *testing.T) {
	f := newFakeLinks()
	inv := &fakeInvalidator{}
	h := newTestHandlerInv(f, inv)
	// A link made with the key belongs to it; one made without belongs to
	// nobody (admin keys only).
	rec := do(h, "POST", "/api/v1/links", `{"url":"https://owned.example/","alias":"owned"}`, "X-Api-Key", "k3y")
	if rec.Code != 201 || f.links["owned"].Owner != HashKey("k3y") {
		t.Fatalf("create with a key: %d %s, owner %q; want 201 owned by the key", rec.Code, rec.Body, f.links["owned"].Owner)
	}
	if rec := do(h, "POST", "/api/v1/links", `{"url":"https://anon.example/","alias":"anon"}`); rec.Code != 201 || f.links["anon"].Owner != "" {
		t.Fatalf("anonymous create: %d %s, owner %q", rec.Code, rec.Body, f.links["anon"].Owner)
	}
	for _, tt := range []struct {
		name, method, path, key string
		status                  int
		code                    string
	}{
		{"show, no key", "GET", "/api/v1/links/owned", "", 401, CodeUnauthorized},
		{"show, wrong key", "GET", "/api/v1/links/owned", "nope", 401, CodeUnauthorized},
		{"show, other key", "GET", "/api/v1/links/owned", "other-k3y", 403, CodeForbidden},
		{"show, unknown code", "GET", "/api/v1/links/nosuch", "k3y", 404, CodeNotFound},
		{"show, anonymous link, key", "GET", "/api/v1/links/anon", "k3y", 403, CodeForbidden},
		{"delete, no key", "DELETE", "/api/v1/links/owned", "", 401, CodeUnauthorized},
		{"delete, other key", "DELETE", "/api/v1/links/owned", "other-k3y", 403, CodeForbidden},
		{"delete, anonymous link, key", "DELETE", "/api/v1/links/anon", "k3y", 403, CodeForbidden},
		{"list, no key", "GET", "/api/v1/links", "", 401, CodeUnauthorized},
		{"list, wrong key", "GET", "/api/v1/links", "nope", 401, CodeUnauthorized},
		{"create, wrong key is not anonymous", "POST", "/api/v1/links", "nope", 401, CodeUnauthorized},
	} {
		var header []string
		if tt.key != "" {
			header = []string{"X-Api-Key", tt.key}
		}
		before := len(f.links)
		body := ""
		if tt.method == "POST" {
			body = `{"url":"https://x.example/"}`
		}
		rec := do(h, tt.method, tt.path, body, header...)
		if rec.Code != tt.status || errCode(t, rec) != tt.code {
			t.Errorf("%s: got %d %s, want %d %s", tt.name, rec.Code, rec.Body, tt.status, tt.code)
		}
		if len(f.links) != before || !f.links["owned"].DeletedAt.IsZero() || !f.links["anon"].DeletedAt.IsZero() || len(inv.codes) != 0 {
			t.Errorf("%s: a refused call changed something", tt.name)
		}
	}
	// The owner and an admin may.
	for _, key := range []string{"k3y", "adm1n"} {
		if rec := do(h, "GET", "/api/v1/links/owned", "", "X-Api-Key", key); rec.Code != 200 {
			t.Errorf("show with %s: %d %s, want 200", key, rec.Code, rec.Body)
		}
	}
	if rec := do(h, "GET", "/api/v1/links/anon", "", "X-Api-Key", "adm1n"); rec.Code != 200 {
		t.Errorf("admin shows an anonymous link: %d, want 200", rec.Code)
	}
	if rec := do(h, "DELETE", "/api/v1/links/anon", "", "X-Api-Key", "adm1n"); rec.Code != 204 {
		t.Errorf("admin deletes an anonymous link: %d %s, want 204", rec.Code, rec.Body)
	}
	if rec := do(h, "DELETE", "/api/v1/links/owned", "", "X-Api-Key", "k3y"); rec.Code != 204 {
		t.Errorf("owner deletes: %d %s, want 204", rec.Code, rec.Body)
	}
	if rec := do(h, "GET", "/api/v1/links/owned", "", "X-Api-Key", "k3y"); rec.Code != 410 {
		t.Errorf("show deleted: %d, want 410", rec.Code)
	}
}

// TestList pages through a key's own links by cursor: newest first, none
// of another key's, none deleted, each exactly once.
func TestList(t *testing.T) {
	f := newFakeLinks()
	for i := 1; i <= 7; i++ {
		owner := HashKey("k3y")
		if i%3 == 0 {
			owner = HashKey("other-k3y")
		}
		code := fmt.Sprintf("l%d", i)
		f.links[code] = shortener.Link{ID: int64(i), Code: code, URL: "https://x.example/", Redirect: 302, Owner: owner}
	}
	l := f.links["l7"]
	l.DeletedAt = now
	f.links["l7"] = l
	h := newTestHandler(f)
	var got []string
	cursor := ""
	for page := 0; page < 10; page++ {
		rec := do(h, "GET", "/api/v1/links?limit=2"+cursor, "", "X-Api-Key", "k3y")
		if rec.Code != 200 {
			t.Fatalf("page %d: %d %s", page, rec.Code, rec.Body)
		}
		var body struct {
			Links []struct {
				Code string `json:"code"`
			} `json:"links"`
			Next string `json:"next_cursor"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		for _, l := range body.Links {
			got = append(got, l.Code)
		}
		if body.Next == "" {
			break
		}
		cursor = "&cursor=" + body.Next
	}
	if want := "[l5 l4 l2 l1]"; fmt.Sprint(got) != want {
		t.Errorf("listed %v, want %s", got, want)
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?cursor=!!", "?cursor=-5"} {
		if rec := do(h, "GET", "/api/v1/links"+q, "", "X-Api-Key", "k3y"); rec.Code != 400 || errCode(t, rec) != CodeInvalidRequest {
			t.Errorf("GET /api/v1/links%s: %d %s, want 400", q, rec.Code, rec.Body)
		}
	}
}
