package handler

import (
	"encoding/json"
	"shortener"
	"testing"
	"time"
)

// fakeTrender answers a fixed ranking and records what it was asked.
type fakeTrender struct {
	window string
	limit  int
}

func (f *fakeTrender) Top(window string, limit int) (shortener.Trending, error) {
	f.window, f.limit = window, limit
	links := []shortener.Trend{
		{Link: shortener.Link{Code: "a1", URL: "https://example.com/a"}, Clicks: 9},
		{Link: shortener.Link{Code: "b2", URL: "https://example.com/b"}, Clicks: 4},
	}
	return shortener.Trending{Window: 5 * time.Minute, Source: "local", From: now.Add(-5 * time.Minute),
		AsOf: now.Add(-300 * time.Millisecond), Synced: now.Add(-10 * time.Second), Links: links[:min(limit, 2)]}, nil
}

func TestTrending(t *testing.T) {
	tr := &fakeTrender{}
	h := newTestHandler(newFakeLinks())
	h.d.Trending = tr
	rec := do(h, "GET", "/api/v1/trending?window=1h&limit=1", "")
	if rec.Code != 200 {
		t.Fatalf("got %d %s, want 200", rec.Code, rec.Body)
	}
	var got trendingResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if tr.window != "1h" || tr.limit != 1 {
		t.Errorf("asked for %s/%d, want 1h/1", tr.window, tr.limit)
	}
	// Public: the destination's host, never its full URL.
	want := trendingLink{Code: "a1", ShortURL: "http://sho.rt/a1", Host: "example.com", Clicks: 9}
	if got.Source != "local" || got.Window != "1h" || got.AgeMS != 300 || got.SyncedAt == nil || len(got.Links) != 1 || got.Links[0] != want {
		t.Errorf("got %+v, want source local, window 1h, age 300 ms, synced_at set, links [%+v]", got, want)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "public, max-age=1" {
		t.Errorf("Cache-Control %q", cc)
	}
	if do(h, "GET", "/api/v1/trending", ""); tr.window != "5m" || tr.limit != 10 {
		t.Errorf("defaults: asked for %s/%d, want 5m/10", tr.window, tr.limit)
	}
	for _, q := range []string{"?window=2h", "?window=5M", "?limit=0", "?limit=101", "?limit=x"} {
		if rec := do(h, "GET", "/api/v1/trending"+q, ""); rec.Code != 400 || errCode(t, rec) != CodeInvalidRequest {
			t.Errorf("%s: got %d %s, want 400 %s", q, rec.Code, rec.Body, CodeInvalidRequest)
		}
	}
}

func TestTrendingKeyed(t *testing.T) {
	h := mustNew(Config{BaseURL: "http://sho.rt", TrendingKeyed: true}, Deps{
		Trending: &fakeTrender{},
		Keys:     NewKeyring(nil, []string{"k3y"}, nil, time.Second, time.Now, nil),
		Log:      discardLogger(),
	})
	if rec := do(h, "GET", "/api/v1/trending", ""); rec.Code != 401 || errCode(t, rec) != CodeUnauthorized {
		t.Errorf("no key: got %d %s, want 401", rec.Code, rec.Body)
	}
	rec := do(h, "GET", "/api/v1/trending", "", "X-Api-Key", "k3y")
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "private, max-age=1" {
		t.Errorf("with a key: got %d, Cache-Control %q, want 200 private", rec.Code, rec.Header().Get("Cache-Control"))
	}
	if rec := do(mustNew(Config{}, Deps{Log: discardLogger()}), "GET", "/api/v1/trending", ""); rec.Code != 404 {
		t.Errorf("without a ranking: got %d, want 404", rec.Code)
	}
}

// BenchmarkTrending is GET /api/v1/trending through the handler, with an
// answer of 10 links (JSON encoding included).
func BenchmarkTrending(b *testing.B) {
	h := newTestHandler(newFakeLinks())
	h.d.Trending = &fakeTrender10{}
	b.ReportAllocs()
	for b.Loop() {
		if rec := do(h, "GET", "/api/v1/trending?limit=10", ""); rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

type fakeTrender10 struct{}

func (fakeTrender10) Top(string, int) (shortener.Trending, error) {
	t := shortener.Trending{Window: 5 * time.Minute, Source: "local", AsOf: now}
	for i := range 10 {
		code := "c" + string(rune('a'+i))
		t.Links = append(t.Links, shortener.Trend{Link: shortener.Link{Code: code, URL: "https://example.com/" + code}, Clicks: int64(100 - i)})
	}
	return t, nil
}
