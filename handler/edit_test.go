package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"shortener"
	"strings"
	"testing"
	"time"
)

var _ Editor = (*fakeLinks)(nil)

// Update edits the fake's link as the store does.
func (f *fakeLinks) Update(_ context.Context, code string, p shortener.LinkPatch, now time.Time) (shortener.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return shortener.Link{}, f.err
	}
	l, ok := f.links[code]
	switch {
	case !ok:
		return shortener.Link{}, shortener.ErrNotFound
	case !l.DeletedAt.IsZero():
		return shortener.Link{}, shortener.ErrGone
	}
	l = p.Apply(l)
	if len(l.Tags) == 0 {
		l.Tags = nil
	}
	l.UpdatedAt = now
	f.links[code] = l
	return l, nil
}

// newManageHandler is newTestHandlerInv with every dependency of the
// routes that manage links (edit, batch, export, import) and the key
// create limit cfg says.
func newManageHandler(f *fakeLinks, inv Invalidator, cfg Config) *Handler {
	cfg.BaseURL, cfg.Instance, cfg.AnonymousCreate = "http://sho.rt", "app9", true
	cfg.Policy = NewURLPolicy("http://sho.rt", nil, nil, false)
	return mustNew(cfg, Deps{
		Resolver: f, Links: f, IDs: &seqIDs{}, Ready: f, Invalidator: inv,
		Keys:   NewKeyring(nil, []string{"k3y", "other-k3y"}, []string{"adm1n"}, time.Second, time.Now, nil),
		Lister: f, Editor: f, BatchKeys: f, Exporter: f, Importer: f,
		Log: discardLogger(), Now: func() time.Time { return now },
	})
}

// TestEditValidation sends PATCH bodies that must be refused, each with
// the code and field at fault; none may change the link or invalidate it.
func TestEditValidation(t *testing.T) {
	f := newFakeLinks()
	inv := &fakeInvalidator{}
	h := newManageHandler(f, inv, Config{})
	f.links["ed1"] = shortener.Link{ID: 1, Code: "ed1", URL: "https://example.com/", Redirect: 302, CreatedAt: now, Owner: HashKey("k3y")}
	before := f.links["ed1"]
	for _, tt := range []struct {
		name, body  string
		status      int
		code, field string
	}{
		{"empty object", `{}`, 400, CodeInvalidRequest, ""},
		{"not JSON", `{"url":`, 400, CodeInvalidJSON, ""},
		{"unknown field", `{"alias":"new"}`, 400, CodeInvalidJSON, ""},
		{"field in another case", `{"URL":"https://example.org/"}`, 400, CodeInvalidJSON, ""},
		{"repeated field", `{"disabled":true,"disabled":false}`, 400, CodeInvalidJSON, ""},
		{"url null", `{"url":null}`, 400, CodeInvalidRequest, "url"},
		{"url scheme", `{"url":"ftp://example.com/"}`, 400, CodeURLScheme, "url"},
		{"url loop", `{"url":"http://sho.rt/x"}`, 400, CodeURLLoop, "url"},
		{"url local", `{"url":"http://127.0.0.1/"}`, 400, CodeURLDenied, "url"},
		{"redirect null", `{"redirect":null}`, 400, CodeInvalidRequest, "redirect"},
		{"redirect 303", `{"redirect":303}`, 400, CodeInvalidRequest, "redirect"},
		{"redirect text", `{"redirect":"301"}`, 400, CodeInvalidJSON, ""},
		{"expiry past", `{"expires_at":"2020-01-01T00:00:00Z"}`, 400, CodeInvalidRequest, "expires_at"},
		{"expiry not a time", `{"expires_at":"tomorrow"}`, 400, CodeInvalidJSON, ""},
		{"disabled null", `{"disabled":null}`, 400, CodeInvalidRequest, "disabled"},
		{"disabled text", `{"disabled":"yes"}`, 400, CodeInvalidJSON, ""},
		{"tags not a list", `{"tags":"a,b"}`, 400, CodeInvalidJSON, ""},
		{"bad tag", `{"tags":["ok","not ok"]}`, 400, CodeInvalidRequest, "tags"},
		{"eleven tags", `{"tags":["a","b","c","d","e","f","g","h","i","j","k"]}`, 400, CodeInvalidRequest, "tags"},
		{"max_visits negative", `{"max_visits":-1}`, 400, CodeInvalidRequest, "max_visits"},
		{"max_visits fraction", `{"max_visits":1.5}`, 400, CodeInvalidJSON, ""},
		{"password too long", `{"password":"` + strings.Repeat("p", 129) + `"}`, 400, CodeInvalidRequest, "password"},
		{"one bad field spoils the edit", `{"url":"https://example.org/","redirect":399}`, 400, CodeInvalidRequest, "redirect"},
	} {
		rec := do(h, "PATCH", "/api/v1/links/ed1", tt.body, "X-Api-Key", "k3y")
		var b errorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &b)
		if rec.Code != tt.status || b.Error.Code != tt.code || b.Error.Field != tt.field {
			t.Errorf("%s: got %d %s, want %d %s (field %q)", tt.name, rec.Code, rec.Body, tt.status, tt.code, tt.field)
		}
	}
	if got := f.links["ed1"]; fmt.Sprint(got) != fmt.Sprint(before) || len(inv.codes) != 0 {
		t.Errorf("refused edits changed the link to %+v, invalidated %v", got, inv.codes)
	}
	rec := do(h, "PATCH", "/api/v1/links/ed1", `{"url":"https://example.org/"}`, "X-Api-Key", "k3y", "Content-Type", "text/plain")
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: got %d, want 415", rec.Code)
	}
}

// TestEdit edits a link field by field, clears what may be cleared, and
// checks each answer, the stored link and that each edit was invalidated
// after it was stored; then who may edit what.
func TestEdit(t *testing.T) {
	f := newFakeLinks()
	inv := &fakeInvalidator{}
	h := newManageHandler(f, inv, Config{})
	f.links["ed1"] = shortener.Link{ID: 1, Code: "ed1", URL: "https://example.com/", Redirect: 302, CreatedAt: now, Owner: HashKey("k3y")}
	later := now.Add(48 * time.Hour)
	steps := []struct {
		body  string
		check func(shortener.Link, linkResponse) bool
	}{
		{`{"url":"https://Example.org/New","redirect":308}`, func(l shortener.Link, r linkResponse) bool {
			return l.URL == "https://example.org/New" && l.Redirect == 308 && r.URL == l.URL && r.Redirect == 308
		}},
		{`{"expires_at":"` + later.Format(time.RFC3339) + `"}`, func(l shortener.Link, r linkResponse) bool {
			return l.ExpiresAt.Equal(later) && r.ExpiresAt != nil && r.ExpiresAt.Equal(later)
		}},
		{`{"disabled":true,"tags":["Q4","launch","q4"],"max_visits":3,"password":"s3cret"}`, func(l shortener.Link, r linkResponse) bool {
			return l.Disabled && fmt.Sprint(l.Tags) == "[launch q4]" && l.MaxVisits == 3 && passwordMatches(l.PasswordHash, "s3cret") &&
				r.Disabled && fmt.Sprint(r.Tags) == "[launch q4]" && r.MaxVisits == 3 && r.PasswordProtected
		}},
		{`{"expires_at":null,"disabled":false,"tags":null,"max_visits":null,"password":null}`, func(l shortener.Link, r linkResponse) bool {
			return l.ExpiresAt.IsZero() && !l.Disabled && l.Tags == nil && l.MaxVisits == 0 && l.PasswordHash == "" &&
				r.ExpiresAt == nil && !r.Disabled && r.Tags != nil && len(r.Tags) == 0 && r.MaxVisits == 0 && !r.PasswordProtected
		}},
		{`{"tags":["x"],"max_visits":5,"password":"p"}`, func(l shortener.Link, _ linkResponse) bool {
			return fmt.Sprint(l.Tags) == "[x]" && l.MaxVisits == 5 && l.PasswordHash != ""
		}},
		{`{"tags":[],"max_visits":0,"password":""}`, func(l shortener.Link, _ linkResponse) bool {
			return l.Tags == nil && l.MaxVisits == 0 && l.PasswordHash == ""
		}},
	}
	for i, s := range steps {
		rec := do(h, "PATCH", "/api/v1/links/ed1", s.body, "X-Api-Key", "k3y")
		if rec.Code != 200 {
			t.Fatalf("%s: got %d %s", s.body, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "$2a$") || strings.Contains(rec.Body.String(), "password_hash") {
			t.Errorf("%s: the answer shows the password's hash: %s", s.body, rec.Body)
		}
		var r linkResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		l := f.links["ed1"]
		if !s.check(l, r) || r.UpdatedAt == nil || !r.UpdatedAt.Equal(now) {
			t.Errorf("%s:\n stored %+v\n answer %s", s.body, l, rec.Body)
		}
		if len(inv.codes) != i+1 || inv.codes[i] != "ed1" {
			t.Errorf("%s: invalidated %v, want ed1 once per edit", s.body, inv.codes)
		}
	}

	f.links["anon"] = shortener.Link{ID: 2, Code: "anon", URL: "https://example.com/", Redirect: 302, CreatedAt: now}
	f.links["gone"] = shortener.Link{ID: 3, Code: "gone", URL: "https://example.com/", Redirect: 302, CreatedAt: now, Owner: HashKey("k3y"), DeletedAt: now}
	edits := len(inv.codes)
	for _, tt := range []struct {
		name, code, key string
		status          int
	}{
		{"no key", "ed1", "", 401},
		{"unknown key", "ed1", "nope", 401},
		{"another key", "ed1", "other-k3y", 403},
		{"an anonymous link", "anon", "k3y", 403},
		{"unknown code", "nosuch", "k3y", 404},
		{"not a code", "a.b", "k3y", 404},
		{"deleted", "gone", "k3y", 410},
	} {
		var header []string
		if tt.key != "" {
			header = []string{"X-Api-Key", tt.key}
		}
		if rec := do(h, "PATCH", "/api/v1/links/"+tt.code, `{"url":"https://evil.example/"}`, header...); rec.Code != tt.status {
			t.Errorf("%s: got %d %s, want %d", tt.name, rec.Code, rec.Body, tt.status)
		}
	}
	if len(inv.codes) != edits || f.links["ed1"].URL == "https://evil.example/" {
		t.Errorf("a refused edit changed something: %v, %+v", inv.codes, f.links["ed1"])
	}
	for _, code := range []string{"anon", "ed1"} {
		if rec := do(h, "PATCH", "/api/v1/links/"+code, `{"disabled":true}`, "X-Api-Key", "adm1n"); rec.Code != 200 || !f.links[code].Disabled {
			t.Errorf("admin edits %s: got %d %s, want 200", code, rec.Code, rec.Body)
		}
	}
}

// TestCreateManaged creates links with tags, a visit limit and a
// password, and reads the new fields back; an Idempotency-Key tells a
// retry from a request with another password.
func TestCreateManaged(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{})
	rec := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/","tags":["B","a"],"max_visits":3,"password":"pw"}`,
		"X-Api-Key", "k3y", "Idempotency-Key", "k1")
	var r linkResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &r); rec.Code != 201 || err != nil {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	l := f.links[r.Code]
	if fmt.Sprint(l.Tags) != "[a b]" || l.MaxVisits != 3 || !passwordMatches(l.PasswordHash, "pw") || passwordMatches(l.PasswordHash, "pW") {
		t.Errorf("stored %+v", l)
	}
	if fmt.Sprint(r.Tags) != "[a b]" || r.MaxVisits != 3 || !r.PasswordProtected || r.Disabled || strings.Contains(rec.Body.String(), l.PasswordHash) {
		t.Errorf("answered %s", rec.Body)
	}
	replay := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/","tags":["a","b"],"max_visits":3,"password":"pw"}`,
		"X-Api-Key", "k3y", "Idempotency-Key", "k1")
	if replay.Code != 201 || replay.Header().Get("Idempotent-Replayed") != "true" || f.creates != 1 {
		t.Errorf("retry: %d %s, %d creates; want the first answer replayed", replay.Code, replay.Body, f.creates)
	}
	other := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/","tags":["a","b"],"max_visits":3,"password":"other"}`,
		"X-Api-Key", "k3y", "Idempotency-Key", "k1")
	if other.Code != 422 {
		t.Errorf("same key, another password: %d %s, want 422", other.Code, other.Body)
	}
	plain := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/plain"}`)
	var pr linkResponse
	if err := json.Unmarshal(plain.Body.Bytes(), &pr); err != nil || pr.Tags == nil || pr.PasswordProtected || pr.MaxVisits != 0 ||
		strings.Contains(plain.Body.String(), "max_visits") || strings.Contains(plain.Body.String(), "updated_at") {
		t.Errorf("a plain create answers %s", plain.Body)
	}
	for body, field := range map[string]string{
		`{"url":"https://example.com/","tags":["a b"]}`:                                "tags",
		`{"url":"https://example.com/","max_visits":-2}`:                               "max_visits",
		`{"url":"https://example.com/","password":"` + strings.Repeat("x", 129) + `"}`: "password",
	} {
		rec := do(h, "POST", "/api/v1/links", body, "X-Api-Key", "k3y")
		var b errorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &b)
		if rec.Code != 400 || b.Error.Field != field {
			t.Errorf("%s: got %d %s, want 400 about %s", body, rec.Code, rec.Body, field)
		}
	}
	rec = do(h, "POST", "/api/v1/links", `{"url":"https://example.com/","tags":"a"}`, "X-Api-Key", "k3y")
	if !strings.Contains(rec.Body.String(), "an array of strings") {
		t.Errorf("tags as text: %s, want a message saying it must be an array of strings", rec.Body)
	}
}

// TestRequestHashV2 keeps the fingerprint of a create without the fields
// v3 added as it was, so a retry across an upgrade replays.
func TestRequestHashV2(t *testing.T) {
	l := shortener.Link{URL: "https://example.com/", Redirect: 302, ExpiresAt: now}
	// v2, as it was written before tags, visit limits and passwords.
	v2 := sha256.Sum256([]byte(fmt.Sprintf("v2\n%d:%s\n%d:%s\n%d\n%d", len(l.URL), l.URL, 2, "al", 302, now.UnixMilli())))
	base := requestHash(l, "al", "")
	if base != hex.EncodeToString(v2[:]) {
		t.Errorf("a create without the new fields fingerprints as %s, want v2's %x", base, v2)
	}
	seen := map[string]string{"base": base}
	for name, h := range map[string]string{
		"tags":       requestHash(shortener.Link{URL: l.URL, Redirect: 302, ExpiresAt: now, Tags: []string{"a"}}, "al", ""),
		"max visits": requestHash(shortener.Link{URL: l.URL, Redirect: 302, ExpiresAt: now, MaxVisits: 1}, "al", ""),
		"password":   requestHash(l, "al", "fp"),
	} {
		for other, o := range seen {
			if h == o {
				t.Errorf("%s fingerprints as %s", name, other)
			}
		}
		seen[name] = h
	}
}
