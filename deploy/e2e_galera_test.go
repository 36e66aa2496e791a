package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shortener/internal/poll"
)

// galeraServices are compose.yaml's Galera nodes in the order of
// SHORTENER_MYSQL_NODES: the apps write through the first healthy one.
var galeraServices = []string{"mariadb", "mariadb-2", "mariadb-3"}

// TestComposeGalera brings the compose stack up with the galera profile
// (three MariaDB Galera nodes, the apps given all three) and kills the
// node the apps write through, mariadb, under open-model load: no
// redirect may fail, every create must be acknowledged (retried with its
// Idempotency-Key), and every acknowledged create must be in every node
// afterwards. Before the kill the apps write through mariadb (most
// transactions are committed there); after it through mariadb-2, the
// next of the list. Started again, still under load, mariadb rejoins
// (an IST: it catches up from a donor's write-set cache), the cluster
// has three synced members again and the apps write through mariadb
// again. Last, mariadb-2 leaves the group and stays up outside it (what
// a joiner evicted during its state transfer does): its entrypoint stops
// it, its container starts again and it rejoins. The test reports how
// long each step took, and asserts none of it.
func TestComposeGalera(t *testing.T) {
	host := dockerHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	started := time.Now()
	// A /24 of its own, away from the other test's and make deploy-up's.
	net := fmt.Sprintf("172.29.%d", 200+os.Getpid()%50)
	nodes := []string{net + ".10:3306", net + ".14:3306", net + ".15:3306"}
	p, client := startStack(ctx, t, host, "galera", net,
		"COMPOSE_PROFILES=galera\nSHORTENER_MYSQL_NODES="+strings.Join(nodes, ",")+"\n")
	for i, s := range galeraServices {
		if got := p.address(ctx, s) + ":3306"; got != nodes[i] {
			t.Fatalf("%s is at %s, want %s (SHORTENER_MYSQL_NODES' order)", s, got, nodes[i])
		}
	}
	up := time.Now()
	// Each question is one docker exec into mariadb-3 (never killed here)
	// asking all three nodes: once a second, as the failover's waits.
	waitGalera(ctx, t, p, "three synced nodes after up", nil)
	t.Logf("three synced nodes %s after up returned", time.Since(up).Round(100*time.Millisecond))

	first, err := create(ctx, client, p.base, "https://example.com/galera", "first")
	if err != nil {
		t.Fatal(err)
	}
	if err := follow(ctx, client, p.base, first, "https://example.com/galera"); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for i := range 200 {
		u := fmt.Sprintf("https://example.com/galera/%d", i)
		code, err := create(ctx, client, p.base, u, fmt.Sprintf("seed-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		links[code] = u
	}

	before := galeraStatus(ctx, t, p)
	l := startLoad(ctx, client, p.base, links, 200, 10)
	time.Sleep(3 * time.Second) // a baseline under load before the fault
	atKill := galeraStatus(ctx, t, p)
	// The apps write through the first node of the list. An app may leave
	// it for a moment (a probe that misses its deadline on a starved
	// machine), so the test wants most writes there, and logs the rest.
	if most, commits := busiest(before, atKill); most != "mariadb" {
		t.Errorf("under load before the kill the apps wrote through %s most, want mariadb, the first of the list: transactions committed through each (wsrep_local_commits): %v", most, commits)
	} else {
		t.Logf("before the kill, transactions committed through each node: %v", commits)
	}

	killed := time.Now()
	t.Logf("killing mariadb at %s", killed.Format("15:04:05.000"))
	if _, err := p.docker(ctx, "kill", p.container(ctx, "mariadb")); err != nil {
		t.Fatal(err)
	}
	var evicted, moved time.Duration
	poll.Every(t, "the apps to write through mariadb-2 after mariadb was killed", time.Second, func() error {
		st := galeraStatus(ctx, t, p)
		if evicted == 0 && st["mariadb-2"].size == 2 {
			evicted = time.Since(killed)
		}
		if n := st["mariadb-2"].commits - atKill["mariadb-2"].commits; n == 0 {
			return fmt.Errorf("mariadb-2 committed no transaction of its own since the kill: %v", st)
		}
		moved = time.Since(killed)
		return nil
	})
	t.Logf("killed mariadb: the others saw 2 members %s later, mariadb-2 had committed the apps' writes %s later (polled once a second)",
		evicted.Round(100*time.Millisecond), moved.Round(100*time.Millisecond))
	time.Sleep(3 * time.Second) // load on the two nodes left: time passing, not a wait
	// mariadb's counters are gone with it: it counts as 0 on both sides.
	if most, commits := busiest(atKill, galeraStatus(ctx, t, p)); most != "mariadb-2" {
		t.Errorf("after the kill the apps wrote through %s most, want mariadb-2, the next of the list: transactions committed through each: %v", most, commits)
	} else {
		t.Logf("after the kill, transactions committed through each node: %v", commits)
	}

	// Started again, mariadb rejoins under the same load.
	restarted := time.Now()
	t.Logf("starting mariadb again at %s", restarted.Format("15:04:05.000"))
	if _, err := p.docker(ctx, "start", p.container(ctx, "mariadb")); err != nil {
		t.Fatal(err)
	}
	waitGalera(ctx, t, p, "mariadb to rejoin: three synced nodes", nil)
	rejoined := time.Since(restarted)
	// Then the apps prefer it again: the first healthy node of the list.
	waitGalera(ctx, t, p, "the apps to write through mariadb again after it rejoined", func(st map[string]galeraNode) error {
		if st["mariadb"].commits == 0 {
			return fmt.Errorf("mariadb (its counters new since its start) committed no transaction of its own")
		}
		return nil
	})
	back := time.Since(restarted)
	res := l.stop()
	t.Logf("mariadb started again: three synced members %s later (IST: %s), the apps writing through it %s later",
		rejoined.Round(100*time.Millisecond), p.joinedBy(ctx, "mariadb"), back.Round(100*time.Millisecond))
	t.Logf("creates: the longest time without an acknowledgement %s; connections at most (Max_used_connections): %s",
		longestGap(res.acked).Round(100*time.Millisecond), p.galeraQuery(ctx, t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'MAX_USED_CONNECTIONS'"))

	lost := checkLoad(ctx, t, client, p.base, res)
	// Every acknowledged create is committed on every node, and the nodes
	// hold the same links (wsrep_sync_wait: each has applied all that the
	// cluster committed before the query).
	codes := make([]string, 0, len(res.created))
	for c := range res.created {
		codes = append(codes, "'"+c+"'") // base62: nothing to escape
	}
	slices.Sort(codes)
	if len(codes) == 0 {
		codes = []string{"''"}
	}
	sums := p.galeraQuery(ctx, t, "SET SESSION wsrep_sync_wait = 1; "+
		"SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT(code, ' ', url))), 0), SUM(code IN ("+strings.Join(codes, ",")+")) FROM links")
	for _, s := range galeraServices {
		f := strings.Fields(sums[s])
		if len(f) != 3 {
			t.Errorf("%s: links: %q", s, sums[s])
			continue
		}
		if got, _ := strconv.Atoi(f[2]); got != len(res.created) {
			t.Errorf("%s holds %d of the %d acknowledged creates", s, got, len(res.created))
		}
		if sums[s] != sums["mariadb"] {
			t.Errorf("%s's links (count, checksum, acknowledged) %q differ from mariadb's %q", s, sums[s], sums["mariadb"])
		}
	}
	t.Logf("ledger: %d acknowledged creates, %d lost through nginx; every node's links (count, checksum, acknowledged): %v",
		len(res.created), lost, sums["mariadb"])

	// A node that leaves the group and stays up outside it (as a joiner
	// the group evicted during its state transfer does) is stopped by its
	// entrypoint's watch, started again by the restart policy, and
	// rejoins. An empty cluster address closes its link to the group the
	// same way.
	node := p.container(ctx, "mariadb-2")
	restarts := func() string {
		out, err := p.docker(ctx, "inspect", "-f", "{{.RestartCount}}", node)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	was := restarts()
	left := time.Now()
	if _, err := p.docker(ctx, "exec", node, "mariadb", "--socket=/run/mysqld/mysqld.sock",
		"-e", "SET GLOBAL wsrep_cluster_address = ''"); err != nil {
		t.Fatal(err)
	}
	waitGalera(ctx, t, p, "mariadb-2 to be started again and rejoin after it left the group", func(map[string]galeraNode) error {
		if now := restarts(); now == was {
			return fmt.Errorf("mariadb-2's container has restarted %s times, as before it left", now)
		}
		return nil
	})
	t.Logf("mariadb-2 left the group: started again and synced %s later; whole test %s",
		time.Since(left).Round(100*time.Millisecond), time.Since(started).Round(time.Second))
}

// galeraNode is what one node says of itself and its cluster.
type galeraNode struct {
	size    int    // wsrep_cluster_size: members of its component
	state   int    // wsrep_local_state: 4 is Synced
	status  string // wsrep_cluster_status: Primary, or not
	commits int64  // wsrep_local_commits: transactions committed through it, since its start
	err     string // what the client said if the node did not answer
}

func (n galeraNode) String() string {
	if n.err != "" {
		return n.err
	}
	return fmt.Sprintf("size %d state %d %s commits %d", n.size, n.state, n.status, n.commits)
}

// synced says whether the node is a Synced member of a primary
// component of three.
func (n galeraNode) synced() bool {
	return n.err == "" && n.size == 3 && n.state == 4 && n.status == "Primary"
}

// galeraQuery runs sql (its result one line) on every Galera node as the
// app's user, from inside mariadb-3: one docker exec for all three.
// A node that does not answer gives "ERROR ...".
func (p *composeProject) galeraQuery(ctx context.Context, tb testing.TB, sql string) map[string]string {
	tb.Helper()
	const ask = `for n in $(echo "$MARIADB_GALERA_NODES" | tr , ' '); do
	out=$(MYSQL_PWD="$MARIADB_PASSWORD" mariadb -h "${n%:*}" -P "${n##*:}" -u shortener --connect-timeout=1 \
		--batch --skip-column-names -e "$1" shortener 2>&1) || out="ERROR $out"
	printf '%s\t%s\n' "$n" "$(printf '%s' "$out" | tr '\t\n' '  ')"
done`
	out, err := p.docker(ctx, "exec", p.container(ctx, "mariadb-3"), "sh", "-c", ask, "sh", sql)
	if err != nil {
		tb.Fatalf("asking the Galera nodes from mariadb-3: %v", err)
	}
	byAddr := map[string]string{}
	for line := range strings.Lines(out) {
		addr, answer, _ := strings.Cut(strings.TrimSpace(line), "\t")
		byAddr[addr] = answer
	}
	got := map[string]string{}
	for _, s := range galeraServices {
		got[s] = byAddr[p.address(ctx, s)+":3306"]
	}
	return got
}

// galeraStatus is every node's view of the cluster.
func galeraStatus(ctx context.Context, tb testing.TB, p *composeProject) map[string]galeraNode {
	tb.Helper()
	answers := p.galeraQuery(ctx, tb, "SELECT GROUP_CONCAT(CONCAT(VARIABLE_NAME, '=', VARIABLE_VALUE) SEPARATOR ' ') "+
		"FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN "+
		"('WSREP_CLUSTER_SIZE', 'WSREP_LOCAL_STATE', 'WSREP_CLUSTER_STATUS', 'WSREP_LOCAL_COMMITS')")
	st := map[string]galeraNode{}
	for s, a := range answers {
		var n galeraNode
		if a == "" || strings.HasPrefix(a, "ERROR") {
			n.err = "no answer: " + a
			st[s] = n
			continue
		}
		for _, kv := range strings.Fields(a) {
			k, v, _ := strings.Cut(kv, "=")
			switch strings.ToLower(k) {
			case "wsrep_cluster_size":
				n.size, _ = strconv.Atoi(v)
			case "wsrep_local_state":
				n.state, _ = strconv.Atoi(v)
			case "wsrep_cluster_status":
				n.status = v
			case "wsrep_local_commits":
				n.commits, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		st[s] = n
	}
	return st
}

// waitGalera waits until every node is a Synced member of a primary
// component of three and also (if not nil) more holds.
func waitGalera(ctx context.Context, tb testing.TB, p *composeProject, what string, more func(map[string]galeraNode) error) {
	tb.Helper()
	poll.Every(tb, what, time.Second, func() error {
		st := galeraStatus(ctx, tb, p)
		for _, s := range galeraServices {
			if !st[s].synced() {
				return fmt.Errorf("%s: %v", s, st[s])
			}
		}
		if more != nil {
			return more(st)
		}
		return nil
	})
}

// joinedBy says how a node that started again caught up, from its log:
// an incremental transfer from a donor's cache (IST, write-sets) or a
// full copy (SST).
func (p *composeProject) joinedBy(ctx context.Context, service string) string {
	logs, err := p.docker(ctx, "logs", p.container(ctx, service))
	if err != nil {
		return "unknown: " + err.Error()
	}
	var how []string
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "Receiving IST:") || strings.Contains(line, "recovered position") {
			how = append(how, strings.TrimSpace(line[strings.Index(line, "]")+1:]))
		}
	}
	if len(how) == 0 {
		return "no IST in its log"
	}
	return strings.Join(how, "; ")
}

// busiest is the node through which the most transactions were
// committed between two looks at the cluster, and how many through each.
func busiest(from, to map[string]galeraNode) (string, map[string]int64) {
	most, commits := "", map[string]int64{}
	for _, s := range galeraServices {
		commits[s] = max(0, to[s].commits-from[s].commits)
		if most == "" || commits[s] > commits[most] {
			most = s
		}
	}
	return most, commits
}

// longestGap is the longest time between two of times.
func longestGap(times []time.Time) time.Duration {
	s := slices.SortedFunc(slices.Values(times), time.Time.Compare)
	var gap time.Duration
	for i := 1; i < len(s); i++ {
		gap = max(gap, s[i].Sub(s[i-1]))
	}
	return gap
}
