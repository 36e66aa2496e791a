//go:build linux

package nginx

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"shortener/internal/poll"
)

// TestPerAddressLimits runs real nginx with the rendered config in front
// of a stub app and sends, each from a loopback address of its own, what
// an abuser sends: a flood of redirects, of previews, and of form posts
// carrying a made-up X-Api-Key. Each meets 429 at nginx past its burst;
// the exempt address (the operator's load generator) is never limited.
// The rates are 1 a second, so no machine is slow enough to let a flood
// of 60 through.
func TestPerAddressLimits(t *testing.T) {
	bin := nginxBinary(t)
	var hits atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusFound)
	}))
	defer app.Close()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := Config{Listen: addr, Apps: []string{strings.TrimPrefix(app.URL, "http://")},
		PIDFile: filepath.Join(dir, "nginx.pid"), LogDir: dir, TempDir: dir,
		CreateRate: 1, CreateBurst: 2, RedirectRate: 1, RedirectBurst: 5, PageRate: 1, PageBurst: 3,
		LimitExempt: []string{"127.0.0.1"}}
	if os.Geteuid() == 0 {
		c.User = "root"
	}
	var conf strings.Builder
	if err := Render(&conf, c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir+"/", "-c", path, "-e", "stderr", "-g", "daemon off;")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	poll.Until(t, "nginx to listen on "+addr, func() error {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err
	})
	from := func(src string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		return &http.Client{
			Transport:     &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) }},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	flood := func(src, method, path string, header ...string) (limited int) {
		t.Helper()
		cl := from(src)
		for range 60 {
			req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader("url=https%3A%2F%2Fexample.com%2F"))
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatalf("%s %s from %s: %v", method, path, src, err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				limited++
			}
		}
		return limited
	}
	for _, tc := range []struct {
		name, src, method, path string
		header                  []string
		atLeast, atMost         int
	}{
		{"redirects from one address", "127.0.0.2", "GET", "/abc", nil, 50, 55},
		{"previews from one address", "127.0.0.3", "GET", "/abc+", nil, 50, 57},
		{"form posts with a made-up X-Api-Key", "127.0.0.4", "POST", "/", []string{"X-Api-Key", "made-up", "Content-Type", "application/x-www-form-urlencoded"}, 50, 58},
		{"redirects from the exempt load generator", "127.0.0.1", "GET", "/abc", nil, 0, 0},
		{"previews from the exempt load generator", "127.0.0.1", "GET", "/abc+", nil, 0, 0},
	} {
		if got := flood(tc.src, tc.method, tc.path, tc.header...); got < tc.atLeast || got > tc.atMost {
			t.Errorf("%s: %d of 60 limited, want %d to %d", tc.name, got, tc.atLeast, tc.atMost)
		}
	}
}
