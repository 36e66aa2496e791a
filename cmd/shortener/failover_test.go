package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/stack"
	"shortener/stack/stacktest"
)

// testAPIKey authorises management calls in tests.
const testAPIKey = "test-key"

// redisTimeout is the per-call Redis deadline the apps under test run with.
const redisTimeout = 50 * time.Millisecond

// syncBuffer collects an app's log lines for printing on failure.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// app is one shortener instance run in-process through run().
type app struct {
	base string
	logs *syncBuffer
	stop func() error // stops the instance (drain, release) and returns run's error
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startApp runs an instance against s with the given node ID and waits
// until it is ready. It stops when the test ends.
func startApp(tb testing.TB, s *stack.Stack, nodeID int, extraEnv ...string) *app {
	tb.Helper()
	return startAppClock(tb, s, nodeID, time.Now, extraEnv...)
}

// startAppClock is startApp with the clock the instance trusts for its IDs.
func startAppClock(tb testing.TB, s *stack.Stack, nodeID int, now func() time.Time, extraEnv ...string) *app {
	tb.Helper()
	a, err := launchApp(tb, s, nodeID, now, extraEnv...)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// launchApp starts an instance and waits until it is ready, or returns
// the error it exited with.
func launchApp(tb testing.TB, s *stack.Stack, nodeID int, now func() time.Time, extraEnv ...string) (*app, error) {
	tb.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(tb))
	env := map[string]string{
		"SHORTENER_ADDR":            addr,
		"SHORTENER_NODE_ID":         strconv.Itoa(nodeID),
		"SHORTENER_BASE_URL":        "http://" + addr,
		"SHORTENER_MYSQL_DSN":       s.MySQLDSN(),
		"SHORTENER_REDIS_MASTER":    s.MasterName(),
		"SHORTENER_REDIS_SENTINELS": strings.Join(s.SentinelAddrs(), ","),
		"SHORTENER_REDIS_TIMEOUT":   redisTimeout.String(),
		"SHORTENER_LOG_LEVEL":       "info",
		"SHORTENER_DRAIN_TIMEOUT":   "500ms",
		"SHORTENER_ADMIN_KEY":       testAPIKey, // deletes links created anonymously
		"SHORTENER_CREATE_RATE":     "0",        // tests create faster than a client may
	}
	for i := 0; i+1 < len(extraEnv); i += 2 {
		env[extraEnv[i]] = extraEnv[i+1]
	}
	a := &app{base: "http://" + addr, logs: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runWithClock(ctx, nil, func(k string) string { return env[k] }, a.logs, a.logs, now) }()
	var (
		once        sync.Once
		runErr      error
		exitedEarly bool // launchApp returned the error already
	)
	a.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	tb.Cleanup(func() {
		if err := a.stop(); err != nil && !exitedEarly {
			tb.Errorf("app %d: run: %v", nodeID, err)
		}
		if tb.Failed() {
			tb.Logf("app %d log (tail):\n%s", nodeID, tail(a.logs.String(), 40))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(a.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		select {
		case err := <-done:
			runErr, exitedEarly = err, true
			once.Do(func() {})
			return nil, fmt.Errorf("app %d exited before ready: %w", nodeID, err)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("app %d not ready after 60s: %v\n%s", nodeID, err, a.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// createLinks creates n links over HTTP and returns code -> URL.
func createLinks(tb testing.TB, a *app, n int) map[string]string {
	tb.Helper()
	links := map[string]string{}
	for i := range n {
		u := fmt.Sprintf("https://example.com/failover/%d?r=%d", i, rand.Int())
		resp, err := http.Post(a.base+"/api/v1/links", "application/json", strings.NewReader(`{"url":"`+u+`"}`))
		if err != nil {
			tb.Fatal(err)
		}
		var got struct{ Code, URL string }
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || err != nil || got.URL != u {
			tb.Fatalf("create %s: got %d %+v %v, want 201", u, resp.StatusCode, got, err)
		}
		links[got.Code] = u
	}
	return links
}

// load resolves links continuously from several goroutines and records
// every failure and every latency.
type load struct {
	mu        sync.Mutex
	latencies []time.Duration
	failures  []string
	seen      map[string]bool // codes requested
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

// noFollow is a client that reports redirects instead of following them.
var noFollow = &http.Client{
	Timeout:       5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
}

// startLoad starts workers resolving links against a. The loop stops at
// stopLoad or after limit, whichever comes first.
func startLoad(a *app, links map[string]string, workers int, limit time.Duration) *load {
	codes := make([]string, 0, len(links))
	for c := range links {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	l := &load{stop: cancel, seen: map[string]bool{}}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			// Popularity follows Zipf's law (s = 1.1), as link traffic does.
			zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(w), 42)), 1.1, 1, uint64(len(codes)-1))
			for ctx.Err() == nil {
				code := codes[zipf.Uint64()]
				start := time.Now()
				resp, err := noFollow.Get(a.base + "/" + code)
				took := time.Since(start)
				var fail string
				switch {
				case err != nil:
					fail = fmt.Sprintf("GET /%s: %v", code, err)
				case resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != links[code]:
					fail = fmt.Sprintf("GET /%s: %d Location %q, want 302 %q", code, resp.StatusCode, resp.Header.Get("Location"), links[code])
				}
				if resp != nil {
					resp.Body.Close()
				}
				l.mu.Lock()
				l.latencies = append(l.latencies, took)
				l.seen[code] = true
				if fail != "" {
					l.failures = append(l.failures, fail)
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// finish stops the load and returns the sorted latencies and failures.
func (l *load) finish() ([]time.Duration, []string) {
	l.stop()
	l.wg.Wait()
	slices.Sort(l.latencies)
	return l.latencies, l.failures
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// metric sums the samples of a metric on the app's /metrics whose labels
// include every given pair, e.g. metric(tb, a, "shortener_redis_lookups_total",
// "result", "hit").
func metric(tb testing.TB, a *app, name string, labels ...string) float64 {
	tb.Helper()
	resp, err := http.Get(a.base + "/metrics")
	if err != nil {
		tb.Fatalf("scrape metrics: %v", err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		series, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		n, lbl, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(lbl, labels[i]+`="`+labels[i+1]+`"`) {
				match = false
			}
		}
		if match {
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				tb.Fatalf("metric %s: %v", series, err)
			}
			sum += f
		}
	}
	return sum
}

// waitMetric polls until the metric reaches at least want.
func waitMetric(tb testing.TB, a *app, want float64, limit time.Duration, name string, labels ...string) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := metric(tb, a, name, labels...)
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s%v = %v after %s, want >= %v", name, labels, got, limit, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Metric names the tests read.
const (
	mLookups  = "shortener_lookups_total"
	mRedis    = "shortener_redis_lookups_total"
	mMySQL    = "shortener_mysql_queries_total"
	mBreaker  = "shortener_breaker_transitions_total"
	mPending  = "shortener_invalidations_pending"
	mSwitched = "shortener_sentinel_events_total"
	mFills    = "shortener_redis_fills_total"
)

// failover runs one master fault under load: inject breaks the master,
// heal (may be nil) runs once the sentinels have promoted a replica.
func failover(t *testing.T, inject func(*stack.Proc) error, heal func(*stack.Proc) error) (lat []time.Duration) {
	s := stacktest.Start(t)
	// A short L1 TTL keeps Redis busy, so the test sees it serve again.
	a := startApp(t, s, 1, "SHORTENER_L1_TTL", "200ms")
	links := createLinks(t, a, 200)

	l := startLoad(a, links, 8, 2*time.Minute)
	waitMetric(t, a, 300, 30*time.Second, mRedis, "result", "hit") // warm: Redis serves

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	faultAt := time.Now()
	lookups0, mysql0 := metric(t, a, mLookups), metric(t, a, mMySQL)
	if err := inject(master); err != nil {
		t.Fatal(err)
	}
	promoted, err := s.WaitMaster(ctx, master)
	if err != nil {
		t.Fatalf("no failover: %v", err)
	}
	promotedAt := time.Now()
	// The app heard the promotion from the sentinels.
	waitMetric(t, a, 1, 10*time.Second, mSwitched, "event", "switch_master")

	// Back on Redis: a new link's fill reaches the new master.
	for fills := metric(t, a, mFills, "result", "ok"); metric(t, a, mFills, "result", "ok") < fills+3; {
		if ctx.Err() != nil {
			t.Fatal("fills never reached the new master")
		}
		createLinks(t, a, 1)
	}
	backAt := time.Now()
	if heal != nil {
		if err := heal(master); err != nil {
			t.Fatal(err)
		}
		hits := metric(t, a, mRedis, "result", "hit")
		waitMetric(t, a, hits+200, 30*time.Second, mRedis, "result", "hit")
	}
	lookups, mysql := metric(t, a, mLookups)-lookups0, metric(t, a, mMySQL)-mysql0

	lat, failures := l.finish()
	t.Logf("%s -> %s: promoted %s after the fault, fills back on the new master %s after promotion; "+
		"%d lookups, p50 %s p99 %s max %s; from fault to recovery %.0f lookups, %.0f MySQL queries (%.2f%% answered without MySQL)",
		master.Name, promoted.Name, promotedAt.Sub(faultAt).Round(time.Millisecond), backAt.Sub(promotedAt).Round(time.Millisecond),
		len(lat), pct(lat, .5), pct(lat, .99), lat[len(lat)-1], lookups, mysql, 100*(1-mysql/lookups))
	if len(failures) > 0 {
		t.Fatalf("%d of %d lookups failed, want 0; first: %s", len(failures), len(lat), failures[0])
	}
	if share := 1 - mysql/lookups; share < 0.95 {
		t.Errorf("%.2f%% of lookups answered without MySQL through the outage, want at least 95%%", 100*share)
	}
	return lat
}

// TestMasterKilled SIGKILLs the Redis master under continuous lookups:
// none may fail, and lookups must return to Redis after the promotion.
func TestMasterKilled(t *testing.T) {
	failover(t, (*stack.Proc).Kill, nil)
}

// TestMasterFrozen SIGSTOPs the master for longer than the failover, then
// SIGCONTs it: none may fail, and no lookup may wait much longer than one
// Redis deadline.
func TestMasterFrozen(t *testing.T) {
	lat := failover(t, (*stack.Proc).Stop, (*stack.Proc).Cont)
	// The margin covers the MySQL fallback and a loaded machine; a lookup
	// that waited on the frozen socket would take seconds.
	if limit := redisTimeout + 250*time.Millisecond; lat[len(lat)-1] > limit {
		t.Errorf("slowest lookup took %s, want at most the Redis deadline %s plus margin (%s)", lat[len(lat)-1], redisTimeout, limit)
	}
}
