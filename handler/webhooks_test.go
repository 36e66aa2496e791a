package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"shortener"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeWebhooks keeps webhooks in memory, as webhook.Book over the store
// does: IDs and secrets made here, at most limit per owner.
type fakeWebhooks struct {
	mu    sync.Mutex
	hooks []shortener.Webhook
	n     int
	limit int
}

var _ Webhooks = (*fakeWebhooks)(nil)

func (f *fakeWebhooks) Add(_ context.Context, owner, url string, events []shortener.EventType, now time.Time) (shortener.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mine := 0
	for _, w := range f.hooks {
		if w.Owner == owner {
			mine++
		}
	}
	if mine >= f.limit {
		return shortener.Webhook{}, shortener.ErrWebhookLimit
	}
	f.n++
	w := shortener.Webhook{ID: fmt.Sprintf("wh_%024x", f.n), Owner: owner, URL: url, Events: events, Secret: fmt.Sprintf("whsec_c2VjcmV0%d", f.n), CreatedAt: now}
	f.hooks = append(f.hooks, w)
	return w, nil
}

func (f *fakeWebhooks) List(_ context.Context, owner string) ([]shortener.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []shortener.Webhook
	for _, w := range f.hooks {
		if w.Owner == owner {
			out = append(out, w)
		}
	}
	return out, nil
}

func (f *fakeWebhooks) Remove(_ context.Context, owner, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, w := range f.hooks {
		if w.ID == id && w.Owner == owner {
			f.hooks = append(f.hooks[:i], f.hooks[i+1:]...)
			return nil
		}
	}
	return shortener.ErrWebhookNotFound
}

// newWebhookHandler is a handler with webhooks kept by f, whose targets
// are public addresses unless allowPrivate.
func newWebhookHandler(f *fakeWebhooks, allowPrivate bool) *Handler {
	targets := func(a netip.Addr) bool { return allowPrivate || !(a.IsLoopback() || a.IsPrivate() || localAddr(a)) }
	links := newFakeLinks()
	return mustNew(Config{BaseURL: "http://sho.rt", Instance: "app9", Policy: NewURLPolicy("http://sho.rt", nil, []string{"denied.example"}, false),
		WebhookTargets: targets}, Deps{
		Resolver: links, Links: links, IDs: &seqIDs{}, Webhooks: f,
		Keys: NewKeyring(nil, []string{"k3y", "other-k3y"}, []string{"adm1n"}, time.Second, time.Now, nil),
		Log:  discardLogger(), Now: func() time.Time { return now },
	})
}

// TestWebhookLifecycle creates, lists and deletes webhooks: the secret
// only in the create's answer, events all by default and in the
// documented order, each key seeing and deleting only its own.
func TestWebhookLifecycle(t *testing.T) {
	f := &fakeWebhooks{limit: 10}
	h := newWebhookHandler(f, false)

	rec := do(h, "POST", "/api/v1/webhooks", `{"url":"https://hooks.example.com/in"}`, "X-Api-Key", "k3y")
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: got %d %s, want 201", rec.Code, rec.Body)
	}
	var made webhookResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &made); err != nil {
		t.Fatal(err)
	}
	if made.Secret == "" || made.ID == "" || made.URL != "https://hooks.example.com/in" || !made.CreatedAt.Equal(now) {
		t.Errorf("create answered %+v, want an ID, the URL, a secret and the time", made)
	}
	if got, want := fmt.Sprint(made.Events), "[link.created link.updated link.deleted link.clicked]"; got != want {
		t.Errorf("default events: got %s, want %s", got, want)
	}
	if loc := rec.Header().Get("Location"); loc != "/api/v1/webhooks/"+made.ID {
		t.Errorf("Location: got %q", loc)
	}

	rec = do(h, "POST", "/api/v1/webhooks", `{"url":"https://hooks.example.com/clicks","events":["link.clicked","link.created","link.clicked"]}`, "X-Api-Key", "k3y")
	if rec.Code != http.StatusCreated {
		t.Fatalf("create with events: got %d %s, want 201", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"events":["link.created","link.clicked"]`) {
		t.Errorf("events named: got %s, want link.created and link.clicked, once each, in order", rec.Body)
	}

	rec = do(h, "GET", "/api/v1/webhooks", "", "X-Api-Key", "k3y")
	var list struct{ Webhooks []map[string]any }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("list: got %d %s", rec.Code, rec.Body)
	}
	if len(list.Webhooks) != 2 {
		t.Fatalf("list: got %d webhooks, want 2", len(list.Webhooks))
	}
	for _, w := range list.Webhooks {
		if _, ok := w["secret"]; ok {
			t.Errorf("list shows a secret: %v", w)
		}
	}
	if rec := do(h, "GET", "/api/v1/webhooks", "", "X-Api-Key", "other-k3y"); rec.Body.String() != `{"webhooks":[]}`+"\n" {
		t.Errorf("another key's list: got %s, want none", rec.Body)
	}

	if rec := do(h, "DELETE", "/api/v1/webhooks/"+made.ID, "", "X-Api-Key", "other-k3y"); rec.Code != http.StatusNotFound {
		t.Errorf("delete by another key: got %d, want 404", rec.Code)
	}
	if rec := do(h, "DELETE", "/api/v1/webhooks/"+made.ID, "", "X-Api-Key", "k3y"); rec.Code != http.StatusNoContent {
		t.Errorf("delete: got %d %s, want 204", rec.Code, rec.Body)
	}
	if rec := do(h, "DELETE", "/api/v1/webhooks/"+made.ID, "", "X-Api-Key", "k3y"); rec.Code != http.StatusNotFound || errCode(t, rec) != CodeNotFound {
		t.Errorf("delete again: got %d %s, want 404 not_found", rec.Code, rec.Body)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/webhooks", `{"url":"https://hooks.example.com/in"}`},
		{"GET", "/api/v1/webhooks", ""},
		{"DELETE", "/api/v1/webhooks/" + made.ID, ""},
	} {
		if rec := do(h, r.method, r.path, r.body); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: got %d, want 401", r.method, r.path, rec.Code)
		}
	}
}

// TestWebhookLimit refuses a key's webhook past the limit with 409
// webhook_limit, and lets another key make its own.
func TestWebhookLimit(t *testing.T) {
	h := newWebhookHandler(&fakeWebhooks{limit: 1}, false)
	body := `{"url":"https://hooks.example.com/in"}`
	if rec := do(h, "POST", "/api/v1/webhooks", body, "X-Api-Key", "k3y"); rec.Code != http.StatusCreated {
		t.Fatalf("first: got %d %s", rec.Code, rec.Body)
	}
	if rec := do(h, "POST", "/api/v1/webhooks", body, "X-Api-Key", "k3y"); rec.Code != http.StatusConflict || errCode(t, rec) != CodeWebhookLimit {
		t.Errorf("past the limit: got %d %s, want 409 webhook_limit", rec.Code, rec.Body)
	}
	if rec := do(h, "POST", "/api/v1/webhooks", body, "X-Api-Key", "other-k3y"); rec.Code != http.StatusCreated {
		t.Errorf("another key: got %d %s, want 201", rec.Code, rec.Body)
	}
}

// TestWebhookURLPolicy is the URL policy of a webhook: the links' rules,
// but no loop check and no loopback, private or link-local receiver
// unless the targets allow it.
func TestWebhookURLPolicy(t *testing.T) {
	tests := []struct {
		url          string
		allowPrivate bool
		code         string // "" accepted
		stored       string
	}{
		{"https://hooks.example.com/in", false, "", "https://hooks.example.com/in"},
		{"HTTPS://Hooks.Example.COM/in?x=1", false, "", "https://hooks.example.com/in?x=1"},
		{"http://sho.rt/hook", false, "", "http://sho.rt/hook"}, // the shortener's own host: no loop for a webhook
		{"ftp://hooks.example.com/", false, CodeURLScheme, ""},
		{"https://user:pw@hooks.example.com/", false, CodeURLCredentials, ""},
		{"https://denied.example/in", false, CodeURLDenied, ""},
		{"hooks.example.com/in", false, CodeInvalidURL, ""},
		{"http://127.0.0.1:9000/in", false, CodeURLDenied, ""},
		{"http://2130706433/in", false, CodeURLDenied, ""}, // 127.0.0.1 spelled as a number
		{"http://[::1]/in", false, CodeURLDenied, ""},
		{"http://[::ffff:10.0.0.1]/in", false, CodeURLDenied, ""},
		{"http://10.1.2.3/in", false, CodeURLDenied, ""},
		{"http://192.168.0.10/in", false, CodeURLDenied, ""},
		{"http://169.254.169.254/latest", false, CodeURLDenied, ""}, // cloud metadata
		{"http://localhost:8080/in", false, CodeURLDenied, ""},
		{"http://api.localhost/in", false, CodeURLDenied, ""},
		{"http://LocalHost./in", false, CodeURLDenied, ""},
		{"http://127.0.0.1:9000/in", true, "", "http://127.0.0.1:9000/in"},
		{"http://localhost:9000/in", true, "", "http://localhost:9000/in"},
	}
	for _, tt := range tests {
		f := &fakeWebhooks{limit: 100}
		h := newWebhookHandler(f, tt.allowPrivate)
		b, _ := json.Marshal(map[string]string{"url": tt.url})
		rec := do(h, "POST", "/api/v1/webhooks", string(b), "X-Api-Key", "k3y")
		if tt.code == "" {
			if rec.Code != http.StatusCreated {
				t.Errorf("%s (allow private %v): got %d %s, want 201", tt.url, tt.allowPrivate, rec.Code, rec.Body)
			} else if f.hooks[0].URL != tt.stored {
				t.Errorf("%s: stored %q, want %q", tt.url, f.hooks[0].URL, tt.stored)
			}
			continue
		}
		if rec.Code != http.StatusBadRequest || errCode(t, rec) != tt.code {
			t.Errorf("%s (allow private %v): got %d %s, want 400 %s", tt.url, tt.allowPrivate, rec.Code, rec.Body, tt.code)
		}
	}
}

// TestWebhookEventsRefused names the field of a bad events list.
func TestWebhookEventsRefused(t *testing.T) {
	h := newWebhookHandler(&fakeWebhooks{limit: 10}, false)
	for _, body := range []string{
		`{"url":"https://hooks.example.com/in","events":[]}`,
		`{"url":"https://hooks.example.com/in","events":["link.visited"]}`,
		`{"url":"https://hooks.example.com/in","events":["LINK.CREATED"]}`,
	} {
		rec := do(h, "POST", "/api/v1/webhooks", body, "X-Api-Key", "k3y")
		var b errorBody
		json.Unmarshal(rec.Body.Bytes(), &b) //nolint:errcheck // checked below
		if rec.Code != http.StatusBadRequest || b.Error.Code != CodeInvalidRequest || b.Error.Field != "events" {
			t.Errorf("%s: got %d %s, want 400 invalid_request on events", body, rec.Code, rec.Body)
		}
	}
	if rec := do(h, "POST", "/api/v1/webhooks", `{"url":"https://hooks.example.com/in","secret":"mine"}`, "X-Api-Key", "k3y"); rec.Code != http.StatusBadRequest || errCode(t, rec) != CodeInvalidJSON {
		t.Errorf("an unknown field: got %d %s, want 400 invalid_json", rec.Code, rec.Body)
	}
}

// TestLinkViewIsTheAPIs shows a link in an event as the API shows it.
func TestLinkViewIsTheAPIs(t *testing.T) {
	f := newFakeLinks()
	h := newTestHandler(f)
	l := shortener.Link{ID: 7, Code: "launch", URL: "https://example.com/", Redirect: 307, CreatedAt: now, Owner: HashKey("k3y"),
		Tags: []string{"a"}, MaxVisits: 3, PasswordHash: "(set)", ExpiresAt: now.Add(time.Hour)}
	f.links[l.Code] = l
	rec := do(h, "GET", "/api/v1/links/launch", "", "X-Api-Key", "k3y")
	if rec.Code != http.StatusOK {
		t.Fatalf("show: %d %s", rec.Code, rec.Body)
	}
	got, err := json.Marshal(LinkView("http://sho.rt")(l))
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != rec.Body.String() {
		t.Errorf("LinkView: got %s, want the API's %s", got, rec.Body)
	}
}
