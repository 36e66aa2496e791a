package handler

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"shortener"
)

// lockedHandler serves a password-protected link "pw1" (password
// "s3cret") to "https://secret.example/plans" and a disabled link "off",
// with pages on and clicks kept in log.
func lockedHandler(t *testing.T) (*Handler, *clickLog) {
	t.Helper()
	hash, err := hashPassword("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeLinks()
	f.links["pw1"] = shortener.Link{ID: 1, Code: "pw1", URL: "https://secret.example/plans", Redirect: 302, PasswordHash: hash}
	f.links["off"] = shortener.Link{ID: 2, Code: "off", URL: "https://secret.example/off", Redirect: 302, Disabled: true}
	log := &clickLog{}
	h := mustNew(Config{BaseURL: "http://sho.rt", Pages: true, Policy: NewURLPolicy("http://sho.rt", nil, nil, false)},
		Deps{Resolver: f, Links: f, IDs: &seqIDs{}, Clicks: log, Log: discardLogger(), Now: func() time.Time { return now }})
	return h, log
}

// post sends the password form as a same-origin browser does.
func post(h http.Handler, path, password string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(url.Values{"password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestPasswordLink: no path reveals a password-protected link's
// destination without its password (GET as a browser and as an API
// client, HEAD, the preview, a wrong password, a cross-origin post), none
// of them is a click, and the right password answers the redirect, one
// click.
func TestPasswordLink(t *testing.T) {
	h, log := lockedHandler(t)
	tests := []struct {
		name, method, path, accept string
		wantStatus                 int
		wantBody                   string
	}{
		{"browser", "GET", "/pw1", "text/html", 401, `<form method="post" action="/pw1"`},
		{"API client", "GET", "/pw1", "", 401, `"code":"password_required"`},
		{"HEAD", "HEAD", "/pw1", "text/html", 401, ""},
		{"preview", "GET", "/pw1+", "text/html", 401, `name="password"`},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body := w.Body.String()
		if w.Code != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
			t.Errorf("%s: %d %q, want %d with %q", tt.name, w.Code, body, tt.wantStatus, tt.wantBody)
		}
		if strings.Contains(body, "secret.example") || w.Header().Get("Location") != "" {
			t.Errorf("%s: the answer names the destination: Location %q, body %q", tt.name, w.Header().Get("Location"), body)
		}
	}

	for _, wrong := range []struct {
		name, password string
		header         map[string]string
		want           int
	}{
		{"wrong password", "s3cret!", nil, 401},
		{"empty password", "", nil, 401},
		{"over-long password", strings.Repeat("s", 200), nil, 401},
		{"cross-origin", "s3cret", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
	} {
		w := post(h, "/pw1", wrong.password, wrong.header)
		if w.Code != wrong.want || strings.Contains(w.Body.String(), "secret.example") || w.Header().Get("Location") != "" {
			t.Errorf("%s: %d, Location %q; want %d without the destination", wrong.name, w.Code, w.Header().Get("Location"), wrong.want)
		}
	}
	if w := post(h, "/pw1", "s3cret!", nil); !strings.Contains(w.Body.String(), "That password is not right.") {
		t.Errorf("a wrong password's form says no error: %q", w.Body.String())
	}
	if len(log.clicks) != 0 {
		t.Fatalf("%d clicks counted before the password was given", len(log.clicks))
	}

	w := post(h, "/pw1", "s3cret", nil)
	if w.Code != http.StatusFound || w.Header().Get("Location") != "https://secret.example/plans" {
		t.Fatalf("right password: %d Location %q, want 302 to the destination", w.Code, w.Header().Get("Location"))
	}
	if len(log.clicks) != 1 || log.clicks[0].LinkID != 1 {
		t.Errorf("clicks after the right password: %+v, want one of link 1", log.clicks)
	}
}

// TestPasswordAttemptsLimited: an address gets unlockBurst tries at a
// link, then 429 with Retry-After, even with the right password; another
// address, or another link, is not held back.
func TestPasswordAttemptsLimited(t *testing.T) {
	h, _ := lockedHandler(t)
	for i := range unlockBurst {
		if w := post(h, "/pw1", "guess", nil); w.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d, want 401", i+1, w.Code)
		}
	}
	w := post(h, "/pw1", "s3cret", nil)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || w.Header().Get("Location") != "" {
		t.Errorf("attempt %d: %d (Retry-After %q), want 429 without the destination", unlockBurst+1, w.Code, w.Header().Get("Retry-After"))
	}
	req := httptest.NewRequest(http.MethodPost, "/pw1", strings.NewReader("password=s3cret"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.RemoteAddr = "198.51.100.7:4242"
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	if rw.Code != http.StatusFound {
		t.Errorf("another address with the right password: %d, want 302", rw.Code)
	}
}

// TestDisabledLink: a disabled link answers 410 disabled everywhere (the
// redirect, HEAD, the preview, the form), with a page that says its
// owner turned it off, and is no click.
func TestDisabledLink(t *testing.T) {
	h, log := lockedHandler(t)
	for _, r := range []struct{ method, path, accept string }{
		{"GET", "/off", ""}, {"GET", "/off", "text/html"}, {"HEAD", "/off", ""}, {"GET", "/off+", "text/html"},
	} {
		req := httptest.NewRequest(r.method, r.path, nil)
		if r.accept != "" {
			req.Header.Set("Accept", r.accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusGone || w.Header().Get("Location") != "" || strings.Contains(w.Body.String(), "secret.example") {
			t.Errorf("%s %s: %d, Location %q, want 410 without the destination", r.method, r.path, w.Code, w.Header().Get("Location"))
		}
		switch {
		case r.method == "HEAD":
		case r.accept == "text/html" && !strings.Contains(w.Body.String(), "disabled"):
			t.Errorf("%s %s: the page does not say the link is disabled: %q", r.method, r.path, w.Body.String())
		case r.accept == "" && !strings.Contains(w.Body.String(), `"code":"disabled"`):
			t.Errorf("%s %s: %q, want code disabled", r.method, r.path, w.Body.String())
		}
	}
	if w := post(h, "/off", "x", nil); w.Code != http.StatusGone {
		t.Errorf("POST /off: %d, want 410", w.Code)
	}
	if len(log.clicks) != 0 {
		t.Errorf("%d clicks counted on a disabled link", len(log.clicks))
	}
}

// TestPasswordFormMayLeave: the password form's page lets its post be
// answered with a redirect to another site, which browsers hold to the
// policy's form-action; every other page keeps its forms to this site.
func TestPasswordFormMayLeave(t *testing.T) {
	h, _ := lockedHandler(t)
	req := httptest.NewRequest(http.MethodGet, "/pw1", nil)
	req.Header.Set("Accept", "text/html")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if csp := rec.Header().Get("Content-Security-Policy"); rec.Code != http.StatusUnauthorized || !strings.Contains(csp, "form-action 'self' https: http:;") {
		t.Errorf("password form: %d, Content-Security-Policy %q; want form-action to allow http and https", rec.Code, csp)
	}
	req = httptest.NewRequest(http.MethodGet, "/", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self';") {
		t.Errorf("home page: Content-Security-Policy %q; want form-action 'self'", csp)
	}
}
