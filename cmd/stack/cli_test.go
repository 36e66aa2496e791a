package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"shortener/internal/chaos"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// runCLI runs the command line args and returns what it printed.
func runCLI(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"-dir", dir, "kill"}, "kill needs at least one NAME"},
		{[]string{"-dir", dir, "up", "app1"}, "up takes no names"},
		{[]string{"status", "-dir", dir, "extra"}, "status takes no names"},
	} {
		_, err := runCLI(t, tc.args...)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("stack %q: got %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
	if _, err := runCLI(t, "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("stack -h: got %v, want flag.ErrHelp", err)
	}
}

func TestNoStack(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"status", "down"} {
		out, err := runCLI(t, "-dir", dir, cmd)
		if err != nil || !strings.Contains(out, "no stack in "+dir) {
			t.Errorf("stack %s without a stack: got %q, %v, want it to say there is none", cmd, out, err)
		}
	}
	if _, err := runCLI(t, "-dir", dir, "kill", "app1"); !errors.Is(err, stack.ErrNoStack) {
		t.Errorf("kill without a stack: got %v, want ErrNoStack", err)
	}
}

func TestEnsurePrograms(t *testing.T) {
	missing := []stack.Program{{Name: "nginx", Package: "nginx"}, {Name: "mariadbd", Package: "mariadb-server"}}
	for _, tc := range []struct {
		name        string
		missing     []stack.Program
		euid        int
		hasApt      bool
		installs    bool   // apt-get install fixes it
		wantRuns    int    // apt-get runs
		wantErrText string // "" for no error
	}{
		{"all installed", nil, 0, true, false, 0, ""},
		{"root with apt-get", missing, 0, true, true, 2, ""},
		{"root, install does not help", missing, 0, true, false, 2, "after apt-get install"},
		{"not root", missing, 1000, true, false, 0, "sudo apt-get install -y nginx mariadb-server"},
		{"no apt-get", missing, 0, false, false, 0, "install the Debian packages nginx mariadb-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs [][]string
			installed := false
			sys := system{
				programs: stack.Programs(),
				missing: func() []stack.Program {
					if installed {
						return nil
					}
					return tc.missing
				},
				euid: tc.euid,
				lookPath: func(name string) (string, error) {
					if tc.hasApt && name == "apt-get" {
						return "/usr/bin/apt-get", nil
					}
					return "", errors.New("not found")
				},
				run: func(_ context.Context, env []string, name string, args ...string) error {
					if !slices.Contains(env, "DEBIAN_FRONTEND=noninteractive") {
						t.Errorf("apt-get env %q lacks DEBIAN_FRONTEND=noninteractive", env)
					}
					runs = append(runs, append([]string{name}, args...))
					if slices.Contains(args, "install") {
						installed = tc.installs
					}
					return nil
				},
			}
			err := ensurePrograms(context.Background(), sys, io.Discard)
			switch {
			case tc.wantErrText == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.wantErrText != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrText)):
				t.Fatalf("got %v, want an error saying %q", err, tc.wantErrText)
			case tc.wantErrText != "" && !errors.Is(err, stack.ErrMissingProgram):
				t.Fatalf("got %v, want ErrMissingProgram", err)
			}
			if len(runs) != tc.wantRuns {
				t.Fatalf("apt-get runs: got %q, want %d", runs, tc.wantRuns)
			}
			if tc.wantRuns == 2 {
				want := "/usr/bin/apt-get install -y --no-install-recommends mariadb-server redis-server redis-sentinel nginx iptables"
				if strings.Join(runs[0], " ") != "/usr/bin/apt-get update" || strings.Join(runs[1], " ") != want {
					t.Errorf("apt-get runs: got %q, want update then %q", runs, want)
				}
			}
		})
	}
}

// TestUpStatusDown drives the CLI as a person would: up, up again, status,
// kill, up (which restarts what is down), a link created and followed,
// down.
func TestUpStatusDown(t *testing.T) {
	stacktest.RequirePrograms(t)
	o := options{
		dir: t.TempDir(), bin: stacktest.AppBinary(t), killWithParent: true,
		sys: system{missing: stack.MissingPrograms}, // installed, as RequirePrograms checked
	}
	var out, progress bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output:\n%s\nprogress:\n%s", out.String(), progress.String())
		}
		down(o.dir, io.Discard)
	})
	ctx := context.Background()
	if err := up(ctx, o, &out, &progress); err != nil {
		t.Fatal(err)
	}
	s, err := stack.Attach(o.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "stack is up") || !strings.Contains(out.String(), s.BaseURL()) {
		t.Errorf("up printed %q, want the base URL %s", out.String(), s.BaseURL())
	}
	if err := up(ctx, o, &out, &progress); err != nil || !strings.Contains(out.String(), "already running") {
		t.Fatalf("second up: got %v, want it to say the stack is already running", err)
	}

	status := func() string {
		t.Helper()
		got, err := runCLI(t, "status", "-dir", o.dir)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	st := status()
	for _, p := range s.Procs() {
		if !regexp.MustCompile(`(?m)^` + p.Name + `\s+\d+\s+\d+\s+up$`).MatchString(st) {
			t.Errorf("status lacks %s up:\n%s", p.Name, st)
		}
	}
	if !strings.Contains(st, "master: redis-1 (") {
		t.Errorf("status does not name redis-1 as master:\n%s", st)
	}
	if got, err := runCLI(t, "-dir", o.dir, "master"); err != nil || !strings.HasPrefix(got, "redis-1 127.0.0.1:") {
		t.Errorf("master: got %q, %v, want redis-1", got, err)
	}

	if got, err := runCLI(t, "kill", "-dir", o.dir, "app2"); err != nil || !strings.Contains(got, "killed app2") {
		t.Fatalf("kill app2: got %q, %v", got, err)
	}
	if st := status(); !regexp.MustCompile(`(?m)^app2\s+-\s+\d+\s+down$`).MatchString(st) {
		t.Errorf("status after kill lacks app2 down:\n%s", st)
	}
	out.Reset()
	if err := up(ctx, o, &out, &progress); err != nil || !strings.Contains(out.String(), "restarted app2") {
		t.Fatalf("up with app2 down: got %v, want it to restart app2", err)
	}

	followLink(t, s.BaseURL(), "https://example.com/x")

	pids := map[string]int{}
	for _, p := range s.Procs() {
		pids[p.Name] = p.Pid()
	}
	got, err := runCLI(t, "down", "-dir", o.dir)
	if err != nil || !strings.Contains(got, "stopped 10 processes") {
		t.Fatalf("down: got %q, %v", got, err)
	}
	for name, pid := range pids {
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("%s (pid %d) still exists after down", name, pid)
		}
	}
	if st := status(); strings.Contains(st, " up") {
		t.Errorf("status after down shows a process up:\n%s", st)
	}
}

// TestGaleraPackages: with SHORTENER_STACK_MYSQL=galera, up installs the
// Galera packages besides the stack's.
func TestGaleraPackages(t *testing.T) {
	for _, galera := range []bool{false, true} {
		pkgs := stack.Packages(hostSystem(io.Discard, io.Discard, galera).programs)
		for _, pkg := range []string{"galera-4", "mariadb-backup", "socat"} {
			if slices.Contains(pkgs, pkg) != galera {
				t.Errorf("galera %v: packages %q: got %s among them %v, want %v", galera, pkgs, pkg, !galera, galera)
			}
		}
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"status"}, func(k string) string {
		if k == "SHORTENER_STACK_MYSQL" {
			return "postgres"
		}
		return ""
	}, &out, &errOut)
	var u usageError
	if !errors.As(err, &u) {
		t.Errorf("SHORTENER_STACK_MYSQL=postgres: got %v, want a usage error", err)
	}
}

// TestUpGalera drives the CLI with MariaDB as a Galera cluster: up,
// status with each node's place in the cluster, a link created and
// followed through apps that know every node, every node killed and
// brought back by up (from the most advanced), down.
func TestUpGalera(t *testing.T) {
	stacktest.RequirePrograms(t)
	stacktest.RequireGalera(t)
	o := options{
		dir: t.TempDir(), bin: stacktest.AppBinary(t), galera: true, killWithParent: true,
		sys: hostSystem(io.Discard, io.Discard, true), // installed, as Require… checked
	}
	var out, progress bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output:\n%s\nprogress:\n%s", out.String(), progress.String())
		}
		down(o.dir, io.Discard)
	})
	ctx := context.Background()
	if err := up(ctx, o, &out, &progress); err != nil {
		t.Fatal(err)
	}
	s, err := stack.Attach(o.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Galera() || len(s.MySQLNodes()) != 3 {
		t.Fatalf("up with galera: got %d MariaDB nodes (galera %v), want a cluster of 3", len(s.MySQLNodes()), s.Galera())
	}
	synced := func() {
		t.Helper()
		st, err := runCLI(t, "status", "-dir", o.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s.MySQLNodes() {
			if !regexp.MustCompile(`(?m)^  ` + p.Name + `\s+Synced, Primary, cluster size 3$`).MatchString(st) {
				t.Errorf("status lacks %s synced in a primary component of 3:\n%s", p.Name, st)
			}
		}
	}
	synced()
	followLink(t, s.BaseURL(), "https://example.com/galera")

	for _, p := range s.MySQLNodes() {
		if got, err := runCLI(t, "kill", "-dir", o.dir, p.Name); err != nil || !strings.Contains(got, "killed "+p.Name) {
			t.Fatalf("kill %s: got %q, %v", p.Name, got, err)
		}
	}
	out.Reset()
	if err := up(ctx, o, &out, &progress); err != nil || !strings.Contains(out.String(), "restarted mysql-3") {
		t.Fatalf("up with every node down: got %v, want it to restart them", err)
	}
	synced()
	followLink(t, s.BaseURL(), "https://example.com/galera-again")
}

// followLink does what the README tells a user to do: create a link to
// url through nginx at base, and follow it.
func followLink(tb testing.TB, base, url string) {
	tb.Helper()
	c := chaos.NewClient(1)
	resp, err := c.Post(base+"/api/v1/links", "application/json", strings.NewReader(`{"url":"`+url+`"}`))
	if err != nil {
		tb.Fatal(err)
	}
	var link struct {
		ShortURL string `json:"short_url"`
	}
	json.NewDecoder(resp.Body).Decode(&link)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || link.ShortURL == "" {
		tb.Fatalf("create: got %d %+v, want 201 with a short URL", resp.StatusCode, link)
	}
	resp, err = c.Get(link.ShortURL)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != url {
		tb.Fatalf("follow %s: got %d %q, want 302 to %s", link.ShortURL, resp.StatusCode, resp.Header.Get("Location"), url)
	}
}
