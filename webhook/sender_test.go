package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener"
	"shortener/internal/poll"
)

// fakeStore keeps deliveries in memory with the store's claim rules: a
// claim takes due rows for hold, and only the claim's holder settles.
type fakeStore struct {
	mu      sync.Mutex
	rows    map[int64]*fakeRow
	retries []fakeRetry
	next    int64
}

type fakeRow struct {
	d       shortener.Delivery
	due     time.Time
	created time.Time
}

type fakeRetry struct {
	id     int64
	wait   time.Duration
	reason string
}

var _ Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore { return &fakeStore{rows: map[int64]*fakeRow{}} }

// add records an event for a webhook at url, created age ago.
func (f *fakeStore) add(url, secret string, e shortener.Event, age time.Duration) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.rows[f.next] = &fakeRow{d: shortener.Delivery{ID: f.next, Webhook: "wh_1", URL: url, Secret: secret, Event: e},
		due: time.Now(), created: time.Now().Add(-age)}
	return f.next
}

func (f *fakeStore) ClaimDeliveries(ctx context.Context, n int, hold time.Duration) ([]shortener.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil { // as MySQL's: a cancelled claim claims nothing
		return nil, err
	}
	now := time.Now()
	claim := strconv.FormatInt(now.UnixNano(), 36)
	var out []shortener.Delivery
	for id := int64(1); id <= f.next && len(out) < n; id++ {
		r, ok := f.rows[id]
		if !ok || r.due.After(now) {
			continue
		}
		r.d.Attempts++
		r.d.Claim, r.d.Age, r.due = claim, now.Sub(r.created), now.Add(hold)
		out = append(out, r.d)
	}
	return out, nil
}

func (f *fakeStore) FinishDelivery(_ context.Context, d shortener.Delivery) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.rows[d.ID]; ok && r.d.Claim == d.Claim {
		delete(f.rows, d.ID)
	}
	return nil
}

func (f *fakeStore) RetryDelivery(_ context.Context, d shortener.Delivery, wait time.Duration, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.rows[d.ID]; ok && r.d.Claim == d.Claim {
		r.d.Claim, r.due = "", time.Now().Add(wait)
		f.retries = append(f.retries, fakeRetry{d.ID, wait, reason})
	}
	return nil
}

func (f *fakeStore) PendingDeliveries(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.rows)), nil
}

func (f *fakeStore) pending() int {
	n, _ := f.PendingDeliveries(context.Background())
	return int(n)
}

func (f *fakeStore) retried() []fakeRetry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRetry(nil), f.retries...)
}

// testConfig is a sender's configuration for tests: receivers on
// 127.0.0.1, a quick poll.
func testConfig() Config {
	return Config{Workers: 4, Timeout: 5 * time.Second, Poll: 5 * time.Millisecond, RetryMin: time.Hour, RetryMax: time.Hour,
		MaxAge: 24 * time.Hour, AllowPrivate: true}
}

// startSender runs a sender over st until the test ends.
func startSender(tb testing.TB, cfg Config, st Store) *Sender {
	tb.Helper()
	s, err := New(cfg, st, func(l shortener.Link) any { return map[string]string{"code": l.Code} }, time.Now,
		slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
	return s
}

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestSenderDelivers sends one event of each kind: signed as the
// headers say, the body the event, and each delivery settled once
// answered.
func TestSenderDelivers(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
	}
	var (
		mu   sync.Mutex
		seen []got
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, got{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	st := newFakeStore()
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	st.add(srv.URL, testSecret, shortener.Event{ID: "evt_1", Type: shortener.EventLinkCreated, At: at, Link: shortener.Link{Code: "abc"}}, 0)
	st.add(srv.URL, testSecret, shortener.Event{ID: "evt_2", Type: shortener.EventLinkClicked, At: at,
		Clicks: shortener.LinkClicks{Code: "abc", Clicks: 7, From: at.Add(-time.Second), To: at}}, 0)
	s := startSender(t, testConfig(), st)
	poll.Until(t, "both delivered", func() error {
		if n := st.pending(); n > 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("the receiver got %d requests, want 2", len(seen))
	}
	want := map[string]string{
		"evt_1": `{"id":"evt_1","type":"link.created","timestamp":"2026-12-05T12:00:00Z","data":{"code":"abc"}}`,
		"evt_2": `{"id":"evt_2","type":"link.clicked","timestamp":"2026-12-05T12:00:00Z","data":{"code":"abc","clicks":7,"period":{"from":"2026-12-05T11:59:59Z","to":"2026-12-05T12:00:00Z"}}}`,
	}
	for _, g := range seen {
		id := g.header.Get("Webhook-Id")
		if string(g.body) != want[id] {
			t.Errorf("%s: body %s, want %s", id, g.body, want[id])
		}
		sig, err := Sign(testSecret, id, g.header.Get("Webhook-Timestamp"), g.body)
		if err != nil || g.header.Get("Webhook-Signature") != sig {
			t.Errorf("%s: signature %q, want %q", id, g.header.Get("Webhook-Signature"), sig)
		}
		ts, err := strconv.ParseInt(g.header.Get("Webhook-Timestamp"), 10, 64)
		if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			t.Errorf("%s: timestamp %q, want now", id, g.header.Get("Webhook-Timestamp"))
		}
		if ct := g.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", id, ct)
		}
	}
	if n := testutil.ToFloat64(s.m.delivered); n != 2 {
		t.Errorf("delivered: %g, want 2", n)
	}
	if n := testutil.CollectAndCount(s.m.attempt); n != 1 {
		t.Errorf("attempt histogram: %d series", n)
	}
}

// TestSenderRetries answers 500, then 307, then hangs past the timeout,
// then refuses the connection: each attempt fails, is counted by its
// reason and is made due again after the backoff.
func TestSenderRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			http.Redirect(w, r, "https://example.com/", http.StatusTemporaryRedirect)
		default:
			io.Copy(io.Discard, r.Body) //nolint:errcheck // read, so the server notices the client leave
			<-r.Context().Done()        // hung: the attempt times out
		}
	}))
	defer srv.Close()
	cfg := testConfig()
	cfg.Timeout, cfg.RetryMin, cfg.RetryMax = 200*time.Millisecond, time.Millisecond, time.Millisecond
	st := newFakeStore()
	id := st.add(srv.URL, testSecret, shortener.Event{ID: "evt_1", Type: shortener.EventLinkDeleted}, 0)
	s := startSender(t, cfg, st)
	poll.Until(t, "three failed attempts", func() error {
		if n := len(st.retried()); n < 3 {
			return fmt.Errorf("%d retries", n)
		}
		return nil
	})
	srv.Close() // now the connection is refused
	poll.Until(t, "an attempt refused", func() error {
		if n := testutil.ToFloat64(s.m.failed.WithLabelValues(reasonError)); n < 1 {
			return fmt.Errorf("%g failed connections", n)
		}
		return nil
	})
	for i, r := range st.retried()[:4] {
		if r.id != id || r.wait < cfg.RetryMin/2 || r.wait > cfg.RetryMin || r.reason == "" {
			t.Errorf("retry %d: %+v, want delivery %d again after %s at most, with its reason", i+1, r, id, cfg.RetryMin)
		}
	}
	for _, reason := range []string{reasonStatus, reasonTimeout} {
		if n := testutil.ToFloat64(s.m.failed.WithLabelValues(reason)); n < 1 {
			t.Errorf("failed attempts for %s: %g, want at least 1", reason, n)
		}
	}
	if n := testutil.ToFloat64(s.m.failed.WithLabelValues(reasonStatus)); n != 2 {
		t.Errorf("failed attempts for status (500, 307): %g, want 2", n)
	}
	if n := testutil.ToFloat64(s.m.delivered); n != 0 {
		t.Errorf("delivered: %g, want 0", n)
	}
}

// TestSenderGivesUp fails a delivery whose event is older than MaxAge
// allows another wait for: given up, removed, counted.
func TestSenderGivesUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer srv.Close()
	cfg := testConfig()
	cfg.RetryMin, cfg.RetryMax = time.Hour, time.Hour
	st := newFakeStore()
	st.add(srv.URL, testSecret, shortener.Event{ID: "evt_old", Type: shortener.EventLinkUpdated}, 23*time.Hour+30*time.Minute)
	s := startSender(t, cfg, st)
	poll.Until(t, "the old delivery given up", func() error {
		if n := st.pending(); n > 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	if n := testutil.ToFloat64(s.m.givenUp); n != 1 {
		t.Errorf("given up: %g, want 1", n)
	}
	if r := st.retried(); len(r) != 0 {
		t.Errorf("retries: %+v, want none", r)
	}
}

// TestSenderBoundsConcurrency gives a sender of 3 workers 12 deliveries
// to a receiver that holds each request: never more than 3 in flight,
// and each delivered once, by one attempt.
func TestSenderBoundsConcurrency(t *testing.T) {
	var (
		inFlight, most atomic.Int32
		mu             sync.Mutex
		ids            = map[string]int{}
	)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		ids[r.Header.Get("Webhook-Id")]++
		mu.Unlock()
		<-release
	}))
	defer srv.Close()
	cfg := testConfig()
	cfg.Workers = 3
	st := newFakeStore()
	for i := range 12 {
		st.add(srv.URL, testSecret, shortener.Event{ID: fmt.Sprintf("evt_%d", i), Type: shortener.EventLinkCreated}, 0)
	}
	startSender(t, cfg, st)
	poll.Until(t, "3 requests in flight", func() error {
		if n := inFlight.Load(); n != 3 {
			return fmt.Errorf("%d in flight", n)
		}
		return nil
	})
	close(release)
	poll.Until(t, "every delivery made", func() error {
		if n := st.pending(); n > 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	if m := most.Load(); m > 3 {
		t.Errorf("%d requests were in flight at once, want at most 3", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 12 {
		if n := ids[fmt.Sprintf("evt_%d", i)]; n != 1 {
			t.Errorf("evt_%d delivered %d times, want once", i, n)
		}
	}
}

// TestSenderStopReleases stops a sender with an attempt in flight: the
// attempt is cancelled and its delivery is due again at once, for the
// next sender, not left claimed.
func TestSenderStopReleases(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // read, so the server notices the client leave
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	st := newFakeStore()
	id := st.add(srv.URL, testSecret, shortener.Event{ID: "evt_1", Type: shortener.EventLinkCreated}, 0)
	s, err := New(testConfig(), st, func(shortener.Link) any { return nil }, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-arrived
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r := st.retried()
	if len(r) != 1 || r[0].id != id || r[0].wait != 0 || !strings.Contains(r[0].reason, "stopped") {
		t.Errorf("retries: %+v, want delivery %d due again at once", r, id)
	}
	if n := testutil.ToFloat64(s.m.failed.WithLabelValues(reasonError)) + testutil.ToFloat64(s.m.failed.WithLabelValues(reasonTimeout)); n != 0 {
		t.Errorf("a stop counted as %g failed attempts, want none", n)
	}
}

// TestConfigValidate names every bad setting.
func TestConfigValidate(t *testing.T) {
	err := Config{RetryMin: time.Minute, RetryMax: time.Second}.Validate()
	for _, field := range []string{"Workers", "Timeout", "Poll", "MaxAge", "RetryMax"} {
		if err == nil || !strings.Contains(err.Error(), field+" ") {
			t.Errorf("got %v, want %s named", err, field)
		}
	}
	if err := testConfig().Validate(); err != nil {
		t.Errorf("the test configuration: %v", err)
	}
}

// TestEncodeLinkEvent renders a link event's data with the view given.
func TestEncodeLinkEvent(t *testing.T) {
	b, err := encode(shortener.Event{ID: "evt_9", Type: shortener.EventLinkUpdated, At: time.Unix(0, 0),
		Link: shortener.Link{Code: "x1", URL: "https://example.com/"}}, func(l shortener.Link) any { return map[string]string{"url": l.URL} })
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || got["type"] != "link.updated" || got["data"].(map[string]any)["url"] != "https://example.com/" {
		t.Errorf("got %s (%v)", b, err)
	}
	if _, err := encode(shortener.Event{ID: "evt_9", Type: "link.visited"}, nil); err == nil {
		t.Error("an unknown type encodes")
	}
}
