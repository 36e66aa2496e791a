package stack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConfigGalera: a Galera stack's nodes, ports, addresses, sockets,
// my.cnf and partition rules, as a later process rebuilds them from
// stack.json; no server runs.
func TestConfigGalera(t *testing.T) {
	render := func(NginxLayout) ([]byte, error) { return nil, nil }
	good := Config{
		Dir:       t.TempDir(),
		Galera:    true,
		MySQLPort: 3307,
		GaleraPorts: [3]GaleraPorts{
			{Group: 4567, IST: 4568, SST: 4444}, {Group: 4577, IST: 4578, SST: 4445}, {Group: 4587, IST: 4588, SST: 4446},
		},
		Apps:      []App{{Name: "app1", NodeID: 1}},
		AppBinary: "bin/shortener",
		NginxConf: render,
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"without MariaDB", func(c *Config) { c.WithoutMySQL, c.Apps = true, nil }},
		{"an app named as a node", func(c *Config) { c.Apps = []App{{Name: "mysql-2", NodeID: 1}} }},
		{"no room for three ports", func(c *Config) { c.MySQLPort = 65534 }},
	} {
		c := good
		tc.edit(&c)
		if _, err := c.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", tc.name, err)
		}
	}
	dup := good
	dup.GaleraPorts[2].SST = 4444
	if _, err := newState(dup); !errors.Is(err, ErrConfig) {
		t.Errorf("a peer port twice: got %v, want ErrConfig", err)
	}

	cfg, err := good.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	st, err := newState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeState(cfg.Dir, st); err != nil {
		t.Fatal(err)
	}
	s, err := Attach(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	nodes := s.MySQLNodes()
	if !s.Galera() || len(nodes) != 3 || s.MySQL() != nodes[0] {
		t.Fatalf("attached: galera %v, nodes %v, want mysql-1..3", s.Galera(), nodes)
	}
	if got, want := strings.Join(s.MySQLAddrs(), ","), "127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309"; got != want {
		t.Errorf("MySQLAddrs: got %s, want %s", got, want)
	}
	if got, want := s.MySQLDSN(), "@tcp(127.0.0.1:3307)/"; !strings.Contains(got, want) {
		t.Errorf("MySQLDSN: got %s, want node 1's (%s)", got, want)
	}
	hosts, sockets := map[string]bool{}, map[string]bool{}
	for i, p := range nodes {
		if p.Name != galeraName(i) || p.peer != cfg.GaleraPorts[i] || p.k.program != "mariadbd" {
			t.Errorf("node %d: got %s with %+v, want %s with %+v", i, p.Name, p.peer, galeraName(i), cfg.GaleraPorts[i])
		}
		hosts[p.GaleraHost()], sockets[p.mysqlSocket()] = true, true
	}
	if len(hosts) != 3 || !hosts["127.2.12.235"] || len(sockets) != 3 || sockets[s.st.MySQLSocket] {
		t.Errorf("peer hosts %v and sockets %v: want three of each, 127.2.12.235 for port 3307, none the single server's", hosts, sockets)
	}
	if h := s.Redis()[0].GaleraHost(); h != "" {
		t.Errorf("a Redis node's GaleraHost: got %q, want none", h)
	}

	conf := galeraConf(nodes[1])
	for _, want := range []string{
		"port=3308\n", "wsrep-node-name=mysql-2\n", "wsrep-node-address=127.2.12.236:4577\n",
		"wsrep-cluster-address=gcomm://127.2.12.235:4567,127.2.12.236:4577,127.2.12.237:4587\n",
		`wsrep-provider-options="gmcast.listen_addr=tcp://127.2.12.236:4577;ist.recv_addr=127.2.12.236:4578;`,
		"wsrep-sst-receive-address=127.2.12.236:4445\n", "wsrep-sst-method=mariabackup\n",
		"character-set-server=utf8mb4\n", "socket=" + nodes[1].mysqlSocket() + "\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("mysql-2's my.cnf lacks %q:\n%s", want, conf)
		}
	}

	rules := nodes[2].partitionRules()
	if len(rules) != 2 || !slices.Contains(rules[0], "-s") || !slices.Contains(rules[1], "-d") ||
		!slices.Contains(rules[0], "127.2.12.237") || slices.Contains(rules[0], "--dport") {
		t.Errorf("mysql-3's partition rules: got %q, want from and to 127.2.12.237, not its port", rules)
	}

	env, err := appEnv(s.Apps()[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := "SHORTENER_MYSQL_NODES=127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309"; !slices.Contains(env, want) {
		t.Errorf("app environment lacks %s: %q", want, env)
	}

	// Free ports: every one distinct, none zero.
	free := Config{Dir: t.TempDir(), Galera: true}
	if free, err = free.withDefaults(); err != nil {
		t.Fatal(err)
	}
	if st, err = newState(free); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, ps := range st.Procs {
		ports := []int{ps.Port}
		if ps.Kind == KindMySQL {
			ports = append(ports, ps.Peer.Group, ps.Peer.IST, ps.Peer.SST)
		}
		for _, port := range ports {
			if port == 0 || seen[port] {
				t.Errorf("%s: port %d is zero or taken twice", ps.Name, port)
			}
			seen[port] = true
		}
	}
}

func TestGrastate(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       *grastate
	}{
		{"clean shutdown", "# GALERA saved state\nversion: 2.1\nuuid:    b20f62bf-f0b9-11f1-a3f4-7bc993d932d7\nseqno:   24\nsafe_to_bootstrap: 1\n",
			&grastate{UUID: "b20f62bf-f0b9-11f1-a3f4-7bc993d932d7", Seqno: 24, SafeToBootstrap: true}},
		{"crashed", "# GALERA saved state\nversion: 2.1\nuuid:    b20f62bf-f0b9-11f1-a3f4-7bc993d932d7\nseqno:   -1\nsafe_to_bootstrap: 0\n",
			&grastate{UUID: "b20f62bf-f0b9-11f1-a3f4-7bc993d932d7", Seqno: -1}},
		{"before safe_to_bootstrap", "version: 2.1\nuuid: 00000000-0000-0000-0000-000000000000\nseqno: -1\n",
			&grastate{UUID: "00000000-0000-0000-0000-000000000000", Seqno: -1}},
		{"no uuid", "# GALERA saved state\nversion: 2.1\n", nil},
		{"bad seqno", "uuid: x\nseqno: many\n", nil},
	} {
		got, err := parseGrastate([]byte(tc.file))
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s: got %+v, want an error", tc.name, got)
		case tc.want != nil && (err != nil || *got != *tc.want):
			t.Errorf("%s: got %+v, %v, want %+v", tc.name, got, err, tc.want)
		}
	}

	// Written and read back, as setSafeToBootstrap and recoverGrastate
	// rewrite it.
	s := attachEmpty(t)
	p := &Proc{Name: "mysql-1", Kind: KindMySQL, s: s}
	if gs, err := readGrastate(p); gs != nil || err != nil {
		t.Fatalf("no grastate.dat: got %+v, %v, want none", gs, err)
	}
	if err := os.MkdirAll(mysqlDataDir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	want := &grastate{UUID: "b20f62bf-f0b9-11f1-a3f4-7bc993d932d7", Seqno: 7}
	if err := writeGrastate(p, want); err != nil {
		t.Fatal(err)
	}
	if err := setSafeToBootstrap(p, true); err != nil {
		t.Fatal(err)
	}
	want.SafeToBootstrap = true
	if got, err := readGrastate(p); err != nil || *got != *want {
		t.Errorf("read back: got %+v, %v, want %+v", got, err, want)
	}
}

// TestAborted: join starts a joiner again only when it exited on SIGABRT,
// which is how mariadbd leaves after a non-primary view of itself alone,
// told apart through launch's wrapping from any other exit.
func TestAborted(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{"kill -ABRT $$", true},
		{"kill -KILL $$", false},
		{"exit 1", false},
	} {
		err := exec.Command("sh", "-c", tc.script).Run()
		if err == nil {
			t.Fatalf("%s: no error", tc.script)
		}
		wrapped := fmt.Errorf("wait ready: %w", permanent{startupExit(err, "mysql-3.log", "")})
		if got := aborted(wrapped); got != tc.want {
			t.Errorf("aborted(%v) = %v, want %v", wrapped, got, tc.want)
		}
	}
	if aborted(errors.New("exited during start-up (signal: aborted)")) {
		t.Error("aborted took a message for a SIGABRT exit")
	}
}
