package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/analytics"
	"shortener/internal/poll"
)

// The Docker end-to-end test runs only when asked for with
// SHORTENER_DOCKER_E2E=1 (make deploy-e2e sets it after deploy/docker.sh daemon);
// then a missing daemon is a failure, not a skip. A daemon that merely
// answers does not start it: on a shared machine, one helper's dockerd
// would turn every other `make test` into a Docker run.
const (
	defaultSocket = "unix:///run/shortener-docker.sock"
	dockerCLI     = "/usr/bin/docker" // Debian's client speaks the daemon's API
)

// dockerHost returns the daemon's address; it skips unless
// SHORTENER_DOCKER_E2E=1, and fails when that is set and no daemon answers.
func dockerHost(tb testing.TB) string {
	tb.Helper()
	if os.Getenv("SHORTENER_DOCKER_E2E") != "1" {
		tb.Skip("the Docker end-to-end test runs with SHORTENER_DOCKER_E2E=1 and a daemon: " +
			"make deploy-e2e (as make test does)")
	}
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = defaultSocket
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		tb.Fatal("docker-compose is not installed; install docker.io docker-compose mmdebstrap (as .ci/run does)")
	}
	if out, err := exec.Command(dockerCLI, "-H", host, "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		tb.Fatalf("no Docker daemon answers on %s: %v: %s; run deploy/docker.sh daemon first", host, err, bytes.TrimSpace(out))
	}
	return host
}

// composeProject is one compose stack of the test, on its own project name
// and nginx port.
type composeProject struct {
	tb      testing.TB
	name    string
	envFile string
	host    string
	base    string            // the nginx URL on 127.0.0.1
	ids     map[string]string // service -> container ID
	addrs   map[string]string // service -> address
}

func (p *composeProject) env() []string {
	return append(os.Environ(), "DOCKER_HOST="+p.host, "COMPOSE_DOCKER_CLI_BUILD=0", "DOCKER_BUILDKIT=0")
}

// compose runs docker-compose on the project; output goes to the test log
// when it fails.
func (p *composeProject) compose(ctx context.Context, args ...string) (string, error) {
	all := append([]string{"-p", p.name, "-f", "compose.yaml", "--env-file", p.envFile}, args...)
	cmd := exec.CommandContext(ctx, "docker-compose", all...)
	cmd.Env = p.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("docker-compose %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out) + stderr.String(), nil
}

func (p *composeProject) docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, dockerCLI, args...)
	cmd.Env = p.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// container is the ID of a service's container (asked once: the test
// kills containers but never recreates them).
func (p *composeProject) container(ctx context.Context, service string) string {
	p.tb.Helper()
	if id, ok := p.ids[service]; ok {
		return id
	}
	out, err := p.compose(ctx, "ps", "-q", service)
	out = strings.TrimSpace(out)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:] // the ID is the last line; compose may warn before it
	}
	if err != nil || out == "" {
		p.tb.Fatalf("container of %s: %q %v", service, out, err)
	}
	if p.ids == nil {
		p.ids = map[string]string{}
	}
	p.ids[service] = out
	return out
}

// sentinel asks sentinel-1 a question, with the password in its
// container's environment.
func (p *composeProject) sentinel(ctx context.Context, args ...string) (string, error) {
	ask := `REDISCLI_AUTH="$SHORTENER_SENTINEL_PASSWORD" exec redis-cli -p 26379 --raw sentinel "$@"`
	return p.docker(ctx, append([]string{"exec", p.container(ctx, "sentinel-1"), "sh", "-c", ask, "sh"}, args...)...)
}

// TestComposeEndToEnd builds the images on the local base, brings the
// compose stack up on a free port, creates a link through nginx and
// follows it, then kills the Redis master's container and one app's
// container under open-model load: no redirect may fail and no
// acknowledged create may be lost. Everything is torn down after, and
// no container, network or volume of the project may be left.
func TestComposeEndToEnd(t *testing.T) {
	host := dockerHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	started := time.Now()
	// A /24 of its own, away from make deploy-up's default 172.29.53.
	p, client := startStack(ctx, t, host, "e2e", fmt.Sprintf("172.29.%d", 100+os.Getpid()%100), "")

	// A user's first steps: create through nginx, follow.
	first, err := create(ctx, client, p.base, "https://example.com/compose", "first")
	if err != nil {
		t.Fatal(err)
	}
	if err := follow(ctx, client, p.base, first, "https://example.com/compose"); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %s through nginx and followed it", first)

	// The data tier requires its passwords: a PING without one is refused
	// (NOAUTH) by every Redis node and sentinel, from inside the network.
	for _, c := range []struct{ service, port string }{
		{"redis-1", "6379"}, {"redis-2", "6379"}, {"redis-3", "6379"},
		{"sentinel-1", "26379"}, {"sentinel-2", "26379"}, {"sentinel-3", "26379"},
	} {
		out, _ := p.docker(ctx, "exec", p.container(ctx, c.service), "env", "-u", "REDISCLI_AUTH", "redis-cli", "-p", c.port, "PING")
		if !strings.Contains(out, "NOAUTH") {
			t.Errorf("%s: PING without a password answered %q, want NOAUTH", c.service, strings.TrimSpace(out))
		}
	}

	// The apps trust nginx's X-Real-IP (SHORTENER_TRUSTED_PROXIES): a
	// client at another address (a Redis container) sending the same
	// Idempotency-Key with another URL is a client of its own (201), not
	// the same client reusing its key (422, all clients looking like
	// nginx).
	const post = `exec 3<>/dev/tcp/$0/8080 && printf 'POST /api/v1/links HTTP/1.0\r\nContent-Type: application/json\r\n` +
		`Host: localhost\r\nIdempotency-Key: first\r\nContent-Length: %d\r\n\r\n%s' ${#1} "$1" >&3 && head -n 1 <&3`
	status, err := p.docker(ctx, "exec", p.container(ctx, "redis-2"), "bash", "-c", post, p.address(ctx, "nginx"), `{"url":"https://example.com/other-client"}`)
	if err != nil || !strings.Contains(status, " 201 ") {
		t.Errorf("create from another client address with the same Idempotency-Key: got %q (%v), want 201: the apps do not see the client's address behind nginx", status, err)
	}

	// Both apps claimed distinct node IDs on their own (SHORTENER_NODE_ID=auto).
	waitSentinels(ctx, t, p)

	links := map[string]string{}
	for i := range 200 {
		u := fmt.Sprintf("https://example.com/e2e/%d", i)
		code, err := create(ctx, client, p.base, u, fmt.Sprintf("seed-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		links[code] = u
	}

	l := startLoad(ctx, client, p.base, links, 200, 10)
	time.Sleep(3 * time.Second) // a baseline under load before the faults

	oldMaster, err := p.sentinel(ctx, "get-master-addr-by-name", "shortener")
	if err != nil {
		t.Fatal(err)
	}
	oldMaster = strings.Fields(oldMaster)[0]
	masterService := ""
	for _, s := range []string{"redis-1", "redis-2", "redis-3"} {
		if p.address(ctx, s) == oldMaster {
			masterService = s
		}
	}
	if masterService == "" {
		t.Fatalf("the sentinels name master %s, the address of no Redis container", oldMaster)
	}
	killed := time.Now()
	if _, err := p.docker(ctx, "kill", p.container(ctx, masterService)); err != nil {
		t.Fatal(err)
	}
	// Every half second, not every 100 ms: each question is a docker
	// exec, about 0.3 s of CPU with the CLI on a 2-core machine, and
	// asked every 100 ms they took most of a core from the stack while
	// it failed over. The sentinels' logs time the switch to the
	// millisecond (switchedMaster).
	poll.Every(t, "a new master after killing "+oldMaster, 500*time.Millisecond, func() error {
		m, err := p.sentinel(ctx, "get-master-addr-by-name", "shortener")
		if err != nil || len(strings.Fields(m)) == 0 || strings.Fields(m)[0] == oldMaster {
			return fmt.Errorf("sentinel-1 answered %q, %v", m, err)
		}
		t.Logf("killed the Redis master %s (%s); sentinel-1 named %s the master %s after (polling through docker exec)", masterService, oldMaster, strings.Fields(m)[0], time.Since(killed).Round(time.Millisecond))
		if at, ok := p.switchedMaster(ctx); ok {
			t.Logf("the sentinels' logs: +switch-master %s after the kill", at.Sub(killed).Round(time.Millisecond))
		}
		return nil
	})
	time.Sleep(3 * time.Second) // load on the new master before the next fault: time passing, not a wait
	if _, err := p.docker(ctx, "kill", p.container(ctx, "app1")); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed app1's container")
	time.Sleep(5 * time.Second) // load on the one app left, then the count
	res := l.stop()

	lost := checkLoad(ctx, t, client, p.base, res)
	t.Logf("ledger: %d acknowledged creates, %d lost; whole test so far %s", len(res.created), lost, time.Since(started).Round(time.Second))

	// A killed container is not restarted by Docker (a kill is a manual
	// stop); started again, app1 comes back on its fixed address, and
	// nginx, which resolved app1 once at its start, sends to it again.
	restarted := time.Now()
	if _, err := p.docker(ctx, "start", p.container(ctx, "app1")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "nginx to send the started app1 a redirect", func() error {
		ans, err := ask(ctx, client, p.base, first)
		if err != nil || ans.servedBy != "app1" || ans.status != http.StatusFound {
			return fmt.Errorf("%+v, %v", ans, err)
		}
		return nil
	})
	t.Logf("app1 started again: nginx sent it a redirect %s later", time.Since(restarted).Round(100*time.Millisecond))

	// The sentinels know every node by address: none may have tried to
	// resolve a name (a lookup blocks a sentinel's event loop, the cause
	// of TILT and late failovers in containers). TILT itself is logged,
	// not failed: a starved machine may cause it too.
	for _, s := range []string{"sentinel-1", "sentinel-2", "sentinel-3"} {
		logs, err := p.docker(ctx, "logs", p.container(ctx, s))
		if err != nil {
			t.Error(err)
			continue
		}
		if strings.Contains(logs, "Failed to resolve") {
			t.Errorf("%s tried to resolve a host name:\n%s", s, logs)
		}
		if n := strings.Count(logs, "+tilt"); n > 0 {
			t.Logf("%s entered TILT %d times", s, n)
		}
	}
}

// e2eClient is the test's HTTP client: it reports redirects rather than
// following them.
func e2eClient() *http.Client {
	return &http.Client{
		Timeout:       5 * time.Second,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// buildInputs puts the app binary and the country database into the
// images' build context and makes the base image: once per test binary,
// for every stack the tests bring up.
var buildInputs = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The app binary, static, into the images' build context.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join("deploy", "build", "shortener"), "./cmd/shortener")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the app: %v\n%s", err, out)
	}
	// The country database into the image, as compose.sh does, if make
	// geo installed it (the app starts without one).
	if err := os.MkdirAll(filepath.Join("build", "geo"), 0o755); err != nil {
		return "", err
	}
	if b, err := os.ReadFile(analytics.DefaultGeoDB("..")); err == nil {
		if err := os.WriteFile(filepath.Join("build", "geo", filepath.Base(analytics.GeoDBPath)), b, 0o644); err != nil {
			return "", err
		}
	}
	base := exec.CommandContext(ctx, "./docker.sh", "base")
	base.Env = os.Environ() // DOCKER_HOST: dockerHost's, set by the caller
	out, err := base.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("base image: %v\n%s", err, out)
	}
	return string(bytes.TrimSpace(out)), nil
})

// startStack builds the images and brings compose.yaml up as a project
// of its own (name suffix), on the /24 whose first three octets are net,
// with nginx on a free port of 127.0.0.1 and fresh secrets; extraEnv is
// appended to its env file. It returns once nginx answers /healthz;
// the project is torn down, and checked gone, when the test ends.
func startStack(ctx context.Context, t *testing.T, host, suffix, net, extraEnv string) (*composeProject, *http.Client) {
	t.Helper()
	started := time.Now()
	t.Setenv("DOCKER_HOST", host)
	if out, err := buildInputs(); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", out)
	}
	baseDone := time.Now()

	port := freePort(t)
	p := &composeProject{
		tb: t, host: host,
		name:    fmt.Sprintf("shortener-%s-%d", suffix, os.Getpid()),
		envFile: filepath.Join(t.TempDir(), "env"),
		base:    fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	env := fmt.Sprintf("SHORTENER_DB_PASSWORD=%s\nSHORTENER_CODE_KEY=%s\nSHORTENER_API_KEY=sk_%s\n"+
		"SHORTENER_REDIS_PASSWORD=%s\nSHORTENER_SENTINEL_PASSWORD=%s\n"+
		"SHORTENER_BASE=shortener-base:bookworm\nSHORTENER_TAG=e2e\nSHORTENER_HTTP_PORT=%d\nSHORTENER_BASE_URL=%s\n"+
		"SHORTENER_CREATE_RATE=0\nSHORTENER_NET=%s\n", secret(), secret(), secret(), secret(), secret(), port, p.base, net)
	if err := os.WriteFile(p.envFile, []byte(env+extraEnv), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.down(t) })
	if _, err := p.compose(ctx, "build"); err != nil {
		t.Fatal(err)
	}
	built := time.Now()
	if out, err := p.compose(ctx, "up", "-d"); err != nil {
		logs, _ := p.compose(ctx, "logs", "--tail", "30")
		t.Fatalf("%v\n%s", err, logs)
	} else {
		t.Logf("up:\n%s", out)
	}
	up := time.Now()
	t.Logf("app binary + base image %s, images %s, compose up %s",
		baseDone.Sub(started).Round(time.Second), built.Sub(baseDone).Round(time.Second), up.Sub(built).Round(time.Second))

	client := e2eClient()
	// up -d returns once nginx's container has started, not once it
	// listens: until then the published port's proxy accepts and closes.
	poll.Until(t, "nginx to answer /healthz after up", func() error {
		resp, err := client.Get(p.base + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz answered %d", resp.StatusCode)
		}
		return nil
	})
	return p, client
}

// checkLoad fails the test for every failed redirect and every create
// never acknowledged, then reads every acknowledged create back through
// nginx and returns how many are lost. A read that fails (a timeout, a
// 5xx) is asked again for up to 10 s: lost means the stack answers, and
// the answer is not the link.
func checkLoad(ctx context.Context, t *testing.T, client *http.Client, base string, res loadResult) (lost int) {
	t.Helper()
	t.Logf("load: %d redirects, %d failed; %d creates acknowledged, %d never acknowledged; latency p50 %s p99 %s max %s",
		res.redirects, len(res.failed), len(res.created), res.unacked, res.p(0.50), res.p(0.99), res.p(1))
	for i, f := range res.failed {
		if i == 10 {
			t.Errorf("... and %d more", len(res.failed)-10)
			break
		}
		t.Errorf("failed redirect: %s", f)
	}
	if res.unacked > 0 {
		t.Errorf("%d creates never acknowledged after their retries", res.unacked)
	}
	for code, u := range res.created {
		var err error
		// The client's retries, which decide lost or not: not a wait.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			var ans *answer
			if ans, err = ask(ctx, client, base, code); err == nil && ans.status == http.StatusFound && ans.location == u {
				break
			}
			if (err == nil && ans.status < 500) || time.Now().After(deadline) {
				if err == nil {
					err = fmt.Errorf("got %d %q", ans.status, ans.location)
				}
				break
			}
		}
		if err != nil {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged create %s (%s) not found: %v", code, u, err)
			}
		}
	}
	return lost
}

// switchedMaster returns when the first sentinel logged +switch-master,
// by its log's clock (the host's; the containers run in UTC).
func (p *composeProject) switchedMaster(ctx context.Context) (time.Time, bool) {
	var first time.Time
	for _, s := range []string{"sentinel-1", "sentinel-2", "sentinel-3"} {
		logs, err := p.docker(ctx, "logs", p.container(ctx, s))
		if err != nil {
			continue
		}
		for line := range strings.Lines(logs) {
			// 1:X 03 Dec 2026 19:16:22.140 # +switch-master shortener ...
			f := strings.Fields(line)
			if len(f) < 7 || f[6] != "+switch-master" {
				continue
			}
			at, err := time.Parse("02 Jan 2006 15:04:05.000", strings.Join(f[1:5], " "))
			if err == nil && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	return first, !first.IsZero()
}

// address is a service's fixed address on the stack's network, asked
// once: a stopped container has none to tell.
func (p *composeProject) address(ctx context.Context, service string) string {
	p.tb.Helper()
	if a, ok := p.addrs[service]; ok {
		return a
	}
	out, err := p.docker(ctx, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", p.container(ctx, service))
	if err != nil || out == "" {
		p.tb.Fatalf("address of %s: %q %v", service, out, err)
	}
	if p.addrs == nil {
		p.addrs = map[string]string{}
	}
	p.addrs[service] = out
	return out
}

// down tears the project down and checks that nothing of it is left.
func (p *composeProject) down(tb testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if tb.Failed() {
		if logs, err := p.compose(ctx, "logs", "--tail", "40"); err == nil {
			tb.Logf("compose logs:\n%s", logs)
		}
	}
	start := time.Now()
	if _, err := p.compose(ctx, "down", "-v", "--remove-orphans", "-t", "5"); err != nil {
		tb.Error(err)
	}
	label := "label=com.docker.compose.project=" + p.name
	for _, what := range [][]string{{"ps", "-a", "-q"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
		out, err := p.docker(ctx, append(what, "--filter", label)...)
		if err != nil {
			tb.Error(err)
		} else if out != "" {
			tb.Errorf("docker %s: left after down: %s", what[0], out)
		}
	}
	tb.Logf("compose down -v: %s, nothing left", time.Since(start).Round(100*time.Millisecond))
}

// waitSentinels waits until sentinel-1 sees both replicas and both other
// sentinels: before that, killing the master could not fail over.
func waitSentinels(ctx context.Context, tb testing.TB, p *composeProject) {
	tb.Helper()
	// Each question is a docker exec: see the failover's wait.
	poll.Every(tb, "sentinel-1 to know 2 replicas and 2 sentinels", 200*time.Millisecond, func() error {
		r, err1 := p.sentinel(ctx, "replicas", "shortener")
		s, err2 := p.sentinel(ctx, "sentinels", "shortener")
		if err1 == nil && err2 == nil && strings.Count(r, "\nflags\nslave\n") == 2 && strings.Count(s, "\nflags\nsentinel\n") == 2 {
			return nil
		}
		return fmt.Errorf("%v %v\n%s\n%s", err1, err2, r, s)
	})
}

// load is a bounded open-model load: redirects and creates at constant
// rates, each request timed from when it was due, whether or not the one
// before it had answered.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	res    loadResult
}

type loadResult struct {
	redirects int
	failed    []string
	latencies []time.Duration
	created   map[string]string // acknowledged creates, code -> URL
	acked     []time.Time       // when each create was acknowledged
	unacked   int
}

func (r loadResult) p(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))].Round(100 * time.Microsecond)
}

func startLoad(ctx context.Context, client *http.Client, base string, links map[string]string, getRate, createRate int) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel, res: loadResult{created: map[string]string{}}}
	codes := make([]string, 0, len(links))
	for c := range links {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	// At most maxInFlight requests wait for answers at once: a stalled
	// stack must not be buried under thousands of connections. A request
	// due while the bound is reached is not sent, and counts as failed.
	const maxInFlight = 256
	inFlight := make(chan struct{}, maxInFlight)
	tick := func(rate int, send func(i int, due time.Time), unsent func(i int)) {
		defer l.wg.Done()
		every := time.Second / time.Duration(rate)
		start := time.Now()
		var sends sync.WaitGroup
		defer sends.Wait()
		for i := 0; ; i++ {
			due := start.Add(time.Duration(i) * every)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(due)):
			}
			select {
			case inFlight <- struct{}{}:
			default:
				unsent(i)
				continue
			}
			sends.Add(1)
			go func() { defer sends.Done(); defer func() { <-inFlight }(); send(i, due) }()
		}
	}
	l.wg.Add(2)
	go tick(getRate, func(i int, due time.Time) {
		code := codes[(i*7919)%len(codes)]
		err := follow(context.WithoutCancel(ctx), client, base, code, links[code])
		l.mu.Lock()
		defer l.mu.Unlock()
		l.res.redirects++
		l.res.latencies = append(l.res.latencies, time.Since(due))
		if err != nil {
			l.res.failed = append(l.res.failed, due.Format("15:04:05.000 ")+err.Error())
		}
	}, func(i int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.res.redirects++
		l.res.failed = append(l.res.failed, fmt.Sprintf("redirect %d not sent: %d requests in flight", i, maxInFlight))
	})
	run := secret()[:8]
	go tick(createRate, func(i int, _ time.Time) {
		u := fmt.Sprintf("https://example.com/load/%s/%d", run, i)
		key := fmt.Sprintf("e2e-%s-%d", run, i)
		// Retried with the same Idempotency-Key, as a client would, for
		// up to 30 s: an app killed mid-request must not lose or double it.
		var code string
		var err error
		// The client's retries, paced as a client's: not a wait.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if code, err = create(context.WithoutCancel(ctx), client, base, u, key); err == nil {
				break
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil {
			l.res.unacked++
			return
		}
		l.res.created[code] = u
		l.res.acked = append(l.res.acked, time.Now())
	}, func(int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.res.unacked++
	})
	return l
}

func (l *load) stop() loadResult {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res
}

// create makes a link with an Idempotency-Key and returns its code.
func create(ctx context.Context, c *http.Client, base, u, key string) (string, error) {
	body, _ := json.Marshal(map[string]string{"url": u})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/links", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", u, err)
	}
	defer resp.Body.Close()
	var got struct{ Code, URL string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusCreated || got.URL != u {
		return "", fmt.Errorf("create %s: got %d %+v (%v), want 201", u, resp.StatusCode, got, err)
	}
	return got.Code, nil
}

// answer is what GET /{code} answered.
type answer struct {
	status   int
	location string
	servedBy string // X-Served-By: the app that answered
}

// ask sends GET /{code} through nginx.
func ask(ctx context.Context, c *http.Client, base, code string) (*answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+code, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return &answer{status: resp.StatusCode, location: resp.Header.Get("Location"), servedBy: resp.Header.Get("X-Served-By")}, nil
}

// follow asks for a code through nginx and checks the redirect.
func follow(ctx context.Context, c *http.Client, base, code, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+code, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET /%s: %w", code, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
		return fmt.Errorf("GET /%s: got %d %q (%s), want 302 %q", code, resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("X-Served-By"), want)
	}
	return nil
}

func secret() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // never fails
	return hex.EncodeToString(b[:])
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
