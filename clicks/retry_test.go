package clicks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"shortener"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/clicks"
	"shortener/handler"
	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/nginx"
	"shortener/store"
)

// startNginx runs the project's nginx.conf in front of apps on a free
// port and returns its base URL; it stops when the test ends.
func startNginx(tb testing.TB, apps []string) string {
	tb.Helper()
	stacktest.RequirePrograms(tb)
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	dir := tb.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := nginx.Config{Listen: addr, Apps: apps, PIDFile: filepath.Join(dir, "nginx.pid"), LogDir: dir, TempDir: dir, CreateRate: 100, CreateBurst: 100}
	if os.Geteuid() == 0 {
		c.User = "root"
	}
	var conf strings.Builder
	if err := nginx.Render(&conf, c); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir+"/", "-c", path, "-e", "stderr", "-g", "daemon off;")
	cmd.Stderr = os.Stderr
	// Its own process group, killed whole: a SIGKILLed master leaves its
	// workers running, holding every file the test inherited (a make
	// test under flock: the lock). Pdeathsig covers a test that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stack.KillWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	poll.Until(tb, "nginx to listen on "+addr, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	return "http://" + addr
}

// noRedirects is a client that returns redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// stallFirst answers a request slower than nginx's redirect read timeout
// (400 ms) the first time any app sees it (the client numbers its
// requests in X-Test-Seq), after running next: nginx gives up on that
// app and retries the other.
type stallFirst struct {
	mu   sync.Mutex
	seen map[string][]try // X-Test-Seq → the tries, in order
}

// try is one upstream try nginx made: the app and the X-Click-Id it got.
type try struct{ app, clickID string }

func (s *stallFirst) wrap(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seq := r.Header.Get("X-Test-Seq")
		s.mu.Lock()
		first := len(s.seen[seq]) == 0
		s.seen[seq] = append(s.seen[seq], try{name, r.Header.Get("X-Click-Id")})
		s.mu.Unlock()
		next.ServeHTTP(w, r) // the click is journaled here
		if first {
			time.Sleep(700 * time.Millisecond) // the stall: longer than nginx waits
		}
	})
}

// TestNginxRetryNamesTheRequestOnce checks what the deduplication rests on,
// with nginx 1.22 and the project's nginx.conf: an upstream retry carries
// the same X-Click-Id as the first try, a client's X-Click-Id never
// reaches an app, and the value is "$msec-$request_id".
func TestNginxRetryNamesTheRequestOnce(t *testing.T) {
	st := &stallFirst{seen: map[string][]try{}}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://example.com/", http.StatusFound)
	})
	var apps []string
	for _, name := range []string{"app1", "app2"} {
		srv := httptest.NewServer(st.wrap(name, ok))
		t.Cleanup(srv.Close)
		apps = append(apps, strings.TrimPrefix(srv.URL, "http://"))
	}
	base := startNginx(t, apps)
	req, err := http.NewRequest(http.MethodGet, base+"/AbC123xyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Click-Id", "1700000000.000-00000000000000000000000000000001") // forged
	req.Header.Set("X-Test-Seq", "1")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("GET through nginx: %d, want 302", resp.StatusCode)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	tries := st.seen["1"]
	if len(tries) != 2 || tries[0].app == tries[1].app {
		t.Fatalf("the request reached %v, want both apps (a retry)", tries)
	}
	if tries[0].clickID != tries[1].clickID {
		t.Errorf("the retry carried X-Click-Id %q, the first try %q: want the same", tries[1].clickID, tries[0].clickID)
	}
	if id := tries[0].clickID; !regexp.MustCompile(`^\d{10}\.\d{3}-[0-9a-f]{32}$`).MatchString(id) || strings.HasSuffix(id, "0001") {
		t.Errorf("X-Click-Id %q: want nginx's own $msec-$request_id", id)
	}
}

// oneLink resolves one code.
type oneLink struct{ l shortener.Link }

func (o oneLink) Resolve(_ context.Context, code string) (shortener.Link, error) {
	if code != o.l.Code {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return o.l, nil
}
func (o oneLink) Link(ctx context.Context, code string) (shortener.Link, error) {
	return o.Resolve(ctx, code)
}
func (o oneLink) Create(context.Context, shortener.Link) error { return nil }
func (o oneLink) CreateIdempotent(_ context.Context, l shortener.Link, _ shortener.Idempotency) (shortener.Link, bool, error) {
	return l, false, nil
}
func (o oneLink) Delete(context.Context, string, time.Time) error { return nil }

// TestNginxRetryCountsOnce is the double count nginx's retries made,
// end to end: two apps (the real handler, each with its own journal and
// shipper into MariaDB) behind the project's nginx; the app nginx tries
// first journals each click, then stalls past nginx's read timeout, so
// nginx retries on the other, which journals it too. Every redirect the
// client got is stored once. Without X-Click-Id in nginx.conf (before
// the deduplication) this stored 2 clicks a redirect.
func TestNginxRetryCountsOnce(t *testing.T) {
	dsn := stacktest.Database(t, stacktest.Shared(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := store.Open(store.Config{DSN: dsn, MaxOpen: 8, QueryTimeout: 2 * time.Second, DialTimeout: time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := db.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	link := shortener.Link{ID: 77, Code: "retry77", URL: "https://example.com/77", Redirect: http.StatusFound, CreatedAt: time.Now().UTC()}
	if err := db.Create(ctx, link); err != nil {
		t.Fatal(err)
	}
	st := &stallFirst{seen: map[string][]try{}}
	var apps []string
	var shippers []*clicks.Shipper
	var regs []*prometheus.Registry
	for i, name := range []string{"app1", "app2"} {
		reg := prometheus.NewRegistry()
		regs = append(regs, reg)
		j, err := clicks.Open(clicks.Config{Dir: t.TempDir(), NodeID: int64(i + 1), MaxBytes: 1 << 30, SegmentBytes: 1 << 20,
			SyncInterval: time.Second, MaxRequestAge: 30 * time.Second}, nil, log, reg)
		if err != nil {
			t.Fatal(err)
		}
		ship, err := clicks.NewShipper(j, db, clicks.ShipperConfig{MaxBatch: 1000, Interval: 10 * time.Millisecond, Timeout: 5 * time.Second,
			Heartbeat: 10 * time.Millisecond, PurgeEvery: time.Second, RequestWindow: 10 * time.Minute, RequestHold: time.Hour}, log, reg)
		if err != nil {
			t.Fatal(err)
		}
		shippers = append(shippers, ship)
		h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: name, IdempotencyTTL: time.Hour, ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, // nginx
			handler.Deps{Resolver: oneLink{link}, Links: oneLink{link}, Clicks: j, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(st.wrap(name, h))
		t.Cleanup(func() {
			srv.Close()
			j.Close()
		})
		apps = append(apps, strings.TrimPrefix(srv.URL, "http://"))
	}
	base := startNginx(t, apps)
	const n = 5
	for i := range n {
		req, err := http.NewRequest(http.MethodGet, base+"/"+link.Code, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Test-Seq", fmt.Sprint(i))
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("redirect %d through nginx: %d, want 302", i, resp.StatusCode)
		}
	}
	st.mu.Lock()
	retried := 0
	for _, tries := range st.seen {
		if len(tries) > 1 {
			retried++
		}
	}
	st.mu.Unlock()
	if retried != n {
		t.Fatalf("%d of %d redirects reached both apps, want all (the stall must make nginx retry)", retried, n)
	}
	// Both journals ship everything (each has shipped, or found counted,
	// every click it recorded), then the count is read.
	for _, ship := range shippers {
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { ship.Run(sctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	for _, reg := range regs {
		poll.Until(t, "the journal shipped", func() error {
			rec, shipped, dup := metric(t, reg, "shortener_clicks_recorded_total"), metric(t, reg, "shortener_clicks_shipped_total"), metric(t, reg, "shortener_clicks_duplicate_total")
			if rec != shipped+dup {
				return fmt.Errorf("%v recorded, %v shipped, %v found counted", rec, shipped, dup)
			}
			return nil
		})
	}
	stats, err := db.ClickStats(ctx, link.ID, link.CreatedAt.Truncate(time.Hour), link.CreatedAt.Truncate(time.Hour).Add(2*time.Hour), false, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != n {
		t.Fatalf("%d redirects received, %d clicks stored, want %d", n, stats.Total, n)
	}
	var dups float64
	for _, reg := range regs {
		dups += metric(t, reg, "shortener_clicks_duplicate_total")
	}
	if dups != n {
		t.Errorf("%v duplicates skipped, want %d (one per retried redirect)", dups, n)
	}
}

// metric reads a counter from reg.
func metric(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	tb.Fatalf("no metric %s", name)
	return 0
}
