package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"shortener"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Abuse: what a hostile client or page tries against the public surfaces,
// each refused without changing anything.

// TestCreateNeedsJSON: a cross-site page can POST a body as a form
// (text/plain, urlencoded, multipart) or with fetch and no type, all
// without a CORS preflight; none of them creates a link. A body declared
// JSON does.
func TestCreateNeedsJSON(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	const body = `{"url":"https://example.com/csrf"}`
	for _, tc := range []struct {
		contentType string
		want        int
	}{
		{"text/plain", http.StatusUnsupportedMediaType},
		{"text/plain;charset=UTF-8", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"", http.StatusUnsupportedMediaType},
		{"application/jsonx", http.StatusUnsupportedMediaType},
		{"application/json", http.StatusCreated},
		{"application/json; charset=utf-8", http.StatusCreated},
		{"Application/JSON", http.StatusCreated},
		{"application/vnd.api+json", http.StatusCreated},
	} {
		before := len(f.links)
		rec := do(h, http.MethodPost, "/api/v1/links", body, "Content-Type", tc.contentType)
		if rec.Code != tc.want {
			t.Errorf("Content-Type %q: got %d %s, want %d", tc.contentType, rec.Code, rec.Body, tc.want)
		}
		if created := len(f.links) - before; (tc.want == http.StatusCreated) != (created == 1) {
			t.Errorf("Content-Type %q: %d links created", tc.contentType, created)
		}
		if tc.want == http.StatusUnsupportedMediaType && errCode(t, rec) != CodeMediaType {
			t.Errorf("Content-Type %q: code %q, want %q", tc.contentType, errCode(t, rec), CodeMediaType)
		}
	}
}

// TestLocalPathStaysOnSite: the key form's way back ("next") is a path on
// this site or "/": never a host, however it is spelled for a browser.
func TestLocalPathStaysOnSite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/stats/abc", "/stats/abc"},
		{"/stats/abc?interval=day", "/stats/abc?interval=day"},
		{"/", "/"},
		{"", "/"},
		{"stats/abc", "/"},
		{"//evil.example/", "/"},
		{"/\t/evil.example/", "/"}, // browsers drop the tab: //evil.example/
		{"/\n/evil.example/", "/"},
		{"/\r/evil.example/", "/"},
		{"/\\evil.example/", "/"}, // a backslash is a slash to browsers
		{"/ /evil.example/", "/"},
		{"https://evil.example/", "/"},
		{"/\x00/evil.example/", "/"},
		{"/\x7f/evil.example/", "/"},
	} {
		if got := localPath(tc.in); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSecurityHeaders: every answer, API errors and redirects included,
// says nosniff; Strict-Transport-Security comes only from a site whose
// base URL is https.
func TestSecurityHeaders(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://example.com/", Redirect: 302}
	plain := newTestHandler(f)
	tls := mustNew(Config{BaseURL: "https://sho.rt", Instance: "app9", Policy: NewURLPolicy("https://sho.rt", nil, nil, false)},
		Deps{Resolver: f, Links: f, IDs: &seqIDs{}, Log: discardLogger(), Now: func() time.Time { return now }})
	for _, tc := range []struct {
		name, path string
		h          *Handler
		hsts       bool
	}{
		{"redirect", "/abc", plain, false},
		{"API error", "/api/v1/links/nope", plain, false},
		{"redirect over https", "/abc", tls, true},
		{"API error over https", "/nope", tls, true},
	} {
		rec := do(tc.h, http.MethodGet, tc.path, "")
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", tc.name, got)
		}
		if got := rec.Header().Get("Strict-Transport-Security"); (got != "") != tc.hsts {
			t.Errorf("%s: Strict-Transport-Security %q, want it %v", tc.name, got, tc.hsts)
		}
	}
}

// TestClientKeyIPv6Prefix: the per-address create limit counts an IPv6
// client by its /64, which one host can fill with addresses at will.
func TestClientKeyIPv6Prefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::ffff:192.0.2.7", "::ffff:192.0.2.7"},
		{"not-an-address", "not-an-address"},
	} {
		if got := clientKey(tc.in); got != tc.want {
			t.Errorf("clientKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Two addresses of one /64 share a budget of 1.
	f := newFakeLinks()
	h := mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true, CreateRate: 1, CreateBurst: 1, KeyCreateRate: 1, KeyCreateBurst: 1,
		Policy: NewURLPolicy("http://sho.rt", nil, nil, false)},
		Deps{Resolver: f, Links: f, IDs: &seqIDs{}, Log: discardLogger(), Now: func() time.Time { return now }})
	post := func(addr string) int {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/links", strings.NewReader(`{"url":"https://example.com/v6"}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "[" + addr + "]:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if got := post("2001:db8:1:2::1"); got != http.StatusCreated {
		t.Fatalf("first create: %d", got)
	}
	if got := post("2001:db8:1:2::2"); got != http.StatusTooManyRequests {
		t.Errorf("a second address of the same /64: %d, want 429", got)
	}
	if got := post("2001:db8:1:3::1"); got != http.StatusCreated {
		t.Errorf("another /64: %d, want 201", got)
	}
}

// TestKeyringFailsClosed: MySQL goes away just after a key was revoked
// there. The last list still holds the key, and for a few refresh
// intervals it works; once the list is older than staleKeys intervals a
// stored key is refused with ErrUnavailable (503), not accepted for the
// rest of the outage. Keys from the configuration go on working, and the
// stored ones again once a reload succeeds.
func TestKeyringFailsClosed(t *testing.T) {
	ks := &fakeKeyStore{keys: []shortener.APIKeyHash{{Hash: HashKey("stored-key")}}}
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	k := NewKeyring(ks, []string{"config-key"}, nil, 5*time.Second, func() time.Time { return time.Unix(0, clock.Load()) }, discardLogger())
	ctx := context.Background()
	if err := k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ks.set(nil, shortener.ErrUnavailable, nil) // revoked, then MySQL down
	check := func(key string) error {
		_, err := k.Identify(ctx, key)
		k.Wait()
		return err
	}
	clock.Add(int64(10 * time.Second))
	if err := check("stored-key"); err != nil {
		t.Errorf("within %d intervals of the last load: %v, want the last list's answer", staleKeys, err)
	}
	clock.Add(int64(staleKeys * 5 * time.Second))
	if err := check("stored-key"); !errors.Is(err, shortener.ErrUnavailable) {
		t.Errorf("a stored key with a stale list: %v, want ErrUnavailable", err)
	}
	if err := check("config-key"); err != nil {
		t.Errorf("a configured key with a stale list: %v, want accepted", err)
	}
	ks.set([]shortener.APIKeyHash{{Hash: HashKey("other-key")}}, nil, nil) // MySQL back
	check("config-key")                                                    //nolint:errcheck // starts the reload
	if err := check("stored-key"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("the revoked key once MySQL is back: %v, want ErrUnknownKey", err)
	}
	if err := check("other-key"); err != nil {
		t.Errorf("a stored key once MySQL is back: %v", err)
	}
}

// TestKeyCookieIsSealed: the pages' cookie never holds the API key, and
// only a value this site sealed, unexpired, identifies anyone: the raw
// key (an old cookie), another hash, a value signed with another secret
// or an expired one is no key at all.
func TestKeyCookieIsSealed(t *testing.T) {
	f := newFakeLinks()
	f.links["mine1"] = shortener.Link{Code: "mine1", URL: "https://example.com/mine", Owner: HashKey("k3y")}
	h := newPagesHandler(f)
	other := newPagesHandler(f) // another random secret
	good := h.sealKey(HashKey("k3y"), now.Add(time.Hour))
	tampered := strings.Replace(good, HashKey("k3y"), HashKey("other-k3y"), 1)
	for _, tc := range []struct {
		name, value string
		want        int
	}{
		{"sealed", good, http.StatusOK},
		{"the raw key", "k3y", http.StatusOK},
		{"another key's hash under the same seal", tampered, http.StatusOK},
		{"sealed by another secret", other.sealKey(HashKey("k3y"), now.Add(time.Hour)), http.StatusOK},
		{"expired", h.sealKey(HashKey("k3y"), now.Add(-time.Second)), http.StatusOK},
	} {
		rec := browse(h, http.MethodGet, "/stats/mine1", nil, "Cookie", keyCookieName+"="+tc.value)
		checkPage(t, rec, tc.want)
		owner := strings.Contains(rec.Body.String(), "https://example.com/mine")
		if owner != (tc.name == "sealed") {
			t.Errorf("%s: the owner's page shown %v", tc.name, owner)
		}
	}
}

// TestListCursorIsSealed: the list cursor hands out no Snowflake ID (its
// creation time, its node, and a known ID-code pair for the code
// permutation), and a cursor altered or made up is refused.
func TestListCursorIsSealed(t *testing.T) {
	f := newFakeLinks()
	const id = 1866998844226375680 // a Snowflake ID of December 2026
	for i := range 3 {
		code := fmt.Sprintf("c%d", i)
		f.links[code] = shortener.Link{ID: id + int64(i), Code: code, URL: "https://x.example/", Redirect: 302, Owner: HashKey("k3y")}
	}
	h := newTestHandler(f)
	rec := do(h, "GET", "/api/v1/links?limit=1", "", "X-Api-Key", "k3y")
	var body struct {
		Next string `json:"next_cursor"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Next == "" {
		t.Fatalf("first page: %v, %s", err, rec.Body)
	}
	for i := range int64(3) {
		for _, raw := range []string{strconv.FormatInt(id+i, 36), strconv.FormatInt(id+i, 10), strconv.FormatInt(id+i, 16)} {
			if strings.Contains(body.Next, raw) {
				t.Errorf("cursor %q holds the ID %d (%s)", body.Next, id+i, raw)
			}
		}
	}
	if got, ok := h.openCursor(body.Next); !ok || got != id+2 {
		t.Errorf("cursor opens to %d, %v; want %d", got, ok, id+2)
	}
	altered := []byte(body.Next)
	altered[3] ^= 1
	for _, c := range []string{string(altered), strconv.FormatInt(id+1, 36), "AAAAAAAAAAAAAAAAAAAAAA"} {
		if rec := do(h, "GET", "/api/v1/links?cursor="+c, "", "X-Api-Key", "k3y"); rec.Code != 400 {
			t.Errorf("cursor %q: %d, want 400", c, rec.Code)
		}
	}
}

// TestPreviewLimitedPerAddress: previews past the per-address burst are
// refused with 429 and Retry-After, as an HTML page for a browser, before
// any lookup; another address still gets its own.
func TestPreviewLimitedPerAddress(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://a.example/", Redirect: 302}
	h := newPagesHandler(f)
	h.cfg.PageRate, h.cfg.PageBurst = 0.001, 3 // one in 1,000 s after the burst
	lookups := 0
	h.d.Resolver = cachedOnly{f, &lookups}
	codes := map[int]int{}
	for range 10 {
		rec := browse(h, http.MethodGet, "/abc+", nil)
		codes[rec.Code]++
		if rec.Code == http.StatusTooManyRequests {
			if rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
				t.Errorf("429 without Retry-After or not a page: %v", rec.Header())
			}
		}
	}
	if codes[http.StatusOK] != 3 || codes[http.StatusTooManyRequests] != 7 || lookups != 3 {
		t.Errorf("10 previews from one address: %v with %d lookups; want 3 answered, 7 limited, 3 lookups", codes, lookups)
	}
	req := httptest.NewRequest(http.MethodGet, "/abc+", nil)
	req.Header.Set("Accept", "text/html")
	req.RemoteAddr = "198.51.100.9:4000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("another address: %d, want 200", rec.Code)
	}
}
