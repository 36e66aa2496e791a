package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/internal/chaos"
	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/internal/topology"
	"shortener/webhook"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// appTimeout is the apps' webhook timeout in these tests.
const appTimeout = 2 * time.Second

// receiver is a webhook receiver on a fixed 127.0.0.1 port that can go
// down (its listener closed: connections refused) and come back. It
// checks each request's signature and records every copy of every
// event, in the order they arrive.
type receiver struct {
	tb     testing.TB
	addr   string
	secret string

	mu       sync.Mutex
	srv      *http.Server
	copies   []eventCopy
	inFlight map[string]int  // copies of an event being answered now
	overlaps []string        // events a copy of which arrived while another was in flight
	bad      []string        // requests whose signature or body was wrong
	hold     map[string]bool // codes whose first link.created copy is held until its sender gives up
	holdAll  bool            // every copy is held so, unanswered
}

// eventCopy is one request the receiver got.
type eventCopy struct {
	ID, Type, Code string
	Clicks         int64
	// Clean is a copy answered 2xx in time: its sender knows it was
	// delivered, so no copy may follow it.
	Clean bool
}

// event is a delivery's body, as far as the receiver reads it.
type event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		Code     string `json:"code"`
		ShortURL string `json:"short_url"`
		Clicks   int64  `json:"clicks"`
	} `json:"data"`
}

func newReceiver(tb testing.TB) *receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &receiver{tb: tb, addr: ln.Addr().String(), inFlight: map[string]int{}, hold: map[string]bool{}}
	r.serve(ln)
	tb.Cleanup(r.down)
	return r
}

// up listens again on the receiver's port.
func (r *receiver) up() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.tb.Fatalf("receiver back on %s: %v", r.addr, err)
	}
	r.serve(ln)
}

func (r *receiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go srv.Serve(ln) //nolint:errcheck // ErrServerClosed once down
}

// down closes the listener and every connection: the apps' attempts are
// refused until up.
func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	srv.Close()
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	id := req.Header.Get(webhook.HeaderID)
	var e event
	if err == nil {
		err = json.Unmarshal(body, &e)
	}
	r.mu.Lock()
	sig, serr := webhook.Sign(r.secret, id, req.Header.Get(webhook.HeaderTimestamp), body)
	if err != nil || serr != nil || sig != req.Header.Get(webhook.HeaderSignature) || e.ID != id {
		r.bad = append(r.bad, fmt.Sprintf("%s: signature %q, body %s (%v)", id, req.Header.Get(webhook.HeaderSignature), body, err))
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.inFlight[id] > 0 {
		r.overlaps = append(r.overlaps, id)
	}
	r.inFlight[id]++
	held := r.holdAll || e.Type == "link.created" && r.hold[e.Data.Code]
	delete(r.hold, e.Data.Code)
	r.mu.Unlock()

	clean := !held
	if held {
		<-req.Context().Done() // until the sender gives up the attempt or dies
	} else {
		// A moment in flight, so that a second sender of the same
		// delivery at once would show as an overlap.
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}
	r.mu.Lock()
	r.inFlight[id]--
	r.copies = append(r.copies, eventCopy{ID: id, Type: e.Type, Code: e.Data.Code, Clicks: e.Data.Clicks, Clean: clean})
	r.mu.Unlock()
}

// holding says how many copies are being held now.
func (r *receiver) holding() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.inFlight {
		n += k
	}
	return n
}

// snapshot returns what the receiver got so far.
func (r *receiver) snapshot() (copies []eventCopy, overlaps, bad []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]eventCopy(nil), r.copies...), append([]string(nil), r.overlaps...), append([]string(nil), r.bad...)
}

// ledger is what the test did, and so the events owed.
type ledger struct {
	created, deleted map[string]bool
	updated, clicks  map[string]int
}

// missing compares copies with l: what is not (yet) delivered, "" when
// everything is. An event is delivered once a copy of it was answered
// in time, and counted once, by its ID, however many copies came.
func (l ledger) missing(copies []eventCopy) string {
	seen := map[string]bool{}
	created, deleted := map[string]int{}, map[string]int{}
	updated, clicks := map[string]int{}, map[string]int{}
	for _, c := range copies {
		if seen[c.ID] || !c.Clean {
			continue
		}
		seen[c.ID] = true
		switch c.Type {
		case "link.created":
			created[c.Code]++
		case "link.updated":
			updated[c.Code]++
		case "link.deleted":
			deleted[c.Code]++
		case "link.clicked":
			clicks[c.Code] += int(c.Clicks)
		}
	}
	var miss []string
	for code := range l.created {
		if created[code] != 1 {
			miss = append(miss, fmt.Sprintf("%s created %d times", code, created[code]))
		}
	}
	for code := range l.deleted {
		if deleted[code] != 1 {
			miss = append(miss, fmt.Sprintf("%s deleted %d times", code, deleted[code]))
		}
	}
	for code, n := range l.updated {
		if updated[code] != n {
			miss = append(miss, fmt.Sprintf("%s updated %d of %d times", code, updated[code], n))
		}
	}
	// link.clicked: the clicks in the events of each link add up to
	// the redirects received, every one counted once.
	for code, n := range l.clicks {
		if clicks[code] != n {
			miss = append(miss, fmt.Sprintf("%s clicked %d of %d times", code, clicks[code], n))
		}
	}
	if len(miss) > 5 {
		miss = append(miss[:5], fmt.Sprintf("and %d more", len(miss)-5))
	}
	return strings.Join(miss, "; ")
}

// client talks to the stack through nginx with its API key.
type client struct {
	tb   testing.TB
	base string
	key  string
	http *http.Client
	l    ledger
	n    int
}

func (c *client) do(method, path, body string) (int, []byte) {
	c.tb.Helper()
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", c.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// changes creates n links, edits each, clicks each, and deletes every
// third: the events of each kind.
func (c *client) changes(n int) {
	c.tb.Helper()
	for range n {
		c.n++
		status, body := c.do("POST", "/api/v1/links", fmt.Sprintf(`{"url":"https://example.com/hook/%d"}`, c.n))
		var l struct{ Code string }
		if json.Unmarshal(body, &l); status != http.StatusCreated {
			c.tb.Fatalf("create: %d %s", status, body)
		}
		c.l.created[l.Code] = true
		if status, body := c.do("PATCH", "/api/v1/links/"+l.Code, `{"tags":["hooked"]}`); status != http.StatusOK {
			c.tb.Fatalf("edit %s: %d %s", l.Code, status, body)
		}
		c.l.updated[l.Code]++
		for range 2 {
			if status, _ := c.do("GET", "/"+l.Code, ""); status != http.StatusFound {
				c.tb.Fatalf("follow %s: %d", l.Code, status)
			}
			c.l.clicks[l.Code]++
		}
		if c.n%3 == 0 {
			if status, body := c.do("DELETE", "/api/v1/links/"+l.Code, ""); status != http.StatusNoContent {
				c.tb.Fatalf("delete %s: %d %s", l.Code, status, body)
			}
			c.l.deleted[l.Code] = true
		}
	}
}

// failedAttempts is how many webhook attempts app has failed so far.
func failedAttempts(tb testing.TB, app *stack.Proc) float64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := chaos.Scrape(ctx, http.DefaultClient, "http://"+app.Addr())
	if err != nil {
		tb.Fatal(err)
	}
	return m.Sum("shortener_webhook_failed_attempts_total")
}

// TestWebhooksThroughOutage runs the scenario issue 31 asks of webhooks
// on a whole stack (two apps behind nginx): links made, edited, clicked
// and deleted while the receiver answers; then the receiver down for
// 30 s while more changes are made and each app is killed (SIGKILL) with
// deliveries owed, and started again; then back. Every event arrives,
// signed; a copy of an event never arrives while another is being
// answered (no two attempts of a delivery at once), nor after a copy was
// answered in time (a duplicate follows only an attempt that failed or
// timed out: shown with a copy held past the apps' timeout). Nothing is
// asserted of how long any of it takes.
func TestWebhooksThroughOutage(t *testing.T) {
	stacktest.RequirePrograms(t)
	bin := stacktest.AppBinary(t)
	s := stacktest.StartWith(t, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		cfg := topology.Config(dir, bin, false, true, log)
		cfg.AppEnv = append(cfg.AppEnv,
			"SHORTENER_WEBHOOKS_ALLOW_PRIVATE=true", // the receiver is on 127.0.0.1
			"SHORTENER_WEBHOOKS_TIMEOUT="+appTimeout.String(),
			"SHORTENER_WEBHOOKS_RETRY_MIN=500ms",
			"SHORTENER_WEBHOOKS_RETRY_MAX=4s",
			"SHORTENER_WEBHOOKS_POLL=100ms",
		)
		return topology.Start(ctx, cfg)
	})
	key, err := os.ReadFile(filepath.Join(s.Dir(), topology.APIKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t)
	c := &client{tb: t, base: s.BaseURL(), key: strings.TrimSpace(string(key)), http: &http.Client{
		Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		l: ledger{created: map[string]bool{}, deleted: map[string]bool{}, updated: map[string]int{}, clicks: map[string]int{}}}

	status, body := c.do("POST", "/api/v1/webhooks", fmt.Sprintf(`{"url":"http://%s/in"}`, rcv.addr))
	var hook struct{ ID, Secret string }
	if err := json.Unmarshal(body, &hook); status != http.StatusCreated || err != nil || hook.Secret == "" {
		t.Fatalf("create the webhook: %d %s", status, body)
	}
	rcv.mu.Lock()
	rcv.secret = hook.Secret
	rcv.mu.Unlock()

	everything := func(what string) {
		t.Helper()
		poll.Until(t, what, func() error {
			copies, _, _ := rcv.snapshot()
			if m := c.l.missing(copies); m != "" {
				return errors.New(m)
			}
			return nil
		})
	}

	c.changes(6)
	everything("the events made while the receiver answers")

	// Every app killed (SIGKILL) in the middle of an attempt: the
	// receiver holds the requests unanswered until their senders die,
	// whose claims then run out in MySQL.
	apps := s.Apps()
	rcv.mu.Lock()
	rcv.holdAll = true
	rcv.mu.Unlock()
	c.changes(3)
	poll.Until(t, "an attempt in flight", func() error {
		if rcv.holding() == 0 {
			return errors.New("none")
		}
		return nil
	})
	for _, app := range apps {
		if err := app.Kill(); err != nil {
			t.Fatal(err)
		}
	}

	// The receiver down (its listener closed) for 30 s, the time a
	// receiver's restart may take; meanwhile more changes, and each app
	// started again, then killed while it has deliveries owed and
	// started again.
	start := time.Now()
	rcv.down()
	rcv.mu.Lock()
	rcv.holdAll = false
	rcv.mu.Unlock()
	for _, app := range apps {
		if err := app.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c.changes(6)
	for _, app := range apps {
		poll.Until(t, app.Name+" failing attempts", func() error {
			if n := failedAttempts(t, app); n == 0 {
				return errors.New("none failed yet")
			}
			return nil
		})
		if err := app.Kill(); err != nil {
			t.Fatal(err)
		}
		c.changes(3) // through the other app
		if err := app.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c.changes(3)
	// The rest of the 30 s: retries back off meanwhile.
	time.Sleep(30*time.Second - time.Since(start))
	rcv.up()
	everything("every event, once the receiver is back")

	// A copy answered too late (held past the apps' timeout) is an
	// attempt that timed out: its event comes again, with its ID.
	const heldCode = "held-once"
	rcv.mu.Lock()
	rcv.hold[heldCode] = true
	rcv.mu.Unlock()
	if status, body := c.do("POST", "/api/v1/links", `{"url":"https://example.com/held","alias":"`+heldCode+`"}`); status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", heldCode, status, body)
	}
	c.l.created[heldCode] = true
	everything("the held event, again")

	copies, overlaps, bad := rcv.snapshot()
	if len(bad) > 0 {
		t.Errorf("%d requests badly signed or formed, first: %s", len(bad), bad[0])
	}
	if len(overlaps) > 0 {
		t.Errorf("copies of %d events arrived while another copy was in flight: %v", len(overlaps), overlaps)
	}
	byID := map[string][]eventCopy{}
	for _, cp := range copies {
		byID[cp.ID] = append(byID[cp.ID], cp)
	}
	dups := 0
	for id, cs := range byID {
		dups += len(cs) - 1
		for i, cp := range cs[:len(cs)-1] {
			if cp.Clean {
				t.Errorf("event %s (%s %s) came again after copy %d was answered in time", id, cp.Type, cp.Code, i+1)
			}
		}
	}
	if hs := byID[heldID(copies, heldCode)]; len(hs) < 2 || hs[0].Clean {
		t.Errorf("the held event: %+v, want a late copy, then another", hs)
	}
	t.Logf("%d events, %d copies (%d duplicates, each after a failed or late attempt); receiver down %s",
		len(byID), len(copies), dups, 30*time.Second)
}

// heldID is the ID of code's created event.
func heldID(copies []eventCopy, code string) string {
	for _, c := range copies {
		if c.Type == "link.created" && c.Code == code {
			return c.ID
		}
	}
	return ""
}
