package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"shortener/internal/stack"
)

// capacity is a pair of apps that make bench starts beside the stack: the
// stack's own binary and settings (read from app1's environment: the same
// MySQL, Redis and keys), with node IDs claimed from MySQL, click journals
// of their own, and the create rate limits off, behind an nginx from the
// same template whose per-address limit is out of the way. The stack's
// limits (100 creates/s per address, and per key) are policy: with them in
// force the create row would measure the limit, not the shortener. The row
// that keeps them, create/stack, says what they allow.
//
// The bench starts two pairs that differ in one setting: counting on (the
// default; the create and clicks/nginx/on rows) and counting off
// (clicks/nginx/off). Both are up for the whole run, so the two rows that
// read counting's cost run seconds apart with nothing restarted between.
type capacity struct {
	apps  []*exec.Cmd
	addrs []string
	done  []chan error
	proxy *proxy
}

// appSettingsOff are the stack's settings a capacity app must not share
// with app1 (its address, identity and files) or that it turns off.
var appSettingsOff = []string{
	"SHORTENER_ADDR=", "SHORTENER_NODE_ID=", "SHORTENER_INSTANCE=", "SHORTENER_CLICKS_DIR=",
	"SHORTENER_TRENDING_SPOOL=", "SHORTENER_PPROF_ADDR=", "SHORTENER_CREATE_RATE=", "SHORTENER_KEY_CREATE_RATE=",
}

// capacityEnv is app1's environment with what must differ replaced, and
// extra (KEY=value) last.
func capacityEnv(app1 []string, name, addr, dir string, extra ...string) []string {
	var env []string
	for _, kv := range app1 {
		drop := false
		for _, p := range appSettingsOff {
			drop = drop || strings.HasPrefix(kv, p)
		}
		if !drop {
			env = append(env, kv)
		}
	}
	env = append(env,
		"SHORTENER_ADDR="+addr, "SHORTENER_NODE_ID=auto", "SHORTENER_INSTANCE="+name,
		"SHORTENER_CLICKS_DIR="+filepath.Join(dir, "clicks"), "SHORTENER_CREATE_RATE=0", "SHORTENER_KEY_CREATE_RATE=0")
	return append(env, extra...)
}

// startCapacity starts the two apps (name1, name2) and their nginx, with
// files in dir and the settings extra on top of app1's.
func startCapacity(ctx context.Context, fs procfs.FS, app1 *stack.Proc, dir, name string, extra ...string) (_ *capacity, err error) {
	p, err := fs.Proc(app1.Pid())
	if err != nil {
		return nil, fmt.Errorf("capacity apps: %w", err)
	}
	env, err := p.Environ()
	if err != nil {
		return nil, fmt.Errorf("capacity apps: environment of %s: %w", app1.Name, err)
	}
	bin, err := p.Executable()
	if err != nil {
		return nil, fmt.Errorf("capacity apps: binary of %s: %w", app1.Name, err)
	}
	c := &capacity{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	for i := range 2 {
		name := fmt.Sprintf("%s%d", name, i+1)
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		adir := filepath.Join(dir, name)
		if err := os.MkdirAll(adir, 0o755); err != nil {
			return nil, fmt.Errorf("capacity apps: %w", err)
		}
		log, err := os.Create(filepath.Join(adir, "app.log"))
		if err != nil {
			return nil, fmt.Errorf("capacity apps: %w", err)
		}
		cmd := exec.Command(bin, "-addr="+addr)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = capacityEnv(env, name, addr, adir, extra...), adir, log, log
		err = cmd.Start()
		log.Close()
		if err != nil {
			return nil, fmt.Errorf("capacity apps: %w", err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		c.apps, c.done, c.addrs = append(c.apps, cmd), append(c.done, done), append(c.addrs, addr)
	}
	for i, addr := range c.addrs {
		if err := waitHTTP(ctx, "http://"+addr+"/readyz", c.done[i]); err != nil {
			return nil, fmt.Errorf("capacity app %d (log in %s): %w", i+1, dir, err)
		}
	}
	c.proxy, err = startProxy(ctx, filepath.Join(dir, "nginx"), c.addrs, 1_000_000, 1_000, "/healthz")
	return c, err
}

// waitHTTP polls url until it answers 200, the process ends, or 30 s pass.
func waitHTTP(ctx context.Context, url string, exited chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case e := <-exited:
			exited <- e
			return fmt.Errorf("exited: %v", e)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond): // polls readiness
		}
	}
}

func (c *capacity) pids() []int {
	var pids []int
	if c.proxy != nil {
		pids = append(pids, c.proxy.pid())
	}
	for _, a := range c.apps {
		pids = append(pids, a.Process.Pid)
	}
	return pids
}

// close stops nginx, then the apps (SIGTERM, so they release their node
// IDs and ship their click journals).
func (c *capacity) close() {
	c.proxy.close()
	for i, a := range c.apps {
		a.Process.Signal(os.Interrupt) //nolint:errcheck // gone already is fine
		select {
		case <-c.done[i]:
		case <-time.After(20 * time.Second):
			a.Process.Kill() //nolint:errcheck // last resort
		}
	}
}
