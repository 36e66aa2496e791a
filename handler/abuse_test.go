package handler

import (
	"net/http"
	"testing"
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
