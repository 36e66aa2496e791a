package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"shortener/internal/poll"
)

// keyed sends method path with the test's API key and a JSON body (nil:
// none) to a, and returns the status and body.
func keyed(tb testing.TB, a *app, method, path string, body any) (int, []byte) {
	tb.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.base+path, r)
	req.Header.Set("X-Api-Key", testAPIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := noFollow.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// createKeyed creates a link with the test key and returns its code.
func createKeyed(tb testing.TB, a *app, req map[string]any) string {
	tb.Helper()
	status, body := keyed(tb, a, http.MethodPost, "/api/v1/links", req)
	var got struct{ Code string }
	if err := json.Unmarshal(body, &got); status != http.StatusCreated || err != nil {
		tb.Fatalf("create %v: %d %s", req, status, body)
	}
	return got.Code
}

// location GETs code from a and returns the status and Location.
func location(tb testing.TB, a *app, method, code string) (int, string) {
	tb.Helper()
	req, _ := http.NewRequest(method, a.base+"/"+code, nil)
	resp, err := noFollow.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// TestLinkManagementAcrossInstances runs what an owner can change about
// a link through two instances of the app on one stack (L1 entries kept
// an hour, so only the invalidation path can make an instance forget):
// a maximum of 3 visits gives exactly three redirects alternating
// between the instances, then 410 on both; an edit made through one
// reaches the other (the time it took is logged, not asserted); a
// password-protected link redirects on neither without its password
// (GET, HEAD, the preview) and does with it.
func TestLinkManagementAcrossInstances(t *testing.T) {
	s := newServers(t)
	a1 := startApp(t, s, 1, "SHORTENER_L1_TTL", "1h")
	a2 := startApp(t, s, 2, "SHORTENER_L1_TTL", "1h")

	limited := createKeyed(t, a1, map[string]any{"url": "https://example.com/limited", "max_visits": 3})
	for i, a := range []*app{a1, a2, a1, a2, a1} {
		want := http.StatusFound
		if i >= 3 {
			want = http.StatusGone
		}
		if got, _ := location(t, a, http.MethodGet, limited); got != want {
			t.Fatalf("visit %d (on %s): %d, want %d", i+1, a.base, got, want)
		}
	}

	edited := createKeyed(t, a1, map[string]any{"url": "https://example.com/before"})
	for _, a := range []*app{a1, a2} {
		if _, loc := location(t, a, http.MethodGet, edited); loc != "https://example.com/before" {
			t.Fatalf("before the edit, %s sends to %q", a.base, loc)
		}
	}
	if status, body := keyed(t, a2, http.MethodPatch, "/api/v1/links/"+edited, map[string]any{"url": "https://example.com/after"}); status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", status, body)
	}
	start := time.Now()
	for _, a := range []*app{a1, a2} {
		poll.Until(t, "the edit on "+a.base, func() error {
			if _, loc := location(t, a, http.MethodGet, edited); loc != "https://example.com/after" {
				return fmt.Errorf("Location %q", loc)
			}
			return nil
		})
	}
	t.Logf("both instances sent to the edited destination %s after the PATCH's 200", time.Since(start).Round(time.Millisecond))

	locked := createKeyed(t, a1, map[string]any{"url": "https://secret.example/plans", "password": "s3cret"})
	for _, a := range []*app{a1, a2} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			if status, loc := location(t, a, m, locked); status != http.StatusUnauthorized || loc != "" {
				t.Errorf("%s /%s on %s without the password: %d Location %q, want 401 and none", m, locked, a.base, status, loc)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, a.base+"/"+locked+"+", nil)
		req.Header.Set("Accept", "text/html")
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(page), "secret.example") {
			t.Errorf("the preview on %s names the destination", a.base)
		}
		form := url.Values{"password": {"s3cret"}}.Encode()
		req, _ = http.NewRequest(http.MethodPost, a.base+"/"+locked, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err = noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://secret.example/plans" {
			t.Errorf("the right password on %s: %d Location %q, want 302 to the destination", a.base, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}
