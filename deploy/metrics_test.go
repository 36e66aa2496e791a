package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
)

// metricName finds the shortener's metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(shortener_[a-z0-9_]+|process_[a-z0-9_]+|go_[a-z0-9_]+)\b`)

// dashboardMetrics are the metric names the dashboard's queries use.
func dashboardMetrics(tb testing.TB) map[string][]string {
	tb.Helper()
	b, err := os.ReadFile("grafana/shortener.json")
	if err != nil {
		tb.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		tb.Fatalf("grafana/shortener.json: %v", err)
	}
	used := map[string][]string{}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			for _, m := range metricName.FindAllString(t.Expr, -1) {
				used[m] = append(used[m], "dashboard panel "+p.Title)
			}
		}
	}
	if len(used) == 0 {
		tb.Fatal("the dashboard names no metric")
	}
	return used
}

// alertMetrics are the metric names the alert rules use.
func alertMetrics(tb testing.TB) map[string][]string {
	tb.Helper()
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	used := map[string][]string{}
	alert := ""
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.TrimSpace(l); strings.HasPrefix(f, "- alert:") {
			alert = strings.TrimSpace(strings.TrimPrefix(f, "- alert:"))
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.Contains(l, "description:") || strings.Contains(l, "summary:") {
			continue
		}
		for _, m := range metricName.FindAllString(l, -1) {
			used[m] = append(used[m], "alert "+alert)
		}
	}
	return used
}

// TestDashboardAndAlertsUseExportedMetrics starts a real app on a real
// stack, drives a little traffic through it, and checks that every metric
// the Grafana dashboard and the alert rules query is in its /metrics.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	s := stacktest.Start(t)
	bin := filepath.Join(t.TempDir(), "shortener")
	build := exec.Command("go", "build", "-o", bin, "./cmd/shortener")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the app: %v\n%s", err, out)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	app := exec.CommandContext(ctx, bin)
	app.Env = append(os.Environ(),
		"SHORTENER_NODE_ID=auto", "SHORTENER_ADDR="+strings.TrimPrefix(base, "http://"), "SHORTENER_BASE_URL="+base,
		"SHORTENER_MYSQL_DSN="+s.MySQLDSN(), "SHORTENER_REDIS_MASTER="+s.MasterName(),
		// A node list of one: the Galera metrics the alerts use are
		// exported as on a cluster (a plain MariaDB counts as healthy).
		"SHORTENER_MYSQL_NODES="+s.MySQL().Addr(),
		"SHORTENER_REDIS_SENTINELS="+strings.Join(s.SentinelAddrs(), ","),
		"SHORTENER_REDIS_PASSWORD="+s.RedisPassword(), "SHORTENER_SENTINEL_PASSWORD="+s.SentinelPassword(),
		"SHORTENER_NODE_LEASE_TTL=600ms", "SHORTENER_DRAIN_TIMEOUT=100ms", "SHORTENER_CLICKS_DIR="+t.TempDir(),
		"SHORTENER_DEV_CODE_KEY=true")
	logs := &strings.Builder{}
	app.Stdout, app.Stderr = logs, logs
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		app.Wait() //nolint:errcheck // killed
		if t.Failed() {
			t.Logf("app log:\n%s", logs)
		}
	})
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	poll.Until(t, "the app ready", func() error {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		return nil
	})
	// Traffic that touches every tier: a create, lookups (L1 miss, Redis,
	// MySQL), an unknown code.
	code, err := create(ctx, client, base, "https://example.com/metrics", "metrics-1")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := follow(ctx, client, base, code, "https://example.com/metrics"); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := client.Get(base + "/nosuchcode1"); err == nil {
		resp.Body.Close()
	}

	exported := map[string]bool{}
	// Lease renewals come every third of the TTL: wait for the first.
	poll.Until(t, "the first lease renewal in /metrics", func() error {
		resp, err := client.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		exported = map[string]bool{}
		for _, l := range strings.Split(string(body), "\n") {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			name := l[:strings.IndexAny(l, "{ ")]
			exported[name] = true
		}
		if !strings.Contains(string(body), `shortener_node_lease_renewals_total{result="ok"}`) {
			return errors.New("no successful renewal counted")
		}
		return nil
	})
	used := dashboardMetrics(t)
	for m, where := range alertMetrics(t) {
		used[m] = append(used[m], where...)
	}
	for _, m := range slices.Sorted(func(yield func(string) bool) {
		for m := range used {
			if !yield(m) {
				return
			}
		}
	}) {
		if !exported[m] {
			t.Errorf("%s is not in the app's /metrics; used by %s", m, strings.Join(slices.Compact(used[m]), ", "))
		}
	}
	t.Logf("%d metric names used by the dashboard and alerts, all exported", len(used))
}
