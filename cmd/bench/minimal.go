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
	"syscall"
	"time"

	"shortener/internal/stack"
	"shortener/nginx"
)

// minimal is the floor the apps are read against: two Go HTTP servers
// that answer every GET with a 302 to a URL made from the path, and
// nothing else (no routing, lookup, middleware or logging), behind an
// nginx rendered from the same template as the stack's, with the same
// settings. Each is a process of its own, as each app is: two servers in
// one process would share one Go scheduler (its spinning threads, sysmon,
// GC) where the apps pay for two, and the ratio would charge that to the
// shortener. Their ratio to the stack is the cost of the shortener itself.
type minimal struct {
	servers []*exec.Cmd
	addrs   []string
	proxy   *proxy
}

// proxy is an nginx the bench starts in front of servers of its own,
// rendered from the stack's template.
type proxy struct {
	cmd    *exec.Cmd
	listen string // "127.0.0.1:port"
	exited chan error
}

// minimalEnv, set in bench's own environment, makes it a minimal server on
// the listener it inherits as file descriptor 3 (startMinimal).
const minimalEnv = "SHORTENER_BENCH_MINIMAL"

// minimalRedirect is the whole of the minimal server.
func minimalRedirect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", "https://example.com"+r.URL.Path)
	w.WriteHeader(http.StatusFound)
}

// serveMinimal is the minimal server's process: it serves the inherited
// listener until killed.
func serveMinimal() error {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return fmt.Errorf("minimal server: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(minimalRedirect), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 75 * time.Second}
	return srv.Serve(ln)
}

// startMinimal starts the two servers and their nginx, with its files in
// dir, and waits until nginx answers.
func startMinimal(ctx context.Context, dir string) (_ *minimal, err error) {
	m := &minimal{}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("minimal server: %w", err)
	}
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("minimal server: %w", err)
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			return nil, fmt.Errorf("minimal server: %w", err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), minimalEnv+"=1")
		cmd.ExtraFiles = []*os.File{f}
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		stack.KillWithParent(cmd.SysProcAttr) // not outliving the bench
		err = cmd.Start()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("minimal server: %w", err)
		}
		m.servers = append(m.servers, cmd)
		m.addrs = append(m.addrs, ln.Addr().String())
	}
	// The create limit as internal/topology renders the stack's: it limits POSTs
	// only, and this nginx serves GETs.
	m.proxy, err = startProxy(ctx, dir, m.addrs, 100, 200, "/ready")
	return m, err
}

// pids are the minimal servers' processes.
func (m *minimal) pids() []int {
	var pids []int
	for _, c := range m.servers {
		pids = append(pids, c.Process.Pid)
	}
	return pids
}

// startProxy renders nginx.conf from the template for apps into dir,
// starts nginx and waits until GET path answers below 500.
func startProxy(ctx context.Context, dir string, apps []string, createRate, createBurst int, path string) (_ *proxy, err error) {
	p := &proxy{exited: make(chan error, 1)}
	if p.listen, err = freeAddr(); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("bench nginx: %w", err)
	}
	cfg := nginx.Config{
		Listen: p.listen, Apps: apps, PIDFile: filepath.Join(dir, "nginx.pid"), LogDir: dir, TempDir: tmp,
		CreateRate: createRate, CreateBurst: createBurst,
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
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("bench nginx: %w", err)
	}
	log, err := os.Create(filepath.Join(dir, "nginx.log"))
	if err != nil {
		return nil, fmt.Errorf("bench nginx: %w", err)
	}
	defer log.Close()
	p.cmd = exec.Command("nginx", "-p", dir+string(filepath.Separator), "-c", confPath, "-e", "stderr", "-g", "daemon off;")
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench nginx: %w", err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	if err := p.waitReady(ctx, path); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// waitReady polls nginx until GET path answers below 500 or ten seconds
// pass.
func (p *proxy) waitReady(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.listen+path, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case e := <-p.exited:
			p.exited <- e
			return fmt.Errorf("bench nginx exited: %v", e)
		case <-ctx.Done():
			return fmt.Errorf("bench nginx not ready: %w", err)
		case <-time.After(50 * time.Millisecond): // polls readiness
		}
	}
}

func (m *minimal) url() string       { return m.proxy.url() }
func (m *minimal) directURL() string { return "http://" + m.addrs[0] }

// close stops nginx and the servers.
func (m *minimal) close() {
	m.proxy.close()
	for _, c := range m.servers {
		c.Process.Kill() //nolint:errcheck // gone already is fine
		c.Wait()         //nolint:errcheck // killed
	}
}

func (p *proxy) url() string { return "http://" + p.listen }
func (p *proxy) pid() int    { return p.cmd.Process.Pid }

// close stops nginx; a nil proxy is fine.
func (p *proxy) close() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	interrupt(p.cmd, p.exited, 5*time.Second)
}

// interrupt asks cmd to stop (SIGINT) and kills it if it has not exited
// within wait; exited receives its Wait's result, which is put back.
func interrupt(cmd *exec.Cmd, exited chan error, wait time.Duration) {
	cmd.Process.Signal(os.Interrupt) //nolint:errcheck // gone already is fine
	select {
	case e := <-exited:
		exited <- e
	case <-time.After(wait):
		cmd.Process.Kill() //nolint:errcheck // last resort
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
