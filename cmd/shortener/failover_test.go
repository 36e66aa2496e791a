package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/internal/chaos"
	"shortener/internal/chaos/chaostest"
	"shortener/internal/poll"
)

// testAPIKey authorises management calls in tests.
const testAPIKey = "test-key"

// redisTimeout is the per-call Redis deadline the apps under test run with.
const redisTimeout = 50 * time.Millisecond

// The failover tests run scenarios of the chaos engine (package chaos)
// against one app run in-process, with the load sent to it directly: its
// every lookup path is in this binary, under the race detector.

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
func startApp(tb testing.TB, s servers, nodeID int, extraEnv ...string) *app {
	tb.Helper()
	return startAppClock(tb, s, nodeID, time.Now, extraEnv...)
}

// startAppClock is startApp with the clock the instance trusts for its IDs.
func startAppClock(tb testing.TB, s servers, nodeID int, now func() time.Time, extraEnv ...string) *app {
	tb.Helper()
	a, err := launchApp(tb, s, nodeID, now, extraEnv...)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// launchApp starts an instance and waits until it is ready, or returns
// the error it exited with.
func launchApp(tb testing.TB, s servers, nodeID int, now func() time.Time, extraEnv ...string) (*app, error) {
	tb.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(tb))
	env := map[string]string{
		"SHORTENER_ADDR":              addr,
		"SHORTENER_NODE_ID":           strconv.Itoa(nodeID),
		"SHORTENER_BASE_URL":          "http://" + addr,
		"SHORTENER_MYSQL_DSN":         s.MySQLDSN(),
		"SHORTENER_REDIS_MASTER":      s.MasterName(),
		"SHORTENER_REDIS_SENTINELS":   strings.Join(s.SentinelAddrs(), ","),
		"SHORTENER_REDIS_PASSWORD":    s.RedisPassword(),
		"SHORTENER_SENTINEL_PASSWORD": s.SentinelPassword(),
		"SHORTENER_REDIS_TIMEOUT":     redisTimeout.String(),
		"SHORTENER_LOG_LEVEL":         "info",
		"SHORTENER_DRAIN_TIMEOUT":     "500ms",
		"SHORTENER_ADMIN_KEY":         testAPIKey,   // deletes links created anonymously
		"SHORTENER_CLICKS_DIR":        tb.TempDir(), // one journal per instance
		"SHORTENER_CREATE_RATE":       "0",          // tests create faster than a client may
		"SHORTENER_CODE_KEY":          testCodeKey,
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
	// Ready, or exited: either ends the wait.
	poll.Until(tb, fmt.Sprintf("app %d ready", nodeID), func() error {
		select {
		case err := <-done:
			runErr, exitedEarly = err, true
			return nil
		default:
		}
		resp, err := http.Get(a.base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		return nil
	})
	if exitedEarly {
		once.Do(func() {})
		return nil, fmt.Errorf("app %d exited before ready: %w", nodeID, runErr)
	}
	return a, nil
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

// noFollow is a client that reports redirects instead of following them.
var noFollow = &http.Client{
	Timeout:       5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// metric sums the samples of a metric on the app's /metrics whose labels
// include every given pair, e.g. metric(tb, a, "shortener_redis_lookups_total",
// "result", "hit").
func metric(tb testing.TB, a *app, name string, labels ...string) float64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := chaos.Scrape(ctx, http.DefaultClient, a.base)
	if err != nil {
		tb.Fatal(err)
	}
	return m.Sum(name, labels...)
}

// chaosTarget is the load's target: app a, directly.
func chaosTarget(a *app) chaos.Target {
	return chaos.Target{BaseURL: a.base, Apps: []chaos.App{{Name: "app1", URL: a.base}}}
}

// chaosConfig is chaostest's short run at a quarter of its rate: the app
// runs in this test binary under the race detector, which slows it
// several times, and shares the machine with the load and the servers.
func chaosConfig(l1TTL time.Duration) chaos.Config {
	cfg := chaostest.Config()
	cfg.Rate, cfg.Links = 50, 100
	cfg.RedisTimeout, cfg.L1TTL = redisTimeout, l1TTL
	return cfg
}

// TestMasterFrozen SIGSTOPs the master for longer than the failover, then
// SIGCONTs it (chaos scenario freeze-master): no lookup or create may
// fail or go unanswered, none may be lost, and at least 95% of the
// fault's lookups are answered without MySQL. How long the slowest lookup
// took, against one Redis deadline, is reported, not asserted: a busy
// machine stalls for longer than that.
func TestMasterFrozen(t *testing.T) {
	s := ownServers(t)
	// A short L1 TTL keeps Redis busy, so the run sees it serve again.
	a := startApp(t, s, 1, "SHORTENER_L1_TTL", "200ms")
	chaostest.Run(t, s.Stack, chaosTarget(a), chaosConfig(200*time.Millisecond), nil, "freeze-master")
}
