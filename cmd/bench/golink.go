package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"shortener/internal/stack"
)

// golink is the peer the shortener is read against: Tailscale's Go link
// shortener, built from its source by the Go toolchain (the module named
// by -golink) and run in its development mode (plain HTTP on loopback,
// links in SQLite), with the hot links loaded from a snapshot file as its
// own export writes them. It answers a GET of a short name with a 302 to
// the long URL, as the apps do, and counts the click in memory.
type golink struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error
}

// buildGolink builds what spec names: a path to a golink binary, used as
// it is, or a module path and version ("…/cmd/golink@v…") for go install
// into dir. The error says why there is no golink row.
func buildGolink(ctx context.Context, spec, dir string) (string, error) {
	if spec == "" {
		return "", errors.New("-golink is empty")
	}
	if !strings.Contains(spec, "@") {
		if _, err := os.Stat(spec); err != nil {
			return "", errors.New("-golink names no golink binary and no module@version")
		}
		return spec, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", errors.New("no Go toolchain on PATH to build it with")
	}
	bin := filepath.Join(dir, "bin")
	cmd := exec.CommandContext(ctx, "go", "install", spec)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return "", fmt.Errorf("go install %s: %v: %s", spec, err, first)
	}
	return filepath.Join(bin, "golink"), nil
}

// golinkLink is a line of golink's snapshot format (its /.export).
type golinkLink struct {
	Short    string
	Long     string
	Created  time.Time
	LastEdit time.Time
	Owner    string
}

// startGolink runs binary in dev mode on a free loopback port with its
// database in dir and the first hot bench links loaded, and waits until
// it redirects the first.
func startGolink(ctx context.Context, binary, dir string, hot int) (_ *golink, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	snap := filepath.Join(dir, "snapshot.jsonl")
	f, err := os.Create(snap)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	now := time.Now().UTC()
	for i := range hot {
		l := benchLink(i, now)
		if err := enc.Encode(golinkLink{Short: l.Code, Long: l.URL, Created: now, LastEdit: now, Owner: "bench@example.com"}); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return nil, err
	}
	g := &golink{exited: make(chan error, 1)}
	if g.addr, err = freeAddr(); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "golink.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	g.cmd = exec.Command(binary, "-dev-listen", g.addr, "-sqlitedb", filepath.Join(dir, "golink.db"), "-snapshot", snap)
	g.cmd.Stdout, g.cmd.Stderr = log, log
	g.cmd.SysProcAttr = &syscall.SysProcAttr{}
	stack.KillWithParent(g.cmd.SysProcAttr) // not outliving the bench
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start golink: %w", err)
	}
	go func() { g.exited <- g.cmd.Wait() }()
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url()+"/"+benchCode(0), nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusFound {
				return g, nil
			}
			err = fmt.Errorf("golink answered %s for a loaded link", resp.Status)
		}
		select {
		case e := <-g.exited:
			g.exited <- e
			return nil, fmt.Errorf("golink exited: %v (see %s)", e, log.Name())
		case <-ctx.Done():
			return nil, fmt.Errorf("golink not ready: %w", err)
		case <-time.After(100 * time.Millisecond): // polls readiness
		}
	}
}

func (g *golink) url() string { return "http://" + g.addr }

func (g *golink) pid() int {
	if g == nil || g.cmd == nil || g.cmd.Process == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

func (g *golink) close() {
	if g == nil || g.cmd == nil || g.cmd.Process == nil {
		return
	}
	interrupt(g.cmd, g.exited, 10*time.Second)
}
