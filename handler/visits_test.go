package handler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener"
)

// fakeVisits grants each link's first MaxVisits takes, then answers
// ErrExhausted; down makes every take unavailable.
type fakeVisits struct {
	mu    sync.Mutex
	taken map[string]int64
	down  bool
}

func (f *fakeVisits) Take(_ context.Context, l shortener.Link) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.down:
		return shortener.ErrUnavailable
	case f.taken[l.Code] >= l.MaxVisits:
		return shortener.ErrExhausted
	}
	f.taken[l.Code]++
	return nil
}

// TestMaxVisits: a link with a maximum redirects that many times, each a
// click, then answers 410 visits_exhausted; HEAD spends no visit; a
// visit that cannot be decided is 503 with Retry-After, never a redirect
// past the limit.
func TestMaxVisits(t *testing.T) {
	f := newFakeLinks()
	f.links["max2"] = shortener.Link{ID: 3, Code: "max2", URL: "https://example.com/m", Redirect: 302, MaxVisits: 2}
	f.links["free"] = shortener.Link{ID: 4, Code: "free", URL: "https://example.com/f", Redirect: 302}
	clicks, visits := &clickLog{}, &fakeVisits{taken: map[string]int64{}}
	h := mustNew(Config{BaseURL: "http://sho.rt", Pages: true, Policy: NewURLPolicy("http://sho.rt", nil, nil, false)},
		Deps{Resolver: f, Links: f, IDs: &seqIDs{}, Clicks: clicks, Visits: visits, Log: discardLogger(), Now: func() time.Time { return now }})
	get := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	for i, want := range []int{302, 302, 410, 410} {
		if w := get("HEAD", "/max2"); w.Code != http.StatusFound {
			t.Fatalf("HEAD before visit %d: %d, want 302 (HEAD spends no visit)", i+1, w.Code)
		}
		w := get("GET", "/max2")
		if w.Code != want {
			t.Fatalf("visit %d: %d, want %d", i+1, w.Code, want)
		}
		if want == 410 && (!strings.Contains(w.Body.String(), `"code":"visits_exhausted"`) || w.Header().Get("Location") != "") {
			t.Errorf("visit %d: %q, Location %q; want visits_exhausted and no Location", i+1, w.Body.String(), w.Header().Get("Location"))
		}
	}
	if len(clicks.clicks) != 2 {
		t.Errorf("%d clicks, want 2 (one per visit granted)", len(clicks.clicks))
	}
	for range 3 {
		if w := get("GET", "/free"); w.Code != http.StatusFound {
			t.Errorf("a link without a maximum: %d", w.Code)
		}
	}
	visits.down = true
	f.links["max9"] = shortener.Link{ID: 5, Code: "max9", URL: "https://example.com/9", Redirect: 302, MaxVisits: 9}
	if w := get("GET", "/max9"); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || w.Header().Get("Location") != "" {
		t.Errorf("undecided visit: %d (Retry-After %q, Location %q), want 503 with Retry-After and no Location", w.Code, w.Header().Get("Retry-After"), w.Header().Get("Location"))
	}
}
