package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"shortener"
	"strings"
	"testing"
	"time"
)

var _ BatchKeys = (*fakeLinks)(nil)

// ClaimBatchKey records batch keys as the store does (they never expire
// in a test).
func (f *fakeLinks) ClaimBatchKey(_ context.Context, idem shortener.Idempotency, _ time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	if f.keys == nil {
		f.keys = map[string]shortener.Idempotency{}
		f.keyCode = map[string]string{}
	}
	k := idem.Scope + "\n" + idem.Key
	prev, ok := f.keys[k]
	switch {
	case !ok:
		f.keys[k] = idem
		return false, nil
	case prev.RequestHash != idem.RequestHash:
		return false, shortener.ErrKeyReused
	}
	return true, nil
}

type batchAnswer struct {
	Results []struct {
		Status int           `json:"status"`
		Link   *linkResponse `json:"link"`
		Error  *errorDetail  `json:"error"`
	} `json:"results"`
}

func batchOf(t *testing.T, body string) batchAnswer {
	t.Helper()
	var a batchAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("batch answer %s: %v", body, err)
	}
	return a
}

// TestBatch creates a batch of good and bad links: a result per link, in
// order, each what a single create would have answered.
func TestBatch(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{})
	f.links["taken"] = shortener.Link{ID: 99, Code: "taken", URL: "https://example.com/", Redirect: 302, CreatedAt: now}
	body := `{"links":[
		{"url":"https://example.com/1"},
		{"url":"ftp://example.com/"},
		{"url":"https://example.com/2","alias":"taken"},
		{"url":"https://example.com/3","alias":"mine-3","tags":["Q4"],"max_visits":2,"redirect":307},
		{"url":"https://example.com/4","nope":1},
		"not an object",
		{"url":"https://example.com/5","password":"pw","expires_at":"2020-01-01T00:00:00Z"},
		{"url":"https://example.com/6","password":"pw"}
	]}`
	rec := do(h, "POST", "/api/v1/links/batch", body, "X-Api-Key", "k3y")
	if rec.Code != 200 {
		t.Fatalf("batch: %d %s", rec.Code, rec.Body)
	}
	a := batchOf(t, rec.Body.String())
	want := []struct {
		status      int
		code, field string
	}{{201, "", ""}, {400, CodeURLScheme, "url"}, {409, CodeAliasTaken, "alias"}, {201, "", ""}, {400, CodeInvalidJSON, ""},
		{400, CodeInvalidJSON, ""}, {400, CodeInvalidRequest, "expires_at"}, {201, "", ""}}
	if len(a.Results) != len(want) {
		t.Fatalf("got %d results, want %d: %s", len(a.Results), len(want), rec.Body)
	}
	for i, w := range want {
		r := a.Results[i]
		switch {
		case r.Status != w.status:
			t.Errorf("link %d: status %d, want %d (%s)", i, r.Status, w.status, rec.Body)
		case w.status == 201 && (r.Link == nil || r.Error != nil || f.links[r.Link.Code].Owner != HashKey("k3y")):
			t.Errorf("link %d: %+v, want a link of the key's", i, r)
		case w.status != 201 && (r.Link != nil || r.Error == nil || r.Error.Code != w.code || r.Error.Field != w.field || r.Error.Message == ""):
			t.Errorf("link %d: %+v, want error %s about %q", i, r.Error, w.code, w.field)
		}
	}
	if l := f.links["mine-3"]; fmt.Sprint(l.Tags) != "[q4]" || l.MaxVisits != 2 || l.Redirect != 307 {
		t.Errorf("mine-3 stored as %+v", l)
	}
	if l := f.links[a.Results[7].Link.Code]; !passwordMatches(l.PasswordHash, "pw") || !a.Results[7].Link.PasswordProtected {
		t.Errorf("link 7 stored as %+v", l)
	}
	if f.creates != 3 {
		t.Errorf("%d links created, want 3", f.creates)
	}
}

// TestBatchIdempotency sends a batch twice with one key (the second time
// nothing is created and every result is the same), then another batch
// with that key (422, nothing created).
func TestBatchIdempotency(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{})
	body := `{"links":[{"url":"https://example.com/1"},{"url":"bad"},{"url":"https://example.com/2","alias":"al-2"}]}`
	first := do(h, "POST", "/api/v1/links/batch", body, "X-Api-Key", "k3y", "Idempotency-Key", "b1")
	if first.Code != 200 || f.creates != 2 {
		t.Fatalf("first: %d %s, %d creates", first.Code, first.Body, f.creates)
	}
	// The same links, spaced otherwise: the same request.
	again := do(h, "POST", "/api/v1/links/batch", strings.ReplaceAll(body, ",", " , "), "X-Api-Key", "k3y", "Idempotency-Key", "b1")
	if again.Code != 200 || again.Header().Get("Idempotent-Replayed") != "true" || f.creates != 2 {
		t.Errorf("retry: %d %s, %d creates; want a replay creating nothing", again.Code, again.Body, f.creates)
	}
	a, b := batchOf(t, first.Body.String()), batchOf(t, again.Body.String())
	for i := range a.Results {
		ra, rb := a.Results[i], b.Results[i]
		if ra.Status != rb.Status || (ra.Link != nil) != (rb.Link != nil) || ra.Link != nil && ra.Link.Code != rb.Link.Code {
			t.Errorf("link %d: first %+v, retry %+v", i, ra, rb)
		}
	}
	other := do(h, "POST", "/api/v1/links/batch", `{"links":[{"url":"https://example.com/1"},{"url":"https://example.com/3"}]}`,
		"X-Api-Key", "k3y", "Idempotency-Key", "b1")
	if other.Code != 422 || errCode(t, other) != CodeKeyReused || f.creates != 2 {
		t.Errorf("another batch under the key: %d %s, %d creates; want 422 and none", other.Code, other.Body, f.creates)
	}
	// Another key's scope: the same key name is another key (whose
	// alias al-2 is taken now: 409).
	if rec := do(h, "POST", "/api/v1/links/batch", body, "X-Api-Key", "other-k3y", "Idempotency-Key", "b1"); rec.Code != 200 || f.creates != 3 ||
		batchOf(t, rec.Body.String()).Results[2].Status != 409 {
		t.Errorf("another API key, same Idempotency-Key: %d %s, %d creates; want its own link and al-2 taken", rec.Code, rec.Body, f.creates)
	}
	// A single create with a key a batch derived cannot exist: no space.
	if rec := do(h, "POST", "/api/v1/links", `{"url":"https://example.com/"}`, "X-Api-Key", "k3y", "Idempotency-Key", "batch x 0"); rec.Code != 400 {
		t.Errorf("a key with spaces: %d, want 400", rec.Code)
	}
}

// TestBatchRefused sends batches refused whole: malformed, too large, too
// many passwords, over the create limit, or with MySQL down.
func TestBatchRefused(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{KeyCreateRate: 1, KeyCreateBurst: 1000})
	links := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString(`{"links":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"url":"https://example.com/%d"%s}`, i, extra)
		}
		return b.String() + "]}"
	}
	for _, tt := range []struct {
		name, body  string
		status      int
		code, field string
	}{
		{"not JSON", `{"links":[`, 400, CodeInvalidJSON, ""},
		{"empty body", ``, 400, CodeInvalidJSON, ""},
		{"no links", `{}`, 400, CodeInvalidJSON, "links"},
		{"links not a list", `{"links":{"url":"https://example.com/"}}`, 400, CodeInvalidJSON, "links"},
		{"links null", `{"links":null}`, 400, CodeInvalidJSON, "links"},
		{"unknown member", `{"links":[],"atomic":true}`, 400, CodeInvalidJSON, ""},
		{"trailing data", `{"links":[{"url":"https://example.com/"}]} {}`, 400, CodeInvalidJSON, ""},
		{"empty list", `{"links":[]}`, 400, CodeInvalidRequest, "links"},
		{"1,001 links", links(1001, ""), 400, CodeInvalidRequest, "links"},
		{"101 passwords", links(101, `,"password":"x"`), 400, CodeInvalidRequest, "links"},
	} {
		rec := do(h, "POST", "/api/v1/links/batch", tt.body, "X-Api-Key", "k3y")
		var b errorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &b)
		if rec.Code != tt.status || b.Error.Code != tt.code || b.Error.Field != tt.field {
			t.Errorf("%s: got %d %.200s, want %d %s about %q", tt.name, rec.Code, rec.Body, tt.status, tt.code, tt.field)
		}
	}
	if f.creates != 0 {
		t.Fatalf("refused batches created %d links", f.creates)
	}
	if rec := do(h, "POST", "/api/v1/links/batch", links(1, ""), "X-Api-Key", "k3y", "Content-Type", "text/plain"); rec.Code != 415 {
		t.Errorf("text/plain: %d, want 415", rec.Code)
	}
	if rec := do(h, "POST", "/api/v1/links/batch", links(1, "")); rec.Code != 401 {
		t.Errorf("without a key: %d, want 401", rec.Code)
	}

	// The limit counts links: the burst's 1,000 at once pass, the next
	// one does not, and nothing of a refused batch is created.
	if rec := do(h, "POST", "/api/v1/links/batch", links(1000, ""), "X-Api-Key", "k3y"); rec.Code != 200 || f.creates != 1000 {
		t.Fatalf("a batch of the burst: %d, %d creates", rec.Code, f.creates)
	}
	rec := do(h, "POST", "/api/v1/links/batch", links(2, ""), "X-Api-Key", "k3y")
	if rec.Code != 429 || errCode(t, rec) != CodeRateLimited || rec.Header().Get("Retry-After") == "" || f.creates != 1000 {
		t.Errorf("over the limit: %d %s, Retry-After %q, %d creates; want 429 and none", rec.Code, rec.Body, rec.Header().Get("Retry-After"), f.creates)
	}
	small := newManageHandler(f, nil, Config{KeyCreateRate: 1, KeyCreateBurst: 10})
	if rec := do(small, "POST", "/api/v1/links/batch", links(11, ""), "X-Api-Key", "k3y"); rec.Code != 400 || !strings.Contains(rec.Body.String(), "at most 10") {
		t.Errorf("a batch larger than the burst: %d %s, want 400 saying the burst", rec.Code, rec.Body)
	}

	// MySQL down: each link says so; a batch is never half-answered.
	down := newFakeLinks()
	down.err = fmt.Errorf("dial: %w", shortener.ErrUnavailable)
	rec = do(newManageHandler(down, nil, Config{}), "POST", "/api/v1/links/batch", links(3, ""), "X-Api-Key", "k3y")
	if rec.Code != 200 {
		t.Fatalf("MySQL down: %d %s", rec.Code, rec.Body)
	}
	for i, r := range batchOf(t, rec.Body.String()).Results {
		if r.Status != 503 || r.Error == nil || r.Error.Code != CodeUnavailable {
			t.Errorf("MySQL down, link %d: %+v, want 503", i, r)
		}
	}
}
