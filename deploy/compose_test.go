package deploy

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
)

// composeEnv is what compose.yaml needs from its environment.
var composeEnv = []string{"SHORTENER_DB_PASSWORD=pw", "SHORTENER_CODE_KEY=0123456789abcdef",
	"SHORTENER_REDIS_PASSWORD=redis_pw", "SHORTENER_SENTINEL_PASSWORD=sentinel_pw"}

// minHealthInterval is how often a healthcheck may run at most: each is
// a docker exec, about 0.2 s of CPU on a 2-core machine, and ten checks a
// second starved the containers (docs/chaos finding 20).
const minHealthInterval = 5 * time.Second

// TestComposeFile loads compose.yaml with compose-go, the Compose
// Specification's reference loader, and checks what the stack relies on.
func TestComposeFile(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"}, cli.WithName("shortener"), cli.WithEnv(composeEnv))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	want := []string{"app1", "app2", "mariadb", "nginx", "redis-1", "redis-2", "redis-3", "sentinel-1", "sentinel-2", "sentinel-3"}
	if got := strings.Join(p.ServiceNames(), ","); got != strings.Join(want, ",") {
		t.Errorf("services %s, want %s", got, strings.Join(want, ","))
	}
	for name, s := range p.Services {
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s has no healthcheck", name)
		} else if i := s.HealthCheck.Interval; i == nil || time.Duration(*i) < minHealthInterval {
			t.Errorf("%s: healthcheck every %v, want %s or longer: each is a docker exec (compose.yaml's x-health)", name, i, minHealthInterval)
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %d on %q: only 127.0.0.1", name, port.Target, port.HostIP)
			}
		}
	}
	for _, app := range []string{"app1", "app2"} {
		s := p.Services[app]
		if v := s.Environment["SHORTENER_NODE_ID"]; v == nil || *v != "auto" {
			t.Errorf("%s: SHORTENER_NODE_ID %v, want auto", app, v)
		}
		if len(s.Volumes) == 0 || s.Volumes[0].Target != "/var/lib/shortener" {
			t.Errorf("%s: no volume for its click journal", app)
		}
	}
	if len(p.Services["mariadb"].Volumes) == 0 {
		t.Error("mariadb keeps its data in no volume")
	}
	// Without the galera profile MariaDB runs alone, and the apps know it
	// by their DSN alone.
	for name, k := range map[string]string{"mariadb": "MARIADB_GALERA_NODES", "app1": "SHORTENER_MYSQL_NODES", "app2": "SHORTENER_MYSQL_NODES"} {
		if v := p.Services[name].Environment[k]; v == nil || *v != "" {
			t.Errorf("%s: %s set without the galera profile, want empty", name, k)
		}
	}
	// Every container has a fixed address in the stack's subnet, and
	// Redis, the sentinels and the apps name each other by address only:
	// a name would send a sentinel to Docker's DNS, which forgets a
	// stopped container (the sentinel then blocks on the lookup and enters
	// TILT instead of failing over).
	network, ok := p.Networks["shortener"]
	if !ok || len(network.Ipam.Config) != 1 {
		t.Fatalf("no shortener network with one subnet: %+v", p.Networks)
	}
	subnet, err := netip.ParsePrefix(network.Ipam.Config[0].Subnet)
	if err != nil {
		t.Fatalf("the shortener network's subnet: %v", err)
	}
	seen := map[netip.Addr]string{}
	for name, s := range p.Services {
		n := s.Networks["shortener"]
		if len(s.Networks) != 1 || n == nil {
			t.Errorf("%s: networks %v, want the shortener network only", name, s.Networks)
			continue
		}
		a, err := netip.ParseAddr(n.Ipv4Address)
		if err != nil || !subnet.Contains(a) || seen[a] != "" {
			t.Errorf("%s: address %q (%v): want a fixed address of its own in %s", name, n.Ipv4Address, err, subnet)
		}
		seen[a] = name
		for k, v := range s.Environment {
			if v == nil || k == "SHORTENER_INSTANCE" || k == "SHORTENER_BASE_URL" {
				continue
			}
			for _, host := range []string{"redis-", "sentinel-", "mariadb:", "app1", "app2"} {
				if strings.Contains(*v, host) {
					t.Errorf("%s: %s=%s names a host (%s...): use its fixed address", name, k, *v, host)
				}
			}
		}
	}
	if got, nginx := p.Services["app1"].Environment["SHORTENER_TRUSTED_PROXIES"], p.Services["nginx"].Networks["shortener"]; got == nil || nginx == nil || *got != nginx.Ipv4Address {
		t.Errorf("app1 trusts X-Real-IP from %v, want nginx's address", got)
	}
	conf, err := os.ReadFile("conf/sentinel.conf")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(conf), "hostnames") {
		t.Errorf("conf/sentinel.conf resolves or announces host names:\n%s", conf)
	}
	// Every Redis node and sentinel requires its password, which the apps
	// send; the healthchecks authenticate.
	for name, s := range p.Services {
		redis, sentinel := strings.HasPrefix(name, "redis-"), strings.HasPrefix(name, "sentinel-")
		if !redis && !sentinel && !strings.HasPrefix(name, "app") {
			continue
		}
		for k, want := range map[string]string{"SHORTENER_REDIS_PASSWORD": "redis_pw", "SHORTENER_SENTINEL_PASSWORD": "sentinel_pw"} {
			if v := s.Environment[k]; v == nil || *v != want {
				t.Errorf("%s: %s=%v, want the environment's %q", name, k, v, want)
			}
		}
		role := map[bool]string{true: "redis", false: "sentinel"}[redis]
		if test := strings.Join(s.HealthCheck.Test, " "); (redis || sentinel) && test != "CMD /usr/local/bin/shortener-redis ping "+role {
			t.Errorf("%s: healthcheck %q, want the entrypoint's authenticated ping", name, test)
		}
	}
	// Without the secrets it refuses to load, rather than start with blanks.
	for _, missing := range []string{"SHORTENER_DB_PASSWORD", "SHORTENER_REDIS_PASSWORD", "SHORTENER_SENTINEL_PASSWORD"} {
		var env []string
		for _, e := range composeEnv {
			if !strings.HasPrefix(e, missing+"=") {
				env = append(env, e)
			}
		}
		opts, _ = cli.NewProjectOptions([]string{"compose.yaml"}, cli.WithName("shortener"), cli.WithEnv(env))
		if _, err := opts.LoadProject(context.Background()); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("compose.yaml without %s: got %v, want an error naming it", missing, err)
		}
	}
}

// TestComposeGaleraProfile loads compose.yaml with the galera profile
// and the settings compose.sh writes for it: three MariaDB nodes, each a
// fixed address of its own, volume of its own and the entrypoint's
// Synced check; the nodes and the apps given one list, in compose.sh's
// order, mariadb first (the apps write through the first healthy node,
// and a new cluster is bootstrapped by it).
func TestComposeGaleraProfile(t *testing.T) {
	// The list compose.sh writes to deploy/.env, for the default network.
	sh, err := os.ReadFile("compose.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*local nodes=(\S+)$`).FindSubmatch(sh)
	if m == nil {
		t.Fatal("compose.sh: no `local nodes=...` line: where does it write SHORTENER_MYSQL_NODES?")
	}
	nodes := strings.ReplaceAll(string(m[1]), "$net", "172.29.53")
	env := append(slices.Clone(composeEnv), "SHORTENER_MYSQL_NODES="+nodes)
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"}, cli.WithName("shortener"), cli.WithEnv(env), cli.WithProfiles([]string{"galera"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	var want []string
	volumes := map[string]string{}
	for i, name := range []string{"mariadb", "mariadb-2", "mariadb-3"} {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("no %s with the galera profile: %v", name, p.ServiceNames())
		}
		addr := s.Networks["shortener"].Ipv4Address
		want = append(want, addr+":3306")
		e := func(k string) string {
			if v := s.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		if e("MARIADB_GALERA_NODES") != nodes || e("MARIADB_GALERA_SELF") != addr {
			t.Errorf("%s: MARIADB_GALERA_NODES=%q MARIADB_GALERA_SELF=%q, want %q and its address %s", name, e("MARIADB_GALERA_NODES"), e("MARIADB_GALERA_SELF"), nodes, addr)
		}
		if got := strings.Join(s.HealthCheck.Test, " "); got != "CMD /usr/local/bin/shortener-mariadb ready" {
			t.Errorf("%s: healthcheck %q, want the entrypoint's Synced check", name, got)
		}
		if time.Duration(*s.HealthCheck.Interval) < minHealthInterval {
			t.Errorf("%s: healthcheck every %v, want %s or longer", name, *s.HealthCheck.Interval, minHealthInterval)
		}
		if len(s.Volumes) != 1 || s.Volumes[0].Target != "/var/lib/mysql" || volumes[s.Volumes[0].Source] != "" {
			t.Errorf("%s: volumes %+v, want one of its own on /var/lib/mysql", name, s.Volumes)
		} else {
			volumes[s.Volumes[0].Source] = name
		}
		// mariadb also runs alone, the others only in the cluster, and
		// start beside it: after a stop in which one of them stopped
		// last, mariadb waits for it to bootstrap the cluster.
		if i == 0 {
			if len(s.Profiles) != 0 {
				t.Errorf("mariadb: profiles %v, want none", s.Profiles)
			}
			continue
		}
		if !slices.Equal(s.Profiles, []string{"galera"}) || e("MARIADB_GALERA_REQUIRED") != "1" {
			t.Errorf("%s: profiles %v, MARIADB_GALERA_REQUIRED %q: want the galera profile only, and no start alone", name, s.Profiles, e("MARIADB_GALERA_REQUIRED"))
		}
		if d, ok := s.DependsOn["mariadb"]; !ok || d.Condition != "service_started" {
			t.Errorf("%s: depends on mariadb %+v, want service_started", name, d)
		}
	}
	if nodes != strings.Join(want, ",") {
		t.Errorf("compose.sh writes SHORTENER_MYSQL_NODES=%s; the nodes are %s", nodes, strings.Join(want, ","))
	}
	for _, app := range []string{"app1", "app2"} {
		got := ""
		if v := p.Services[app].Environment["SHORTENER_MYSQL_NODES"]; v != nil {
			got = *v
		}
		if got != nodes {
			t.Errorf("%s: SHORTENER_MYSQL_NODES=%q, want %s", app, got, nodes)
		}
	}
}

// TestComposeConfigDocker runs `docker-compose config -q`, the tool that
// brings the stack up, on the file, with and without the galera profile.
func TestComposeConfigDocker(t *testing.T) {
	requireTool(t, "docker-compose", "docker-compose")
	for _, extra := range [][]string{nil, {"COMPOSE_PROFILES=galera", "SHORTENER_MYSQL_NODES=172.29.53.10:3306,172.29.53.14:3306,172.29.53.15:3306"}} {
		cmd := exec.Command("docker-compose", "-p", "shortener", "-f", "compose.yaml", "config", "-q")
		cmd.Env = append(append(os.Environ(), composeEnv...), extra...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%v docker-compose config -q: %v\n%s", extra, err, out)
		}
	}
}

// TestAlertRules runs `promtool check rules` (Debian's prometheus package)
// on the alert rules.
func TestAlertRules(t *testing.T) {
	requireTool(t, "promtool", "prometheus")
	out, err := exec.Command("promtool", "check", "rules", "prometheus/alerts.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// requireTool skips without the program, or fails under
// SHORTENER_INTEGRATION=1 (make test, CI).
func requireTool(tb testing.TB, program, pkg string) {
	tb.Helper()
	if _, err := exec.LookPath(program); err == nil {
		return
	}
	msg := program + " is not installed: apt-get install " + pkg + " (as .ci/run does)"
	if os.Getenv("SHORTENER_INTEGRATION") == "1" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}
