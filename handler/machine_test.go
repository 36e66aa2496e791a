package handler

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMachineErrorsAreJSON: an error of an API or operational route is
// JSON even to a browser; a redirect's or a page's is a page.
func TestMachineErrorsAreJSON(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	h2 := mustNew(Config{BaseURL: "http://sho.rt", Pages: true, Policy: NewURLPolicy("http://sho.rt", nil, nil, false)},
		Deps{Resolver: f, Links: f, IDs: &seqIDs{}, Ready: f, Log: discardLogger()})
	f.err = errors.New("down") // readyz fails
	tests := []struct {
		h        *Handler
		path     string
		wantPage bool
	}{
		{h2, "/readyz", false},
		{h2, "/api/v1/links/abc", false},
		{h2, "/api/v1/nope", false},
		{h2, "/nope-code", true},
		{h2, "/stats/a/b/c", true},
		{h, "/api/v1/links/abc", false},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, tt.path, nil)
		req.Header.Set("Accept", "text/html")
		w := httptest.NewRecorder()
		tt.h.ServeHTTP(w, req)
		if page := strings.HasPrefix(w.Header().Get("Content-Type"), "text/html"); page != tt.wantPage || w.Code < 400 {
			t.Errorf("GET %s as a browser: %d %s, want an error as a page: %v", tt.path, w.Code, w.Header().Get("Content-Type"), tt.wantPage)
		}
	}
}
