package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/idgen"
	"shortener/stack"
	"shortener/stack/stacktest"
)

// The end-to-end tests run the whole topology of DESIGN.md — MariaDB,
// Redis with Sentinel, two shortener binaries, nginx — as "stack up" does,
// on free ports, and break it under load through nginx.

// e2eTimeout bounds each test's waits on the stack (restarts, failover).
const e2eTimeout = 2 * time.Minute

// The redirect load: several clients, each paced to one request per
// resolveEvery (1,200 requests/s in all), so that it leaves CPU to the
// stack and to the tests of other packages running at the same time on a
// small machine, whose timing it would otherwise disturb.
const (
	resolveWorkers = 6
	resolveEvery   = 5 * time.Millisecond
)

// binDir holds the shortener binary the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stack-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// shortenerBinary builds cmd/shortener once per test binary, on first use,
// so that tests that need no app do not wait for the build.
func shortenerBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(binDir, "shortener")
	buildOnce.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("find the go command to build the app: %w", err)
			return
		}
		out, err := exec.Command(goCmd, "build", "-o", bin, "shortener/cmd/shortener").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build shortener/cmd/shortener: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return bin
}

// startFullStack starts what "stack up" starts, with the same code, on
// free ports in a temporary directory; it stops with the test.
func startFullStack(tb testing.TB) *stack.Stack {
	tb.Helper()
	stacktest.RequirePrograms(tb)
	bin := shortenerBinary(tb)
	return stacktest.StartWith(tb, func(ctx context.Context, dir string, log *slog.Logger) (*stack.Stack, error) {
		return startStack(ctx, stackConfig(dir, bin, ports{}, true, log))
	})
}

func mustProc(tb testing.TB, s *stack.Stack, name string) *stack.Proc {
	tb.Helper()
	p, err := s.Proc(name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestAppKillAndRollingRestart: while clients resolve links through nginx,
// app1 is SIGKILLed (no redirect may fail: nginx retries on app2) and
// restarted; then, while clients resolve and create links, app2 is
// SIGTERMed (no request of any kind may fail: it drains) and restarted.
// Codes created on both apps are distinct and carry both node IDs.
func TestAppKillAndRollingRestart(t *testing.T) {
	s := startFullStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	base := s.BaseURL()
	c := newClient()
	setup := createLinks(t, c, base, 60)
	links := byCode(setup)
	app1, app2 := mustProc(t, s, "app1"), mustProc(t, s, "app2")

	// SIGKILL app1 under redirects.
	get := startLoad(resolveWorkers, resolveEvery, resolveOp(c, base, links))
	waitRequests(t, get, 300)
	killedAt := time.Now()
	if err := app1.Kill(); err != nil {
		t.Fatal(err)
	}
	waitRequests(t, get, 500) // app2 alone serves
	if err := app1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restartedAt := time.Now()
	seen := get.served("app1")
	waitUntil(t, time.Minute, "app1 to serve through nginx again", func() bool { return get.served("app1") > seen })
	t.Logf("app1: killed, ready again after %s, serving through nginx after a further %s",
		restartedAt.Sub(killedAt).Round(time.Millisecond), time.Since(restartedAt).Round(time.Millisecond))
	get.finish().check(t, "redirects around app1's SIGKILL")

	// SIGTERM app2 under redirects and creates. Creates stay below nginx's
	// limit for one client address (100/s), which would answer 429.
	get = startLoad(resolveWorkers, resolveEvery, resolveOp(c, base, links))
	post := startLoad(2, 50*time.Millisecond, createOp(c, base, "rolling"))
	waitRequests(t, post, 20)
	termAt := time.Now()
	if err := app2.Term(); err != nil {
		t.Fatal(err)
	}
	t.Logf("app2: SIGTERM to exit took %s", time.Since(termAt).Round(time.Millisecond))
	waitRequests(t, post, 20) // app1 alone serves
	if err := app2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	seenGet, seenPost := get.served("app2"), post.served("app2")
	waitUntil(t, time.Minute, "app2 to serve redirects and creates through nginx again", func() bool {
		return get.served("app2") > seenGet && post.served("app2") > seenPost
	})
	get.finish().check(t, "redirects around app2's SIGTERM")
	creates := post.finish()
	creates.check(t, "creates around app2's SIGTERM")

	checkCodes(t, s, append(setup, creates.created...))
	// Every link created under load resolves, through either app.
	for _, l := range creates.created {
		if o := resolveOp(c, base, map[string]string{l.code: l.url})(0, 0); o.err != nil {
			t.Error(o.err)
		}
	}
}

// checkCodes checks codes created through nginx: all distinct, both apps
// created some, and each code carries the node ID of the app that says it
// served the create.
func checkCodes(tb testing.TB, s *stack.Stack, links []created) {
	tb.Helper()
	nodeOf := map[string]int64{}
	for _, p := range s.Apps() {
		nodeOf[p.Name] = int64(p.NodeID)
	}
	seen := map[string]bool{}
	// The apps run with the default code key (the stack sets none).
	codec, err := idgen.NewCodec(idgen.DefaultKey)
	if err != nil {
		tb.Fatal(err)
	}
	byApp := map[string]int{}
	nodes := map[int64]int{}
	for _, l := range links {
		if seen[l.code] {
			tb.Errorf("code %s issued twice", l.code)
		}
		seen[l.code] = true
		id, err := codec.ID(l.code)
		if err != nil {
			tb.Errorf("decode code %s: %v", l.code, err)
			continue
		}
		node := idgen.Node(id)
		nodes[node]++
		byApp[l.servedBy]++
		if want, ok := nodeOf[l.servedBy]; !ok || node != want {
			tb.Errorf("code %s served by %q has node ID %d, want %d", l.code, l.servedBy, node, want)
		}
	}
	tb.Logf("%d codes created through nginx: by app %v, by node ID %v", len(links), byApp, nodes)
	for _, p := range s.Apps() {
		if byApp[p.Name] == 0 || nodes[int64(p.NodeID)] == 0 {
			tb.Errorf("no code created by %s (node ID %d): by app %v, by node %v", p.Name, p.NodeID, byApp, nodes)
		}
	}
}

// TestRedisMasterKilled: while clients resolve links through nginx, the
// Redis master is SIGKILLed; no redirect may fail, the sentinels promote a
// replica, and lookups go on being answered by Redis.
func TestRedisMasterKilled(t *testing.T) {
	s := startFullStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	base := s.BaseURL()
	c := newClient()
	// More codes than the apps' in-process caches hold for long: each
	// entry lives 5 s there, so lookups keep reaching Redis.
	links := byCode(createLinks(t, c, base, 150))

	get := startLoad(resolveWorkers, resolveEvery, resolveOp(c, base, links))
	waitRequests(t, get, 300)
	old, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	promoted, err := s.WaitMaster(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	hits := redisHits(t, s)
	waitUntil(t, time.Minute, "Redis hits to grow after the promotion", func() bool { return redisHits(t, s) >= hits+100 })
	t.Logf("%s killed: sentinels promoted %s after %s; 100 more Redis hits %s later",
		old.Name, promoted.Name, promotedAt.Sub(killedAt).Round(time.Millisecond), time.Since(promotedAt).Round(time.Millisecond))
	get.finish().check(t, "redirects around the Redis master's SIGKILL")
}

// metricsClient scrapes the apps directly; it keeps no connection that
// would hold up an app's drain.
var metricsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// redisHits sums shortener_redis_lookups_total{result="hit"} over every
// node role and every app.
func redisHits(tb testing.TB, s *stack.Stack) float64 {
	tb.Helper()
	var sum float64
	for _, p := range s.Apps() {
		resp, err := metricsClient.Get("http://" + p.Addr() + "/metrics")
		if err != nil {
			tb.Fatalf("scrape %s: %v", p, err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			series, val, ok := strings.Cut(sc.Text(), " ")
			if !ok || !strings.HasPrefix(series, "shortener_redis_lookups_total{") || !strings.Contains(series, `result="hit"`) {
				continue
			}
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				tb.Fatalf("scrape %s: %s: %v", p, sc.Text(), err)
			}
			sum += f
		}
		resp.Body.Close()
	}
	return sum
}
