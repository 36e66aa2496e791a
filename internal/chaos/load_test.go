package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/internal/poll"
)

// testLinks are the links the fake servers redirect.
var testLinks = []Link{{"a", "https://x/a"}, {"b", "https://x/b"}, {"c", "https://x/c"}}

func testLoad(base string) LoadConfig {
	return LoadConfig{
		BaseURL: base, Traffic: Traffic{Rate: 200, Zipf: 1.1, Timeout: 2 * time.Second, MaxInFlight: 50, CreateAttempts: 3},
		Links: testLinks, Prefix: "test", Seed: 1,
	}
}

// redirector answers GET /{code} like the shortener.
func redirector(w http.ResponseWriter, r *http.Request) {
	code := strings.TrimPrefix(r.URL.Path, "/")
	for _, l := range testLinks {
		if l.Code == code {
			w.Header().Set("Location", l.URL)
			w.WriteHeader(http.StatusFound)
			return
		}
	}
	w.WriteHeader(http.StatusNotFound)
}

// stop stops l, within poll's patience: the bound only turns a hang into
// a failure.
func stop(tb testing.TB, l *Load) []Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), poll.Patience)
	defer cancel()
	res, err := l.Stop(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// completed is how many results l holds so far.
func completed(l *Load) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, block := range l.results {
		n += len(block)
	}
	return n
}

func countDropped(l *Load) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, block := range l.results {
		for _, r := range block {
			if r.Dropped {
				n++
			}
		}
	}
	return n
}

// TestStallIsLatencyNotFewerRequests: the server answers nothing for a
// while. In the open model, requests keep falling due; those beyond the
// in-flight bound are counted as unknown, and those that waited have the
// stall in their latency, timed from when they were due, not from when
// they were sent.
func TestStallIsLatencyNotFewerRequests(t *testing.T) {
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		redirector(w, r)
	}))
	defer srv.Close()
	cfg := testLoad(srv.URL)
	cfg.MaxInFlight = 4
	l, err := StartLoad(context.Background(), cfg, NewClient(cfg.MaxInFlight))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "requests to be dropped at the in-flight bound", func() error {
		if n := countDropped(l); n < 5 {
			return fmt.Errorf("%d dropped", n)
		}
		return nil
	})
	opened := time.Since(l.Start())
	close(gate)
	results := stop(t, l)

	var c tally
	for i, r := range results {
		if r.Seq != i {
			t.Fatalf("result %d has seq %d: a due request is missing", i, r.Seq)
		}
		c.add(r)
		switch {
		case r.Dropped:
			if r.Outcome != Unknown {
				t.Errorf("dropped request %d: outcome %v, want unknown", i, r.Outcome)
			}
		case r.Intended < opened:
			// It waited for the gate: at least from when it was due until
			// the gate opened.
			if r.Outcome != OK || r.Latency < opened-r.Intended {
				t.Errorf("request %d due at %v, gate opened at %v: outcome %v latency %v, want ok and >= %v",
					i, r.Intended, opened, r.Outcome, r.Latency, opened-r.Intended)
			}
		}
	}
	if c.Dropped < 5 || c.Sent != len(results) || c.Sent != c.Succeeded+c.Failed+c.Unknown {
		t.Errorf("counts %+v over %d results: want >= 5 dropped and every result counted once", c, len(results))
	}
	// The first request was due at once and waited for the whole stall.
	if results[0].Latency < opened {
		t.Errorf("first request latency %v, want >= the stall %v", results[0].Latency, opened)
	}
}

// TestCreateRetriesWithTheSameKey: the first POST of every create gets
// 503; the retry carries the same Idempotency-Key and is acknowledged. A
// create without a key (every other one) is retried too, as a new POST
// without one.
func TestCreateRetriesWithTheSameKey(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{} // POSTs by key, or by URL for those without
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ URL string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", 400)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		id := cmp.Or(key, "url:"+body.URL)
		mu.Lock()
		seen[id]++
		n := seen[id]
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if key != "" {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"code": "k" + id, "url": body.URL})
	}))
	defer srv.Close()
	cfg := testLoad(srv.URL)
	cfg.CreateShare = 1
	// Every create holds a slot for its retry's pause, and a busy machine
	// stalls the pacer into bursts: a bound far above what either makes of
	// it, and a timeout no busy machine reaches, so what is checked is the
	// retry, not the machine. A create dropped at the bound anyway is the
	// in-flight test's business; it sends nothing, so it is left out.
	cfg.Rate, cfg.MaxInFlight, cfg.Timeout = 50, 10_000, poll.Patience
	l, err := StartLoad(context.Background(), cfg, NewClient(cfg.MaxInFlight))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "ten creates", func() error {
		if n := completed(l) - countDropped(l); n < 10 {
			return fmt.Errorf("%d completed", n)
		}
		return nil
	})
	results := slices.DeleteFunc(stop(t, l), func(r Result) bool { return r.Dropped })
	keys := map[string]bool{}
	unkeyed := 0
	for _, r := range results {
		id := cmp.Or(r.Key, "url:"+r.URL)
		if r.Kind != Create || r.Outcome != OK || r.Attempts != 2 || r.Replayed != (r.Key != "") || r.Code != "k"+id {
			t.Errorf("create %d (key %q): kind %v outcome %v attempts %d replayed %v code %q (%s); want an acknowledged create after 2 POSTs",
				r.Seq, r.Key, r.Kind, r.Outcome, r.Attempts, r.Replayed, r.Code, r.Err)
		}
		mu.Lock()
		if n := seen[id]; n != 2 {
			t.Errorf("create %s: %d POSTs, want 2", id, n)
		}
		mu.Unlock()
		if r.Key == "" {
			unkeyed++
			continue
		}
		if keys[r.Key] {
			t.Errorf("key %s used by two creates", r.Key)
		}
		keys[r.Key] = true
	}
	if unkeyed == 0 || len(keys) == 0 {
		t.Errorf("%d creates with a key, %d without: want both", len(keys), unkeyed)
	}
}

// TestOutcomes: a slow answer past the client timeout is unknown, a
// refused connection and a wrong Location are failures.
func TestOutcomes(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; the client gives up
	}))
	defer slow.Close()
	var res Result
	lookup(context.Background(), NewClient(1), slow.URL, "a", "https://x/a", 50*time.Millisecond, &res)
	if res.Outcome != Unknown {
		t.Errorf("timed-out redirect: outcome %v (%s), want unknown", res.Outcome, res.Err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	res = Result{}
	lookup(context.Background(), NewClient(1), closed, "a", "https://x/a", time.Second, &res)
	if res.Outcome != Failed {
		t.Errorf("refused redirect: outcome %v (%s), want failed", res.Outcome, res.Err)
	}

	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://elsewhere/")
		w.WriteHeader(http.StatusFound)
	}))
	defer wrong.Close()
	res = Result{}
	lookup(context.Background(), NewClient(1), wrong.URL, "a", "https://x/a", time.Second, &res)
	if res.Outcome != Failed || !res.WrongLocation {
		t.Errorf("wrong Location: outcome %v wrong %v, want failed and marked", res.Outcome, res.WrongLocation)
	}

	res = Result{}
	lookup(context.Background(), NewClient(1), wrong.URL, "zz", "", time.Second, &res)
	if res.Outcome != Failed || res.Status != 302 {
		t.Errorf("miss answered 302: outcome %v status %d, want failed", res.Outcome, res.Status)
	}
}

// TestPaceKeepsTheRate: over a second the load sends what the rate says,
// of the kinds in the shares asked for.
func TestPaceKeepsTheRate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{}`)
			return
		}
		redirector(w, r)
	}))
	defer srv.Close()
	cfg := testLoad(srv.URL)
	cfg.Rate, cfg.CreateShare, cfg.MissShare = 500, 0.2, 0.2
	l, err := StartLoad(context.Background(), cfg, NewClient(cfg.MaxInFlight))
	if err != nil {
		t.Fatal(err)
	}
	// Not a second of wall clock: on a busy machine the pacer may not yet
	// have dispatched the last requests due in it, which Stop would drop.
	poll.Until(t, "the first second's requests", func() error {
		if n := completed(l) + len(l.slots); n < 500 {
			return fmt.Errorf("%d completed or in flight", n)
		}
		return nil
	})
	results := stop(t, l)
	inFirst := map[Kind]int{}
	for _, r := range results {
		if r.Intended < time.Second {
			inFirst[r.Kind]++
		}
	}
	total := inFirst[Redirect] + inFirst[Create] + inFirst[Miss]
	if total != 500 {
		t.Errorf("%d requests due in the first second, want 500", total)
	}
	// 100 expected of each minority kind; ±50 is many standard deviations.
	for _, k := range []Kind{Create, Miss} {
		if n := inFirst[k]; n < 50 || n > 150 {
			t.Errorf("%d %v requests of 500, want about 100", n, k)
		}
	}
}

func TestLoadConfigRejects(t *testing.T) {
	good := testLoad("http://127.0.0.1:1")
	for name, spoil := range map[string]func(*LoadConfig){
		"zero rate":          func(c *LoadConfig) { c.Rate = 0 },
		"zipf exponent 1":    func(c *LoadConfig) { c.Zipf = 1 },
		"shares above 1":     func(c *LoadConfig) { c.CreateShare, c.MissShare = 0.6, 0.6 },
		"one link":           func(c *LoadConfig) { c.Links = c.Links[:1] },
		"no in-flight bound": func(c *LoadConfig) { c.MaxInFlight = 0 },
	} {
		c := good
		spoil(&c)
		if _, err := StartLoad(context.Background(), c, nil); err == nil {
			t.Errorf("%s: StartLoad accepted it", name)
		}
	}
}
