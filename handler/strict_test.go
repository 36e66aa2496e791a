package handler

import (
	"encoding/json"
	"net/http/httptest"
	"shortener"
	"strings"
	"testing"
)

// TestCreateRefusesLooseJSON: each body is refused with invalid_json, its
// message names no Go type, and no link is stored.
func TestCreateRefusesLooseJSON(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	for _, tt := range []struct{ name, body, inMessage string }{
		{"duplicate key", `{"url":"https://a.example/","url":"https://b.example/"}`, "more than once"},
		{"case-variant key", `{"URL":"https://a.example/"}`, "case-sensitive"},
		{"case-variant second key", `{"url":"https://a.example/","Alias":"abc"}`, "case-sensitive"},
		{"unknown key", `{"url":"https://a.example/","owner":"x"}`, "unknown field"},
		{"trailing object", `{"url":"https://a.example/"}{"url":"https://b.example/"}`, "after the JSON object"},
		{"trailing bracket", `{"url":"https://a.example/"}]`, "after the JSON object"},
		{"trailing garbage", `{"url":"https://a.example/"} x`, "after the JSON object"},
		{"array", `[{"url":"https://a.example/"}]`, "JSON object"},
		{"string", `"https://a.example/"`, "JSON object"},
		{"number for url", `{"url":5}`, `"url" must be a string`},
		{"string for redirect", `{"url":"https://a.example/","redirect":"301"}`, `"redirect" must be a whole number`},
		{"bad time", `{"url":"https://a.example/","expires_at":"tomorrow"}`, "RFC 3339"},
		{"number for time", `{"url":"https://a.example/","expires_at":5}`, "RFC 3339"},
		{"cut short", `{"url":"https://a.example/"`, "ends before"},
		{"syntax", `{"url" "x"}`, "not valid JSON"},
		{"empty", ``, "empty"},
	} {
		rec := do(h, "POST", "/api/v1/links", tt.body)
		var body errorBody
		json.Unmarshal(rec.Body.Bytes(), &body) //nolint:errcheck // errCode checks it
		if rec.Code != 400 || errCode(t, rec) != CodeInvalidJSON || !strings.Contains(body.Error.Message, tt.inMessage) {
			t.Errorf("%s: got %d %s, want 400 invalid_json mentioning %q", tt.name, rec.Code, rec.Body, tt.inMessage)
		}
		for _, goWord := range []string{"Go ", "struct", "createRequest", "time.Time", "int", "json:"} {
			if strings.Contains(rec.Body.String(), goWord) && !strings.Contains(tt.inMessage, goWord) {
				t.Errorf("%s: message %s exposes %q", tt.name, rec.Body, goWord)
			}
		}
	}
	if f.creates != 0 {
		t.Errorf("%d links stored from refused bodies, want 0", f.creates)
	}
}

// TestIdempotencyScope covers the idempotency bullets: the
// fingerprint covers every field (alias included); keys are scoped to the
// caller, so another client's identical key neither replays nor is
// refused; a replay of a link deleted since is 410.
func TestIdempotencyScope(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	post := func(body, idem, apiKey, addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/links", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idem)
		if apiKey != "" {
			req.Header.Set("X-Api-Key", apiKey)
		}
		req.RemoteAddr = addr + ":4000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first := post(`{"url":"https://a.example/","alias":"first"}`, "k1", "k3y", "192.0.2.1")
	if first.Code != 201 {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	for _, tt := range []struct {
		name, body, idem, apiKey, addr string
		status                         int
		code                           string // error code, or the link code of a 201
		stored                         int    // links stored after the call
	}{
		{"same request replays", `{"url":"https://a.example/","alias":"first"}`, "k1", "k3y", "192.0.2.9", 201, "first", 1},
		{"other alias is another request", `{"url":"https://a.example/","alias":"second"}`, "k1", "k3y", "192.0.2.1", 422, CodeKeyReused, 1},
		{"other redirect is another request", `{"url":"https://a.example/","alias":"first","redirect":301}`, "k1", "k3y", "192.0.2.1", 422, CodeKeyReused, 1},
		{"another key's same key does not replay", `{"url":"https://a.example/","alias":"mine"}`, "k1", "other-k3y", "192.0.2.1", 201, "mine", 2},
		{"anonymous same key does not replay", `{"url":"https://a.example/"}`, "k1", "", "192.0.2.1", 201, "", 3},
		{"anonymous from another address", `{"url":"https://a.example/"}`, "k1", "", "192.0.2.2", 201, "", 4},
		{"anonymous replay from the same address", `{"url":"https://a.example/"}`, "k1", "", "192.0.2.2", 201, "", 4},
	} {
		rec := post(tt.body, tt.idem, tt.apiKey, tt.addr)
		switch {
		case rec.Code != tt.status:
			t.Errorf("%s: got %d %s, want %d", tt.name, rec.Code, rec.Body, tt.status)
		case tt.status != 201 && errCode(t, rec) != tt.code:
			t.Errorf("%s: got %s, want %s", tt.name, rec.Body, tt.code)
		case tt.status == 201 && tt.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`):
			t.Errorf("%s: got %s, want link %s", tt.name, rec.Body, tt.code)
		}
		if f.creates != tt.stored {
			t.Errorf("%s: %d links stored, want %d", tt.name, f.creates, tt.stored)
		}
	}
	if rec := do(h, "DELETE", "/api/v1/links/first", "", "X-Api-Key", "k3y"); rec.Code != 204 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := post(`{"url":"https://a.example/","alias":"first"}`, "k1", "k3y", "192.0.2.1"); rec.Code != 410 || errCode(t, rec) != CodeGone {
		t.Errorf("replay of a deleted link: got %d %s, want 410 gone", rec.Code, rec.Body)
	}
}

// TestRedirectHeaders: every redirect carries the configured
// Referrer-Policy; permanent ones a bounded max-age, temporary ones none.
func TestRedirectHeaders(t *testing.T) {
	f := newFakeLinks()
	for _, r := range []int{301, 302, 307, 308} {
		code := "r" + strings.Repeat("x", r-300)
		f.links[code] = shortener.Link{Code: code, URL: "https://example.com/", Redirect: r}
	}
	h := newTestHandler(f)
	for _, tt := range []struct {
		redirect int
		cache    string
	}{{301, "public, max-age=3600"}, {302, "private, max-age=0"}, {307, "private, max-age=0"}, {308, "public, max-age=3600"}} {
		rec := do(h, "GET", "/r"+strings.Repeat("x", tt.redirect-300), "")
		if rec.Code != tt.redirect || rec.Header().Get("Cache-Control") != tt.cache || rec.Header().Get("Referrer-Policy") != "strict-origin-when-cross-origin" {
			t.Errorf("%d: got %d Cache-Control %q Referrer-Policy %q, want %q and strict-origin-when-cross-origin",
				tt.redirect, rec.Code, rec.Header().Get("Cache-Control"), rec.Header().Get("Referrer-Policy"), tt.cache)
		}
	}
}
