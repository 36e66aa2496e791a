package handler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"shortener"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// fakeLinks is an in-memory Links, Resolver and Pinger.
type fakeLinks struct {
	mu      sync.Mutex
	links   map[string]shortener.Link
	err     error // returned by every call when set
	creates int
	keys    map[string]shortener.Idempotency
	keyCode map[string]string
}

var (
	_ Links    = (*fakeLinks)(nil)
	_ Resolver = (*fakeLinks)(nil)
	_ Pinger   = (*fakeLinks)(nil)
)

func newFakeLinks() *fakeLinks { return &fakeLinks{links: map[string]shortener.Link{}} }

func (f *fakeLinks) Create(_ context.Context, l shortener.Link) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if _, ok := f.links[l.Code]; ok {
		return shortener.ErrCodeTaken
	}
	for _, o := range f.links {
		if l.ID != 0 && o.ID == l.ID {
			return shortener.ErrIDTaken
		}
	}
	f.links[l.Code] = l
	f.creates++
	return nil
}

func (f *fakeLinks) Link(_ context.Context, code string) (shortener.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return shortener.Link{}, f.err
	}
	l, ok := f.links[code]
	if !ok {
		return shortener.Link{}, fmt.Errorf("get link %s: %w", code, shortener.ErrNotFound)
	}
	return l, nil
}

func (f *fakeLinks) Delete(_ context.Context, code string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	l, ok := f.links[code]
	if !ok || !l.DeletedAt.IsZero() {
		return shortener.ErrNotFound
	}
	l.DeletedAt = now
	f.links[code] = l
	return nil
}

func (f *fakeLinks) CreateIdempotent(ctx context.Context, l shortener.Link, idem shortener.Idempotency) (shortener.Link, bool, error) {
	f.mu.Lock()
	if f.keys == nil {
		f.keys = map[string]shortener.Idempotency{}
		f.keyCode = map[string]string{}
	}
	k := idem.Scope + "\n" + idem.Key // keys are the scope's own, as in the store
	if prev, ok := f.keys[k]; ok {
		code := f.keyCode[k]
		f.mu.Unlock()
		if prev.RequestHash != idem.RequestHash {
			return shortener.Link{}, false, shortener.ErrKeyReused
		}
		l, err := f.Link(ctx, code)
		return l, true, err
	}
	f.keys[k], f.keyCode[k] = idem, l.Code
	f.mu.Unlock()
	return l, false, f.Create(ctx, l)
}

// fakeInvalidator records the codes it was told to forget.
type fakeInvalidator struct{ codes []string }

func (f *fakeInvalidator) Invalidate(_ context.Context, code string) { f.codes = append(f.codes, code) }

func (f *fakeLinks) Resolve(ctx context.Context, code string) (shortener.Link, error) {
	return f.Link(ctx, code)
}

func (f *fakeLinks) Ping(context.Context) error { return f.err }

func (f *fakeLinks) OwnedLinks(_ context.Context, owner string, before int64, limit int) ([]shortener.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []shortener.Link
	for _, l := range f.links {
		if l.Owner == owner && l.DeletedAt.IsZero() && (before == 0 || l.ID < before) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b shortener.Link) int { return cmp.Compare(b.ID, a.ID) })
	return out[:min(limit, len(out))], nil
}

type seqIDs struct{ n int64 }

func (s *seqIDs) Next() (int64, string) { s.n++; return s.n, fmt.Sprintf("c%d", s.n) }

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func newTestHandler(f *fakeLinks) *Handler {
	return newTestHandlerInv(f, nil)
}

func newTestHandlerInv(f *fakeLinks, inv Invalidator) *Handler {
	return mustNew(Config{BaseURL: "http://sho.rt", Instance: "app9", AnonymousCreate: true, Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Resolver: f, Links: f, IDs: &seqIDs{}, Ready: f, Invalidator: inv,
		Keys:   NewKeyring(nil, []string{"k3y", "other-k3y"}, []string{"adm1n"}, time.Second, time.Now, nil),
		Lister: f,
		Log:    discardLogger(), Now: func() time.Time { return now },
	})
}

// mustNew is New for a test's configuration, with a day's idempotency TTL
// when cfg leaves it zero. It panics on an error: a fixture that cannot be
// built is a bug in the test.
func mustNew(cfg Config, d Deps) *Handler {
	if cfg.IdempotencyTTL == 0 {
		cfg.IdempotencyTTL = 24 * time.Hour
	}
	if cfg.ReferrerPolicy == "" {
		cfg.ReferrerPolicy = "strict-origin-when-cross-origin"
	}
	if cfg.PermanentMaxAge == 0 {
		cfg.PermanentMaxAge = time.Hour
	}
	h, err := New(cfg, d)
	if err != nil {
		panic(err)
	}
	return h
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no idempotency TTL", Config{}, "IdempotencyTTL must be positive"},
		{"negative rate", Config{IdempotencyTTL: time.Hour, CreateRate: -1}, "CreateRate must not be negative"},
		{"rate without burst", Config{IdempotencyTTL: time.Hour, CreateRate: 5}, "CreateBurst must be at least 1"},
		{"page rate without burst", Config{IdempotencyTTL: time.Hour, PageRate: 5}, "PageBurst must be at least 1"},
		{"permanent max-age under a second", Config{IdempotencyTTL: time.Hour, PermanentMaxAge: time.Millisecond}, "PermanentMaxAge must be at least 1s"},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg, Deps{Log: discardLogger()}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := New(Config{IdempotencyTTL: time.Hour, ReferrerPolicy: "no-referrer", PermanentMaxAge: time.Hour}, Deps{Log: discardLogger()}); err != nil {
		t.Errorf("unlimited creates: %v", err)
	}
}

func do(h http.Handler, method, path, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // header may say otherwise
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func errCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var b errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body.String(), err)
	}
	if b.Error.Message == "" {
		t.Errorf("error body %q has no message", rec.Body.String())
	}
	return b.Error.Code
}

func TestCreateAndRedirect(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	rec := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/x"}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: got %d %s, want 201", rec.Code, rec.Body)
	}
	var got linkResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := linkResponse{Code: "c1", ShortURL: "http://sho.rt/c1", URL: "https://example.com/x", Redirect: 302, CreatedAt: now}
	if got.Code != want.Code || got.ShortURL != want.ShortURL || got.URL != want.URL || got.Redirect != want.Redirect || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("create: got %+v, want %+v", got, want)
	}
	if rec.Header().Get("X-Served-By") != "app9" {
		t.Errorf("X-Served-By = %q, want app9", rec.Header().Get("X-Served-By"))
	}
	for _, method := range []string{"GET", "HEAD"} {
		rec = do(h, method, "/c1", "")
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != "https://example.com/x" {
			t.Errorf("%s /c1: got %d Location %q, want 302 https://example.com/x", method, rec.Code, rec.Header().Get("Location"))
		}
	}
	rec = do(h, "GET", "/api/v1/links/c1", "", "X-Api-Key", "adm1n")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"url":"https://example.com/x"`) {
		t.Errorf("show: got %d %s", rec.Code, rec.Body)
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"empty body", ``, 400, CodeInvalidJSON},
		{"not JSON", `url=https://example.com`, 400, CodeInvalidJSON},
		{"unknown field", `{"url":"https://example.com","colour":"red"}`, 400, CodeInvalidJSON},
		{"two values", `{"url":"https://example.com"}{}`, 400, CodeInvalidJSON},
		{"url wrong type", `{"url":42}`, 400, CodeInvalidJSON},
		{"missing url", `{}`, 400, CodeInvalidURL},
		{"javascript", `{"url":"javascript:alert(1)"}`, 400, CodeURLScheme},
		{"loop", `{"url":"http://sho.rt/c1"}`, 400, CodeURLLoop},
		{"credentials", `{"url":"https://a:b@example.com/"}`, 400, CodeURLCredentials},
		{"short alias", `{"url":"https://example.com","alias":"ab"}`, 400, CodeInvalidAlias},
		{"reserved alias", `{"url":"https://example.com","alias":"healthz"}`, 400, CodeInvalidAlias},
		{"alias with slash", `{"url":"https://example.com","alias":"a/b/c"}`, 400, CodeInvalidAlias},
		{"alias wrong type", `{"url":"https://example.com","alias":5}`, 400, CodeInvalidJSON},
		{"bad redirect", `{"url":"https://example.com","redirect":303}`, 400, CodeInvalidRequest},
		{"past expiry", `{"url":"https://example.com","expires_at":"2020-01-01T00:00:00Z"}`, 400, CodeInvalidRequest},
		{"bad expiry", `{"url":"https://example.com","expires_at":"tomorrow"}`, 400, CodeInvalidJSON},
		{"too large", `{"url":"https://example.com/` + strings.Repeat("a", 9000) + `"}`, 413, CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLinks()
			rec := do(newTestHandler(f), "POST", "/api/v1/links", tt.body)
			if rec.Code != tt.status || errCode(t, rec) != tt.code {
				t.Fatalf("got %d %s, want %d %s", rec.Code, rec.Body, tt.status, tt.code)
			}
			if f.creates != 0 {
				t.Fatalf("bad input stored %d links, want 0", f.creates)
			}
		})
	}
}

func TestRedirectAnswers(t *testing.T) {
	f := newFakeLinks()
	f.links["live"] = shortener.Link{Code: "live", URL: "https://a.example/", Redirect: 302}
	f.links["perm"] = shortener.Link{Code: "perm", URL: "https://b.example/", Redirect: 301}
	f.links["old"] = shortener.Link{Code: "old", URL: "https://c.example/", Redirect: 302, ExpiresAt: now.Add(-time.Second)}
	f.links["del"] = shortener.Link{Code: "del", URL: "https://d.example/", Redirect: 302, DeletedAt: now.Add(-time.Hour)}
	h := newTestHandler(f)
	tests := []struct {
		path     string
		status   int
		location string
		code     string
	}{
		{"/live", 302, "https://a.example/", ""},
		{"/perm", 301, "https://b.example/", ""},
		{"/old", 410, "", CodeGone},
		{"/del", 410, "", CodeGone},
		{"/nope", 404, "", CodeNotFound},
		{"/bad%20code", 404, "", CodeNotFound},
		{"/" + strings.Repeat("x", 65), 404, "", CodeNotFound},
	}
	for _, tt := range tests {
		rec := do(h, "GET", tt.path, "")
		if rec.Code != tt.status || rec.Header().Get("Location") != tt.location {
			t.Errorf("GET %s: got %d %q, want %d %q", tt.path, rec.Code, rec.Header().Get("Location"), tt.status, tt.location)
		}
		if tt.code != "" && errCode(t, rec) != tt.code {
			t.Errorf("GET %s: error code %s, want %s", tt.path, errCode(t, rec), tt.code)
		}
	}
}

func TestDatabaseDown(t *testing.T) {
	f := newFakeLinks()
	f.err = fmt.Errorf("get link: %w: %w", shortener.ErrUnavailable, context.DeadlineExceeded)
	h := newTestHandler(f)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/links", `{"url":"https://example.com"}`},
		{"GET", "/abc", ""},
		{"GET", "/readyz", ""},
	} {
		rec := do(h, r.method, r.path, r.body)
		if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || errCode(t, rec) != CodeUnavailable {
			t.Errorf("%s %s: got %d Retry-After %q %s, want 503 with Retry-After", r.method, r.path, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	if rec := do(h, "GET", "/healthz", ""); rec.Code != 200 {
		t.Errorf("healthz with database down: got %d, want 200 (the process is alive)", rec.Code)
	}
}

func TestToHTTP(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("get link x: %w", shortener.ErrNotFound), 404, CodeNotFound},
		{fmt.Errorf("wrapped: %w", errGone), 410, CodeGone},
		{fmt.Errorf("create: %w: %w", shortener.ErrUnavailable, errors.New("dial tcp: refused")), 503, CodeUnavailable},
		{&Error{Code: CodeInvalidURL, Message: "m"}, 400, CodeInvalidURL},
		{fmt.Errorf("ctx: %w", &Error{Code: CodeInvalidJSON, Message: "m"}), 400, CodeInvalidJSON},
		{echo.ErrNotFound, 404, CodeNotFound},
		{echo.ErrMethodNotAllowed, 405, CodeMethodNotAllowed},
		{&http.MaxBytesError{Limit: 10}, 413, CodeTooLarge},
		{shortener.ErrCodeTaken, 500, CodeInternal}, // a generated code never collides; if it does, it is a bug
		{errors.New("boom"), 500, CodeInternal},
	}
	for _, tt := range tests {
		got := toHTTP(tt.err)
		if got.Status() != tt.status || got.Code != tt.code {
			t.Errorf("toHTTP(%v) = %d %s, want %d %s", tt.err, got.Status(), got.Code, tt.status, tt.code)
		}
	}
}

func TestMethodAndRoute(t *testing.T) {
	h := newTestHandler(newFakeLinks())
	if rec := do(h, "PUT", "/api/v1/links", `{}`); rec.Code != 405 || errCode(t, rec) != CodeMethodNotAllowed {
		t.Errorf("PUT /api/v1/links: got %d %s, want 405", rec.Code, rec.Body)
	}
	if rec := do(h, "GET", "/a/b/c", ""); rec.Code != 404 || errCode(t, rec) != CodeNotFound {
		t.Errorf("GET /a/b/c: got %d %s, want 404", rec.Code, rec.Body)
	}
}

func TestDelete(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{Code: "abc", URL: "https://a.example/", Redirect: 302, Owner: HashKey("k3y")}
	inv := &fakeInvalidator{}
	h := newTestHandlerInv(f, inv)
	for _, tt := range []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no key", nil, 401, CodeUnauthorized},
		{"wrong key", []string{"X-Api-Key", "nope"}, 401, CodeUnauthorized},
		{"prefix of key", []string{"X-Api-Key", "k3"}, 401, CodeUnauthorized},
	} {
		rec := do(h, "DELETE", "/api/v1/links/abc", "", tt.header...)
		if rec.Code != tt.status || errCode(t, rec) != tt.code {
			t.Errorf("%s: got %d %s, want %d %s", tt.name, rec.Code, rec.Body, tt.status, tt.code)
		}
	}
	if !f.links["abc"].DeletedAt.IsZero() || len(inv.codes) != 0 {
		t.Fatal("an unauthorised DELETE changed something")
	}
	if rec := do(h, "DELETE", "/api/v1/links/abc", "", "X-Api-Key", "k3y"); rec.Code != 204 {
		t.Fatalf("DELETE with key: got %d %s, want 204", rec.Code, rec.Body)
	}
	if len(inv.codes) != 1 || inv.codes[0] != "abc" {
		t.Errorf("invalidated %v, want [abc]", inv.codes)
	}
	if rec := do(h, "GET", "/abc", ""); rec.Code != 410 {
		t.Errorf("GET deleted link: got %d, want 410", rec.Code)
	}
	if rec := do(h, "DELETE", "/api/v1/links/abc", "", "X-Api-Key", "k3y"); rec.Code != 410 || errCode(t, rec) != CodeGone {
		t.Errorf("second DELETE: got %d %s, want 410 gone", rec.Code, rec.Body)
	}
	if rec := do(h, "DELETE", "/api/v1/links/zzz", "", "X-Api-Key", "k3y"); rec.Code != 404 {
		t.Errorf("DELETE unknown: got %d, want 404", rec.Code)
	}
	if len(inv.codes) != 1 {
		t.Errorf("failed deletes invalidated %v, want nothing more", inv.codes[1:])
	}
}

func TestIdempotencyKey(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	body := `{"url":"https://example.com/once"}`
	first := do(h, "POST", "/api/v1/links", body, "Idempotency-Key", "k-1")
	again := do(h, "POST", "/api/v1/links", body, "Idempotency-Key", "k-1")
	if first.Code != 201 || again.Code != 201 || first.Body.String() != again.Body.String() {
		t.Fatalf("retry with the same key: got %d %s then %d %s, want the same 201 twice", first.Code, first.Body, again.Code, again.Body)
	}
	if again.Header().Get("Idempotent-Replayed") != "true" || f.creates != 1 {
		t.Errorf("retry: replayed header %q, %d links stored; want true, 1", again.Header().Get("Idempotent-Replayed"), f.creates)
	}
	other := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/other"}`, "Idempotency-Key", "k-1")
	if other.Code != 422 || errCode(t, other) != CodeKeyReused {
		t.Errorf("same key, different body: got %d %s, want 422 %s", other.Code, other.Body, CodeKeyReused)
	}
	for _, bad := range []string{" ", "has space", strings.Repeat("k", 256), "tab\tkey", "é"} {
		rec := do(h, "POST", "/api/v1/links", body, "Idempotency-Key", bad)
		if rec.Code != 400 || errCode(t, rec) != CodeInvalidRequest {
			t.Errorf("key %q: got %d %s, want 400", bad, rec.Code, rec.Body)
		}
	}
	if f.creates != 1 {
		t.Errorf("rejected requests stored links: %d, want 1", f.creates)
	}
}

// fixedIDs returns the given codes in turn.
type fixedIDs struct{ codes []string }

func (f *fixedIDs) Next() (int64, string) {
	c := f.codes[0]
	f.codes = f.codes[1:]
	return int64(len(f.codes)), c
}

func TestCreateRetriesTakenCode(t *testing.T) {
	f := newFakeLinks()
	f.links["taken"] = shortener.Link{Code: "taken", URL: "https://old.example/"}
	h := mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true}, Deps{Resolver: f, Links: f, IDs: &fixedIDs{codes: []string{"taken", "fresh"}}, Log: discardLogger()})
	rec := do(h, "POST", "/api/v1/links", `{"url":"https://new.example/"}`)
	if rec.Code != 201 || !strings.Contains(rec.Body.String(), `"code":"fresh"`) {
		t.Fatalf("got %d %s, want 201 with the second code", rec.Code, rec.Body)
	}
	if f.links["taken"].URL != "https://old.example/" {
		t.Error("the taken code's link was overwritten")
	}
	h = mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true}, Deps{Resolver: f, Links: f, IDs: &fixedIDs{codes: []string{"taken", "taken", "taken"}}, Log: discardLogger()})
	if rec := do(h, "POST", "/api/v1/links", `{"url":"https://new.example/"}`); rec.Code != 500 || errCode(t, rec) != CodeInternal {
		t.Errorf("three taken codes: got %d %s, want 500 internal", rec.Code, rec.Body)
	}
}

// TestIDTakenIsNotAliasTaken: a create whose drawn ID is in use (a node
// ID shared by mistake) retries with a new ID, with or without an alias,
// instead of answering "alias taken".
func TestIDTakenIsNotAliasTaken(t *testing.T) {
	for _, tt := range []struct{ name, body, code string }{
		{"alias", `{"url":"https://new.example/","alias":"mine"}`, "mine"},
		{"generated", `{"url":"https://new.example/"}`, "second"},
	} {
		f := newFakeLinks()
		f.links["old"] = shortener.Link{ID: 2, Code: "old", URL: "https://old.example/"}
		// fixedIDs hands out IDs 2 then 1: the first is taken.
		h := mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true}, Deps{Resolver: f, Links: f, IDs: &fixedIDs{codes: []string{"first", "second", "third"}}, Log: discardLogger()})
		rec := do(h, "POST", "/api/v1/links", tt.body)
		if rec.Code != 201 || !strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`) {
			t.Errorf("%s: got %d %s, want 201 with code %s", tt.name, rec.Code, rec.Body, tt.code)
		}
		if len(f.links) != 2 {
			t.Errorf("%s: %d links stored, want 2", tt.name, len(f.links))
		}
	}
}

func TestAlias(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	rec := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/a","alias":"My_Link-1","redirect":307}`)
	if rec.Code != 201 || !strings.Contains(rec.Body.String(), `"code":"My_Link-1"`) || !strings.Contains(rec.Body.String(), `"redirect":307`) {
		t.Fatalf("create with alias: got %d %s", rec.Code, rec.Body)
	}
	if rec := do(h, "GET", "/My_Link-1", ""); rec.Code != 307 || rec.Header().Get("Location") != "https://example.com/a" {
		t.Errorf("GET alias: got %d %q, want 307", rec.Code, rec.Header().Get("Location"))
	}
	if rec := do(h, "GET", "/my_link-1", ""); rec.Code != 404 {
		t.Errorf("GET alias in other case: got %d, want 404 (aliases are case-sensitive)", rec.Code)
	}
	rec = do(h, "POST", "/api/v1/links", `{"url":"https://example.com/b","alias":"My_Link-1"}`)
	if rec.Code != 409 || errCode(t, rec) != CodeAliasTaken {
		t.Errorf("taken alias: got %d %s, want 409 %s", rec.Code, rec.Body, CodeAliasTaken)
	}
	if f.links["My_Link-1"].URL != "https://example.com/a" || f.creates != 1 {
		t.Errorf("taken alias changed the first link or stored another: %+v, %d creates", f.links["My_Link-1"], f.creates)
	}
}

// fakeKeyStore serves keys and counts the reads; while gate is set, each
// read waits for it to close (a hung MySQL).
type fakeKeyStore struct {
	mu    sync.Mutex
	keys  []shortener.APIKeyHash
	err   error
	reads int
	gate  chan struct{}
}

func (f *fakeKeyStore) ActiveKeys(context.Context) ([]shortener.APIKeyHash, error) {
	f.mu.Lock()
	f.reads++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys, f.err
}

func (f *fakeKeyStore) set(keys []shortener.APIKeyHash, err error, gate chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys, f.err, f.gate = keys, err, gate
}

func TestKeyring(t *testing.T) {
	ks := &fakeKeyStore{keys: []shortener.APIKeyHash{{Hash: HashKey("stored-key")}, {Hash: HashKey("stored-admin"), Admin: true}}}
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	k := NewKeyring(ks, []string{"config-key"}, []string{"config-admin"}, 5*time.Second, func() time.Time { return time.Unix(0, clock.Load()) }, discardLogger())
	ctx := context.Background()
	if err := k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key  string
		want shortener.Caller
		err  error
	}{
		{"stored-key", shortener.Caller{Owner: HashKey("stored-key")}, nil},
		{"stored-admin", shortener.Caller{Owner: HashKey("stored-admin"), Admin: true}, nil},
		{"config-key", shortener.Caller{Owner: HashKey("config-key")}, nil},
		{"config-admin", shortener.Caller{Owner: HashKey("config-admin"), Admin: true}, nil},
		{"", shortener.Caller{}, ErrUnknownKey},
		{"stored-ke", shortener.Caller{}, ErrUnknownKey},
		{"other", shortener.Caller{}, ErrUnknownKey},
		{HashKey("stored-key"), shortener.Caller{}, ErrUnknownKey},
	} {
		if got, err := k.Identify(ctx, tt.key); got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("Identify(%q) = %+v, %v; want %+v, %v", tt.key, got, err, tt.want, tt.err)
		}
	}
	if ks.reads != 1 {
		t.Errorf("%d reads of the key store within the refresh interval, want 1", ks.reads)
	}
	// Revoked: the check after the interval starts a reload; once it is
	// done the key is refused.
	ks.set(nil, nil, nil)
	clock.Add(int64(6 * time.Second))
	k.Identify(ctx, "stored-key") //nolint:errcheck // starts the reload
	k.Wait()
	if _, err := k.Identify(ctx, "stored-key"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a revoked key after the refresh: %v, want ErrUnknownKey", err)
	}

	// MySQL hangs: concurrent checks answer from the last list at once
	// and start at most one reload between them.
	gate := make(chan struct{})
	ks.set([]shortener.APIKeyHash{{Hash: HashKey("stored-key")}}, nil, gate)
	clock.Add(int64(6 * time.Second))
	reads := ks.reads
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := k.Identify(ctx, "config-key"); err != nil || c.Owner != HashKey("config-key") {
				t.Errorf("check while the key store hangs: %+v, %v; want the last list's answer", c, err)
			}
		}()
	}
	wg.Wait() // returns although the store never answered
	close(gate)
	k.Wait()
	if got := ks.reads - reads; got != 1 {
		t.Errorf("%d reloads for 5 concurrent checks, want 1", got)
	}

	// Never loaded, store down: fast 503, not a wait and not "unknown".
	cold := NewKeyring(&fakeKeyStore{err: shortener.ErrUnavailable}, nil, nil, time.Second, time.Now, discardLogger())
	if _, err := cold.Identify(ctx, "stored-key"); !errors.Is(err, shortener.ErrUnavailable) {
		t.Errorf("a keyring that never loaded: %v, want ErrUnavailable", err)
	}
	cold.Wait()
}

func TestCreateNeedsKeyWhenAnonymousOff(t *testing.T) {
	f := newFakeLinks()
	h := mustNew(Config{BaseURL: "http://sho.rt"}, Deps{Resolver: f, Links: f, IDs: &seqIDs{}, Log: discardLogger(),
		Keys: NewKeyring(nil, []string{"k3y"}, nil, time.Second, time.Now, nil)})
	if rec := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/"}`); rec.Code != 401 || errCode(t, rec) != CodeUnauthorized {
		t.Errorf("anonymous create with the switch off: got %d %s, want 401", rec.Code, rec.Body)
	}
	if rec := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/"}`, "X-Api-Key", "k3y"); rec.Code != 201 {
		t.Errorf("create with a key: got %d %s, want 201", rec.Code, rec.Body)
	}
	if f.creates != 1 {
		t.Errorf("%d links stored, want 1", f.creates)
	}
}

// sharedLimiter is a Limiter every "instance" of a test shares: one token
// bucket per key, as Redis keeps them, whose answer every instance learns
// at once (the cache learns it from its next count: cache TestTakeIsShared).
type sharedLimiter struct {
	mu      sync.Mutex
	buckets map[string]int // tokens used; no refill within a test
	bursts  map[string]int
	down    bool
}

func (s *sharedLimiter) Refused(key string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if burst, ok := s.bursts[key]; s.down || !ok || s.buckets[key] < burst {
		return 0, false
	}
	return time.Second, true
}

func (s *sharedLimiter) Take(key string, _ float64, burst int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		s.buckets[key]++
		s.bursts[key] = burst
	}
}

// TestCreateRateLimit: anonymous creates are limited per client address
// over all instances together, keyed ones per key with their own budget;
// X-Real-IP is believed only from a configured proxy; with the shared
// store down each instance still limits on its own. Refused creates store
// nothing.
func TestCreateRateLimit(t *testing.T) {
	f := newFakeLinks()
	lim := &sharedLimiter{buckets: map[string]int{}, bursts: map[string]int{}}
	proxies, _ := ParseProxies([]string{"127.0.0.1"})
	var apps [2]*Handler
	for i := range apps {
		apps[i] = mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true, CreateRate: 1, CreateBurst: 3,
			KeyCreateRate: 1000, KeyCreateBurst: 5, TrustedProxies: proxies},
			Deps{Resolver: f, Links: f, IDs: &seqIDs{n: int64(i) * 1000}, Log: discardLogger(), Limiter: lim,
				Keys: NewKeyring(nil, []string{"k3y"}, nil, time.Second, time.Now, nil)})
	}
	post := func(app int, peer, realIP, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/links", strings.NewReader(`{"url":"https://example.com/"}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = peer + ":5000"
		if realIP != "" {
			req.Header.Set("X-Real-IP", realIP)
		}
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		rec := httptest.NewRecorder()
		apps[app].ServeHTTP(rec, req)
		return rec
	}
	for _, tt := range []struct {
		name                string
		app                 int
		peer, realIP, key   string
		status, storedAfter int
	}{
		{"first via nginx", 0, "127.0.0.1", "192.0.2.1", "", 201, 1},
		{"second via the other app", 1, "127.0.0.1", "192.0.2.1", "", 201, 2},
		{"third", 0, "127.0.0.1", "192.0.2.1", "", 201, 3},
		{"fourth: the budget is shared", 1, "127.0.0.1", "192.0.2.1", "", 429, 3},
		{"another address", 0, "127.0.0.1", "192.0.2.2", "", 201, 4},
		{"spoofed X-Real-IP from a remote peer counts for the peer", 0, "198.51.100.7", "192.0.2.9", "", 201, 5},
		{"spoofed X-Real-IP from another loopback process", 0, "127.0.0.2", "192.0.2.9", "", 201, 6},
		{"the named client's budget is untouched", 0, "127.0.0.1", "192.0.2.9", "", 201, 7},
		{"a key has its own budget", 0, "127.0.0.1", "192.0.2.1", "k3y", 201, 8},
		{"wrong key is 401, not anonymous", 0, "127.0.0.1", "192.0.2.3", "nope", 401, 8},
	} {
		rec := post(tt.app, tt.peer, tt.realIP, tt.key)
		if rec.Code != tt.status || f.creates != tt.storedAfter {
			t.Errorf("%s: got %d %s with %d stored, want %d with %d", tt.name, rec.Code, rec.Body, f.creates, tt.status, tt.storedAfter)
		}
		if rec.Code == 429 && (rec.Header().Get("Retry-After") != "1" || errCode(t, rec) != CodeRateLimited) {
			t.Errorf("%s: Retry-After %q %s, want 1 and rate_limited", tt.name, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	if got := lim.buckets["addr:192.0.2.9"]; got != 1 {
		t.Errorf("bucket of the spoofed address used %d times, want 1 (only its own request)", got)
	}
	// The shared store is down: each instance limits on its own.
	lim.mu.Lock()
	lim.down = true
	lim.mu.Unlock()
	codes := map[int]int{}
	for range 5 {
		codes[post(0, "127.0.0.1", "192.0.2.50", "").Code]++
	}
	if codes[201] != 3 || codes[429] != 2 {
		t.Errorf("with the shared limiter down: %v, want 3 created and 2 limited by the local bucket", codes)
	}
}

// TestLocalLimiterBounded: a flood of distinct addresses cannot grow the
// per-instance limiter past its bound.
func TestLocalLimiterBounded(t *testing.T) {
	l := newLocalLimiter(100)
	for i := range 10_000 {
		l.allow(fmt.Sprintf("addr:10.0.%d.%d", i/256, i%256), 1, 10)
	}
	l.buckets.CleanUp()
	if n := l.buckets.EstimatedSize(); n > 100 {
		t.Errorf("%d buckets kept, want at most 100", n)
	}
}

// panicky is an origin whose lookups panic.
type panicky struct{ *fakeLinks }

func (panicky) Resolve(context.Context, string) (shortener.Link, error) { panic("lookup exploded") }

// TestFrame: every answer names its request (keeping the caller's
// X-Request-Id) and the instance, and a panic is a logged 500 that still
// carries both.
func TestFrame(t *testing.T) {
	var logs bytes.Buffer
	f := newFakeLinks()
	h := mustNew(Config{BaseURL: "http://sho.rt", Instance: "app9", AnonymousCreate: true, Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Resolver: panicky{f}, Links: f, IDs: &seqIDs{}, Ready: f,
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return now },
	})
	a, b := do(h, "GET", "/healthz", ""), do(h, "GET", "/healthz", "")
	idA, idB := a.Header().Get("X-Request-Id"), b.Header().Get("X-Request-Id")
	if !strings.HasPrefix(idA, "app9-") || idA == idB {
		t.Errorf("generated request IDs %q and %q: want distinct, starting app9-", idA, idB)
	}
	if got := do(h, "GET", "/healthz", "", "X-Request-Id", "from-nginx").Header().Get("X-Request-Id"); got != "from-nginx" {
		t.Errorf("X-Request-Id = %q, want the caller's from-nginx", got)
	}
	rec := do(h, "GET", "/AbC123", "", "X-Request-Id", "boom-1")
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Errorf("panicking lookup: got %d %s, want a 500 error body", rec.Code, rec.Body)
	}
	if rec.Header().Get("X-Request-Id") != "boom-1" || rec.Header().Get("X-Served-By") != "app9" {
		t.Errorf("panicking lookup: X-Request-Id %q, X-Served-By %q; want boom-1, app9", rec.Header().Get("X-Request-Id"), rec.Header().Get("X-Served-By"))
	}
	if !strings.Contains(logs.String(), "lookup exploded") || !strings.Contains(logs.String(), "handler.panicky.Resolve") {
		t.Errorf("the panic is not logged with its stack:\n%s", logs.String())
	}
}

// recordingWarmer records which of the Warmer's calls each created code got.
type recordingWarmer struct{ calls []string }

func (w *recordingWarmer) Add(_ context.Context, l shortener.Link) {
	w.calls = append(w.calls, "Add "+l.Code)
}

func (w *recordingWarmer) AddIssued(_ context.Context, l shortener.Link) {
	w.calls = append(w.calls, "AddIssued "+l.Code)
}

// TestCreateWarmsByKindOfCode: a link whose code the create issued is
// warmed without an announcement (AddIssued); an alias, which anyone may
// have looked up before, with one (Add).
func TestCreateWarmsByKindOfCode(t *testing.T) {
	f := newFakeLinks()
	w := &recordingWarmer{}
	h := mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true}, Deps{Resolver: f, Links: f, Warmer: w,
		IDs: &fixedIDs{codes: []string{"issued", "unused"}}, Log: discardLogger()})
	for _, body := range []string{`{"url":"https://new.example/"}`, `{"url":"https://new.example/","alias":"chosen"}`} {
		if rec := do(h, "POST", "/api/v1/links", body); rec.Code != 201 {
			t.Fatalf("create %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if got, want := strings.Join(w.calls, ", "), "AddIssued issued, Add chosen"; got != want {
		t.Errorf("warmer calls %q, want %q", got, want)
	}
}
