package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// loadLimit bounds every load: it stops by itself even if a test forgets
// to, or fails before it can.
const loadLimit = 3 * time.Minute

// newClient talks to nginx the way browsers and API clients do, except
// that it reports redirects instead of following them, so every answer can
// be checked.
func newClient() *http.Client {
	return &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64},
	}
}

// created is a link a test created through nginx.
type created struct {
	code, url, servedBy string
}

// outcome is what one request of a load did.
type outcome struct {
	servedBy string   // X-Served-By of the answer
	created  *created // the link, for a create
	err      error    // why the request failed, nil if it did not
}

// load runs one kind of request from several goroutines until finish or
// loadLimit, and records every latency, failure and serving app.
type load struct {
	mu       sync.Mutex
	lat      []time.Duration
	failures []string
	servedBy map[string]int
	created  []created
	stop     chan struct{}
	wg       sync.WaitGroup
}

// startLoad starts workers calling op, each at most once per every (0:
// back to back). Requests do not take a context that finish cancels: a
// request cut short by the test would count as a failure of the stack.
func startLoad(workers int, every time.Duration, op func(worker, i int) outcome) *load {
	l := &load{servedBy: map[string]int{}, stop: make(chan struct{})}
	deadline := time.Now().Add(loadLimit)
	for w := range workers {
		l.wg.Go(func() {
			var tick <-chan time.Time
			if every > 0 {
				t := time.NewTicker(every)
				defer t.Stop()
				tick = t.C
			}
			for i := 0; time.Now().Before(deadline); i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				if tick != nil {
					select {
					case <-l.stop:
						return
					case <-tick:
					}
				}
				begin := time.Now()
				o := op(w, i)
				took := time.Since(begin)
				l.mu.Lock()
				l.lat = append(l.lat, took)
				l.servedBy[o.servedBy]++
				if o.err != nil {
					l.failures = append(l.failures, o.err.Error())
				}
				if o.created != nil {
					l.created = append(l.created, *o.created)
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// count returns how many requests have completed.
func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lat)
}

// served returns how many answers app has served so far.
func (l *load) served(app string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.servedBy[app]
}

// result is what a finished load measured.
type result struct {
	requests int
	failures []string
	servedBy map[string]int
	created  []created
	p50, p99 time.Duration
	max      time.Duration
}

// finish stops the load, waits for its last requests and returns its
// figures.
func (l *load) finish() result {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	lat := slices.Clone(l.lat)
	slices.Sort(lat)
	r := result{requests: len(lat), failures: l.failures, servedBy: l.servedBy, created: l.created}
	if len(lat) > 0 {
		r.p50, r.p99, r.max = pct(lat, .50), pct(lat, .99), lat[len(lat)-1]
	}
	return r
}

func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// check logs r's figures and fails the test if any request failed.
func (r result) check(tb testing.TB, what string) {
	tb.Helper()
	tb.Logf("%s: %d requests, %d failed; p50 %s p99 %s max %s; served by %v",
		what, r.requests, len(r.failures), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond),
		r.max.Round(time.Microsecond), r.servedBy)
	if r.requests == 0 {
		tb.Errorf("%s: no request completed", what)
	}
	if len(r.failures) > 0 {
		tb.Errorf("%s: %d of %d requests failed, want 0; first: %s", what, len(r.failures), r.requests,
			strings.Join(r.failures[:min(5, len(r.failures))], "; "))
	}
}

// resolveOp returns an op that follows a random one of links through
// base and checks the answer: 302 to the link's URL.
func resolveOp(c *http.Client, base string, links map[string]string) func(int, int) outcome {
	codes := make([]string, 0, len(links))
	for code := range links {
		codes = append(codes, code)
	}
	return func(int, int) outcome {
		code := codes[rand.IntN(len(codes))]
		resp, err := c.Get(base + "/" + code)
		if err != nil {
			return outcome{err: fmt.Errorf("GET /%s: %w", code, err)}
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		o := outcome{servedBy: resp.Header.Get("X-Served-By")}
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != links[code] {
			o.err = fmt.Errorf("GET /%s: %d Location %q (served by %q), want 302 %q", code, resp.StatusCode, loc, o.servedBy, links[code])
		}
		return o
	}
}

// createOp returns an op that creates a new link through base and checks
// the answer: 201 with the URL, a code and a short URL under base.
func createOp(c *http.Client, base, tag string) func(int, int) outcome {
	return func(worker, i int) outcome {
		u := fmt.Sprintf("https://example.com/%s/%d/%d?r=%d", tag, worker, i, rand.Uint64())
		body, _ := json.Marshal(map[string]string{"url": u})
		resp, err := c.Post(base+"/api/v1/links", "application/json", strings.NewReader(string(body)))
		if err != nil {
			return outcome{err: fmt.Errorf("POST %s: %w", u, err)}
		}
		defer resp.Body.Close()
		var got struct {
			Code     string `json:"code"`
			ShortURL string `json:"short_url"`
			URL      string `json:"url"`
		}
		b, _ := io.ReadAll(resp.Body)
		o := outcome{servedBy: resp.Header.Get("X-Served-By")}
		if err := json.Unmarshal(b, &got); resp.StatusCode != http.StatusCreated || err != nil ||
			got.URL != u || got.Code == "" || got.ShortURL != base+"/"+got.Code {
			o.err = fmt.Errorf("POST %s: %d %s (served by %q), want 201 with a short URL under %s", u, resp.StatusCode, b, o.servedBy, base)
			return o
		}
		o.created = &created{code: got.Code, url: u, servedBy: o.servedBy}
		return o
	}
}

// createLinks creates n links one by one through base and returns them.
func createLinks(tb testing.TB, c *http.Client, base string, n int) []created {
	tb.Helper()
	op := createOp(c, base, "setup")
	var links []created
	for i := range n {
		o := op(0, i)
		if o.err != nil {
			tb.Fatal(o.err)
		}
		links = append(links, *o.created)
	}
	return links
}

// byCode maps the links' codes to their URLs.
func byCode(links []created) map[string]string {
	m := make(map[string]string, len(links))
	for _, l := range links {
		m[l.code] = l.url
	}
	return m
}

// waitUntil polls cond until it holds, failing the test after limit.
func waitUntil(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up after %s waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// waitRequests waits until l has completed n more requests than now: the
// load has run through whatever the test just did to the stack.
func waitRequests(tb testing.TB, l *load, n int) {
	tb.Helper()
	want := l.count() + n
	waitUntil(tb, time.Minute, fmt.Sprintf("%d more requests", n), func() bool { return l.count() >= want })
}
