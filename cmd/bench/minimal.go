package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"time"

	"shortener/nginx"
)

// minimal is the floor the apps are read against: two Go HTTP servers
// that answer every GET with a 302 to a URL made from the path, and
// nothing else (no routing, lookup, middleware or logging), behind an
// nginx rendered from the same template as the stack's, with the same
// settings. Their ratio to the stack is the cost of the shortener itself.
type minimal struct {
	servers []*http.Server
	addrs   []string
	nginx   *exec.Cmd
	listen  string // nginx's "127.0.0.1:port"
	exited  chan error
}

// minimalRedirect is the whole of the minimal server.
func minimalRedirect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", "https://example.com"+r.URL.Path)
	w.WriteHeader(http.StatusFound)
}

// startMinimal starts the two servers and their nginx, with its files in
// dir, and waits until nginx answers.
func startMinimal(ctx context.Context, dir string) (_ *minimal, err error) {
	m := &minimal{exited: make(chan error, 1)}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("minimal server: %w", err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(minimalRedirect), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 75 * time.Second}
		go srv.Serve(ln) //nolint:errcheck // ends with Close
		m.servers = append(m.servers, srv)
		m.addrs = append(m.addrs, ln.Addr().String())
	}
	if m.listen, err = freeAddr(); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("minimal nginx: %w", err)
	}
	cfg := nginx.Config{
		Listen: m.listen, Apps: m.addrs, PIDFile: filepath.Join(dir, "nginx.pid"), LogDir: dir, TempDir: tmp,
		// As cmd/stack renders the stack's: they limit POSTs only, and
		// this nginx serves GETs.
		CreateRate: 100, CreateBurst: 200,
	}
	if os.Geteuid() == 0 { // as the stack does: workers stay root
		if u, err := user.Current(); err == nil {
			cfg.User = u.Username
		}
	}
	var conf bytes.Buffer
	if err := nginx.Render(&conf, cfg); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, conf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("minimal nginx: %w", err)
	}
	log, err := os.Create(filepath.Join(dir, "nginx.log"))
	if err != nil {
		return nil, fmt.Errorf("minimal nginx: %w", err)
	}
	defer log.Close()
	m.nginx = exec.Command("nginx", "-p", dir+string(filepath.Separator), "-c", path, "-e", "stderr", "-g", "daemon off;")
	m.nginx.Stdout, m.nginx.Stderr = log, log
	if err := m.nginx.Start(); err != nil {
		return nil, fmt.Errorf("minimal nginx: %w", err)
	}
	go func() { m.exited <- m.nginx.Wait() }()
	return m, m.waitReady(ctx)
}

// waitReady polls nginx until it answers or ctx's deadline passes.
func (m *minimal) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.url()+"/ready", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusFound {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case e := <-m.exited:
			m.exited <- e
			return fmt.Errorf("minimal nginx exited: %v", e)
		case <-ctx.Done():
			return fmt.Errorf("minimal nginx not ready: %w", err)
		case <-time.After(50 * time.Millisecond): // polls readiness
		}
	}
}

func (m *minimal) url() string       { return "http://" + m.listen }
func (m *minimal) directURL() string { return "http://" + m.addrs[0] }

// close stops nginx and the servers.
func (m *minimal) close() {
	if m.nginx != nil && m.nginx.Process != nil {
		m.nginx.Process.Signal(os.Interrupt) //nolint:errcheck // gone already is fine
		select {
		case <-m.exited:
		case <-time.After(5 * time.Second):
			m.nginx.Process.Kill() //nolint:errcheck // last resort
		}
	}
	for _, s := range m.servers {
		s.Close()
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

var errNoStack = errors.New("no running stack: run make up first")
