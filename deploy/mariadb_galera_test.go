package deploy

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Galera start of the MariaDB image's entrypoint, with mariadbd,
// the client, timeout and sleep replaced by shims on PATH: which starts
// bootstrap a cluster, which join, which recover their position first,
// and what the readiness check accepts. The compose end-to-end test
// (TestComposeGalera) runs the real thing: a new cluster, two joins by
// SST, a killed node's rejoin by IST.

// galeraShims are the programs the entrypoint runs, as scripts:
//
//	mariadbd  writes its arguments, one a line, to calls/<n>, those of
//	          its --defaults-file's [mysqld] group first; with
//	          --wsrep-recover it logs SHIM_RECOVERED as the recovered
//	          position to its --log-error file
//	timeout   "timeout 2 bash -c 'exec 3<>/dev/tcp/HOST/4567'", the
//	          entrypoint's question whether HOST listens, answers yes for
//	          the hosts in SHIM_LISTENING once it has been asked
//	          SHIM_LISTEN_AFTER times; anything else runs as asked
//	sleep     returns at once
//	mariadb   prints SHIM_STATUS, or fails if it is "fail"
var galeraShims = map[string]string{
	"mariadbd": `#!/bin/sh
n=$(ls "$SHIM_DIR/calls" | wc -l)
case $1 in --defaults-file=*)
	sed -n '/^\[mysqld\]/,/^\[/s/^\([a-z]\)/--\1/p' "${1#--defaults-file=}" >"$SHIM_DIR/calls/$n"
	shift ;;
esac
printf '%s\n' "$@" >>"$SHIM_DIR/calls/$n"
for a; do
	case $a in --log-error=*) log=${a#--log-error=} ;; esac
done
case " $* " in *" --wsrep-recover "*)
	echo "2026-12-05 14:42:59 0 [Note] WSREP: Recovered position: $SHIM_RECOVERED" >"$log" ;;
esac
exit 0
`,
	"timeout": `#!/bin/sh
case "$*" in
*/dev/tcp/*)
	host=$(printf '%s' "$*" | sed 's|.*/dev/tcp/\([^/]*\)/.*|\1|')
	asked=$(($(cat "$SHIM_DIR/asked" 2>/dev/null || echo 0) + 1))
	echo $asked >"$SHIM_DIR/asked"
	[ "$asked" -gt "${SHIM_LISTEN_AFTER:-0}" ] || exit 1
	for h in $SHIM_LISTENING; do [ "$h" = "$host" ] && exit 0; done
	exit 1 ;;
esac
shift
exec "$@"
`,
	"sleep": "#!/bin/sh\nexit 0\n",
	"mariadb": `#!/bin/sh
[ "$SHIM_STATUS" = fail ] && exit 1
printf '%b\n' "$SHIM_STATUS"
`,
}

// galeraStart is one run of the entrypoint.
type galeraStart struct {
	calls  [][]string // mariadbd's arguments, by call
	asked  int        // how often it asked whether a node listens
	out    string
	status int
}

// last is mariadbd's last call: the one the entrypoint exec'd.
func (g galeraStart) last() []string {
	if len(g.calls) == 0 {
		return nil
	}
	return g.calls[len(g.calls)-1]
}

func (g galeraStart) has(arg string) bool { return slices.Contains(g.last(), arg) }

// runEntrypoint runs mariadb/entrypoint.sh with args, env added to the
// shims' and a data directory holding grastate (none if empty).
func runEntrypoint(t *testing.T, grastate string, env []string, args ...string) galeraStart {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"bin", "calls", "data/mysql", "run", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, script := range galeraShims {
		if err := os.WriteFile(filepath.Join(dir, "bin", name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if grastate != "" {
		if err := os.WriteFile(filepath.Join(dir, "data", "grastate.dat"), []byte(grastate), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", append([]string{"mariadb/entrypoint.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "SHIM_DIR="+dir,
		"MARIADB_PASSWORD=pw", "MARIADB_DATADIR="+filepath.Join(dir, "data"), "MARIADB_RUNDIR="+filepath.Join(dir, "run"),
		"TMPDIR="+filepath.Join(dir, "tmp"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	var g galeraStart
	g.out = string(out)
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		g.status = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	for n := 0; ; n++ {
		b, err := os.ReadFile(filepath.Join(dir, "calls", fmt.Sprint(n)))
		if err != nil {
			break
		}
		g.calls = append(g.calls, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	}
	fmt.Sscan(readOr(filepath.Join(dir, "asked"), "0"), &g.asked) //nolint:errcheck // 0 if never asked
	return g
}

func readOr(path, or string) string {
	if b, err := os.ReadFile(path); err == nil {
		return string(b)
	}
	return or
}

func grastate(seqno int, safe int) string {
	return fmt.Sprintf("# GALERA saved state\nversion: 2.1\nuuid:    1358d693-f0ba-11f1-9a92-5f07fef7fba4\nseqno:   %d\nsafe_to_bootstrap: %d\n", seqno, safe)
}

// TestMariaDBGaleraStart: the entrypoint bootstraps a new cluster only
// from the node no cluster can exist without, joins otherwise, and
// recovers a crashed node's position so that it can rejoin by IST.
func TestMariaDBGaleraStart(t *testing.T) {
	const nodes = "MARIADB_GALERA_NODES=10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306"
	const recovered = "1358d693-f0ba-11f1-9a92-5f07fef7fba4:42"
	// The group communication's timeouts are the local stack's, which
	// the chaos runs and internal/stack's Galera tests measure.
	src, err := os.ReadFile("../internal/stack/galera.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const galeraTimeouts = "([^"]+)"$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("internal/stack/galera.go: no const galeraTimeouts: where are the local stack's Galera timeouts now?")
	}
	timeouts := string(m[1])
	self := func(n int) string { return fmt.Sprintf("MARIADB_GALERA_SELF=10.0.0.%d", n) }
	tests := []struct {
		name      string
		grastate  string
		env       []string
		bootstrap bool
		recover   bool // --wsrep-recover first, then --wsrep-start-position
		wantOut   string
	}{
		{name: "new install, first node, no other listens", env: []string{nodes, self(1)}, bootstrap: true,
			wantOut: "bootstrapping a new cluster"},
		{name: "new install, first node, another listens: a cluster runs", env: []string{nodes, self(1), "SHIM_LISTENING=10.0.0.3"}},
		{name: "new install, second node: waits for one to listen, then joins",
			env: []string{nodes, self(2), "SHIM_LISTENING=10.0.0.1", "SHIM_LISTEN_AFTER=5"}, wantOut: "waiting for another node"},
		{name: "stopped last (safe_to_bootstrap: 1)", grastate: grastate(17, 1), env: []string{nodes, self(3), "SHIM_LISTENING=10.0.0.1"},
			bootstrap: true, wantOut: "stopped last"},
		{name: "stopped, not last", grastate: grastate(17, 0), env: []string{nodes, self(2)}},
		{name: "first node stopped, not last: never a second cluster", grastate: grastate(17, 0), env: []string{nodes, self(1)}},
		{name: "crashed", grastate: grastate(-1, 0), env: []string{nodes, self(1), "SHIM_RECOVERED=" + recovered}, recover: true,
			wantOut: "recovered position " + recovered},
		{name: "crashed, nothing to recover", grastate: grastate(-1, 0), env: []string{nodes, self(2), "SHIM_RECOVERED="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := runEntrypoint(t, tt.grastate, tt.env)
			if g.status != 0 {
				t.Fatalf("exit %d:\n%s", g.status, g.out)
			}
			if got := g.has("--wsrep-new-cluster"); got != tt.bootstrap {
				t.Errorf("--wsrep-new-cluster: %v, want %v\n%s", got, tt.bootstrap, g.out)
			}
			for _, want := range []string{"--wsrep-on=ON", "--wsrep-cluster-address=gcomm://10.0.0.1,10.0.0.2,10.0.0.3",
				"--wsrep-sst-method=mariabackup", "--binlog-format=ROW", "--innodb-autoinc-lock-mode=2"} {
				if !g.has(want) {
					t.Errorf("mariadbd without %s: %q", want, g.last())
				}
			}
			if !slices.ContainsFunc(g.last(), func(a string) bool {
				return strings.HasPrefix(a, "--wsrep-provider-options=") && strings.Contains(a, timeouts)
			}) {
				t.Errorf("mariadbd's provider options without the local stack's timeouts %s: %q", timeouts, g.last())
			}
			// The writer is the first healthy node: donors from the end.
			me := strings.TrimPrefix(tt.env[1], "MARIADB_GALERA_SELF=")
			var donors []string
			for _, n := range []string{"10.0.0.3", "10.0.0.2", "10.0.0.1"} {
				if n != me {
					donors = append(donors, n)
				}
			}
			if want := "--wsrep-sst-donor=" + strings.Join(donors, ",") + ","; !g.has(want) {
				t.Errorf("mariadbd without %s: %q", want, g.last())
			}
			recovering := len(g.calls) == 2 && slices.Contains(g.calls[0], "--wsrep-recover")
			if recovering != (tt.grastate != "" && strings.Contains(tt.grastate, "seqno:   -1")) {
				t.Errorf("calls %q: a position recovery only after a crash (seqno -1)", g.calls)
			}
			if got := g.has("--wsrep-start-position=" + recovered); got != tt.recover {
				t.Errorf("--wsrep-start-position=%s: %v, want %v", recovered, got, tt.recover)
			}
			if !strings.Contains(g.out, tt.wantOut) {
				t.Errorf("output %q, want %q in it", g.out, tt.wantOut)
			}
			if strings.Contains(tt.name, "waits") && g.asked < 5 {
				t.Errorf("asked %d times whether a node listens; it must wait until one does (5)", g.asked)
			}
		})
	}

	// Misconfigurations refuse to start rather than run alone.
	for name, env := range map[string][]string{
		"not in its own list":  {nodes, "MARIADB_GALERA_SELF=10.0.0.9"},
		"no list where needed": {"MARIADB_GALERA_REQUIRED=1"},
		"no name of its own":   {nodes},
		"required, list empty": {"MARIADB_GALERA_NODES=", "MARIADB_GALERA_REQUIRED=1", self(1)},
	} {
		if g := runEntrypoint(t, "", env); g.status == 0 || len(g.calls) > 0 {
			t.Errorf("%s: exit %d, mariadbd run %d times; want a refusal\n%s", name, g.status, len(g.calls), g.out)
		}
	}
	// Without a list: MariaDB alone, as before.
	if g := runEntrypoint(t, "", nil); g.status != 0 || len(g.calls) != 1 || slices.ContainsFunc(g.last(), func(a string) bool {
		return strings.HasPrefix(a, "--wsrep")
	}) {
		t.Errorf("without MARIADB_GALERA_NODES: exit %d, calls %q; want one plain mariadbd\n%s", g.status, g.calls, g.out)
	}
}

// TestMariaDBReady: the healthcheck and readiness probe accept a Galera
// node only when it is ready, Synced and in the primary component: not
// a donor, a joiner or a node cut off from the majority.
func TestMariaDBReady(t *testing.T) {
	const nodes = "MARIADB_GALERA_NODES=10.0.0.1:3306,10.0.0.2:3306"
	status := func(ready string, state int, cluster string) string {
		return fmt.Sprintf("wsrep_cluster_status\t%s\nwsrep_local_state\t%d\nwsrep_ready\t%s", cluster, state, ready)
	}
	tests := []struct {
		name  string
		env   []string
		ready bool
	}{
		{"synced", []string{nodes, "SHIM_STATUS=" + status("ON", 4, "Primary")}, true},
		{"donor", []string{nodes, "SHIM_STATUS=" + status("ON", 2, "Primary")}, false},
		{"joined, catching up", []string{nodes, "SHIM_STATUS=" + status("ON", 3, "Primary")}, false},
		{"cut off from the majority", []string{nodes, "SHIM_STATUS=" + status("OFF", 4, "non-Primary")}, false},
		{"not ready", []string{nodes, "SHIM_STATUS=" + status("OFF", 4, "Primary")}, false},
		{"state 40, not 4", []string{nodes, "SHIM_STATUS=" + status("ON", 40, "Primary")}, false},
		{"no answer", []string{nodes, "SHIM_STATUS=fail"}, false},
		{"alone, answering", []string{"SHIM_STATUS="}, true},
		{"alone, no answer", []string{"SHIM_STATUS=fail"}, false},
	}
	for _, tt := range tests {
		g := runEntrypoint(t, "", tt.env, "ready")
		if got := g.status == 0; got != tt.ready {
			t.Errorf("%s: ready %v (exit %d), want %v\n%s", tt.name, got, g.status, tt.ready, g.out)
		}
		if len(g.calls) > 0 {
			t.Errorf("%s: ready started mariadbd", tt.name)
		}
	}
}
