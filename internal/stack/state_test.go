package stack

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestSocketPath(t *testing.T) {
	short := "/tmp/st"
	if got, want := socketPath(short), filepath.Join(short, "mysql.sock"); got != want {
		t.Errorf("socketPath(%q): got %q, want %q", short, got, want)
	}
	long := "/tmp/" + strings.Repeat("a-very-long-test-directory-name/", 4)
	got := socketPath(long)
	if len(got) > maxSocketPath || strings.HasPrefix(got, long) {
		t.Errorf("socketPath(long): got %q (%d bytes), want a short path outside the dir", got, len(got))
	}
	if again := socketPath(long); again != got {
		t.Errorf("socketPath(long) twice: got %q then %q, want the same", got, again)
	}
	if other := socketPath(long + "x"); other == got {
		t.Errorf("socketPath of two dirs: both %q", got)
	}
}

func TestPickPorts(t *testing.T) {
	got, err := pickPorts([]int{0, 6380, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got[1] != 6380 {
		t.Errorf("configured port: got %d, want 6380", got[1])
	}
	seen := map[int]bool{}
	for _, p := range got {
		if seen[p] {
			t.Errorf("port %d picked twice in %v", p, got)
		}
		seen[p] = true
		if p != 6380 && (p < 15000 || p >= ephemeralLow()) {
			t.Errorf("picked port %d outside %d..%d", p, 15000, ephemeralLow()-1)
		}
	}
}

// TestPortReservedAcrossProcesses: a port picked by one process is not
// picked by another until the first exits. A second open file description
// of the lock stands in for another process (flock locks are per open
// file, so the same process's second open conflicts too).
func TestPortReservedAcrossProcesses(t *testing.T) {
	got, err := pickPorts([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	if reservePort(got[0]) {
		t.Fatalf("port %d, picked and reserved, reserved again", got[0])
	}
	// A port another open file holds the lock of is not reserved.
	other := got[0]
	for held := false; !held; {
		other++
		f, err := os.OpenFile(filepath.Join(portLockDir, strconv.Itoa(other)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		held = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	if reservePort(other) {
		t.Errorf("port %d, locked by another open file, reserved", other)
	}
}

func TestConfigApps(t *testing.T) {
	render := func(NginxLayout) ([]byte, error) { return nil, nil }
	good := Config{
		Dir:       t.TempDir(),
		Apps:      []App{{Name: "app1", NodeID: 1}, {Name: "app2", NodeID: 2}},
		AppBinary: "bin/shortener",
		NginxConf: render,
	}
	cfg, err := good.withDefaults()
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if !filepath.IsAbs(cfg.AppBinary) {
		t.Errorf("AppBinary: got %q, want an absolute path", cfg.AppBinary)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no binary", func(c *Config) { c.AppBinary = "" }},
		{"no nginx renderer", func(c *Config) { c.NginxConf = nil }},
		{"same node ID", func(c *Config) { c.Apps[1].NodeID = 1 }},
		{"node ID out of range", func(c *Config) { c.Apps[0].NodeID = 1024 }},
		{"same name", func(c *Config) { c.Apps[1].Name = "app1" }},
		{"name of a server", func(c *Config) { c.Apps[0].Name = "redis-1" }},
		{"name with a slash", func(c *Config) { c.Apps[0].Name = "a/b" }},
		{"env without =", func(c *Config) { c.AppEnv = []string{"SHORTENER_LOG_LEVEL"} }},
		{"apps without MariaDB", func(c *Config) { c.WithoutMySQL = true }},
	} {
		c := good
		c.Apps = append([]App(nil), good.Apps...)
		tc.edit(&c)
		if _, err := c.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", tc.name, err)
		}
	}

	// The apps and nginx follow the servers, in that order, and a later
	// process rebuilds them from stack.json.
	cfg.NginxPort = 18080
	st, err := newState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range st.Procs {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, " "), "mysql redis-1 redis-2 redis-3 sentinel-1 sentinel-2 sentinel-3 app1 app2 nginx"; got != want {
		t.Errorf("procs: got %s, want %s", got, want)
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
	apps := s.Apps()
	if len(apps) != 2 || apps[0].NodeID != 1 || apps[1].NodeID != 2 || apps[0].Kind != KindApp {
		t.Fatalf("attached apps: got %v", apps)
	}
	if got, want := s.BaseURL(), "http://127.0.0.1:18080"; got != want {
		t.Errorf("BaseURL: got %q, want %q", got, want)
	}
	env, err := appEnv(apps[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SHORTENER_NODE_ID=2", "SHORTENER_INSTANCE=app2", "SHORTENER_BASE_URL=http://127.0.0.1:18080",
		"SHORTENER_ADDR=" + apps[1].Addr(), "SHORTENER_MYSQL_DSN=" + s.MySQLDSN(), "SHORTENER_REDIS_MASTER=shortener",
		"SHORTENER_REDIS_SENTINELS=" + strings.Join(s.SentinelAddrs(), ",")} {
		if !slices.Contains(env, want) {
			t.Errorf("app2 environment lacks %s: %q", want, env)
		}
	}
	l := s.nginxLayout()
	if l.Listen != "127.0.0.1:18080" || len(l.Apps) != 2 || l.Apps[0] != apps[0].Addr() || !strings.HasPrefix(l.TempDir, cfg.Dir) {
		t.Errorf("nginx layout: got %+v", l)
	}
}

// TestAppAPIKey: an app gets the API key and the data tier's passwords
// in its environment, and stack.json holds none of them.
func TestAppAPIKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	cfg, err := Config{
		Dir: dir, Apps: []App{{Name: "app1", NodeID: 1}}, AppBinary: "/bin/true", APIKeyFile: keyFile,
		AppEnv:    []string{"SHORTENER_LOG_LEVEL=debug", "SHORTENER_NODE_ID=7"},
		NginxConf: func(NginxLayout) ([]byte, error) { return nil, nil },
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	st, err := newState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ensurePasswords(dir); err != nil {
		t.Fatal(err)
	}
	s, err := newStack(dir, st, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	app := s.Apps()[0]
	if _, err := appEnv(app); err == nil {
		t.Error("appEnv without the key file: got nil error")
	}
	if err := os.WriteFile(keyFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := appEnv(app)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "SHORTENER_API_KEY=s3cret") {
		t.Errorf("environment lacks the key: %q", env)
	}
	for _, pw := range []string{"SHORTENER_REDIS_PASSWORD=" + s.RedisPassword(), "SHORTENER_SENTINEL_PASSWORD=" + s.SentinelPassword()} {
		if len(pw) < 40 || !slices.Contains(env, pw) {
			t.Errorf("environment lacks %s: %q", pw, env)
		}
	}
	// Config.AppEnv comes last, so it wins (exec keeps the last of duplicates).
	if got := env[len(env)-2:]; got[0] != "SHORTENER_LOG_LEVEL=debug" || got[1] != "SHORTENER_NODE_ID=7" {
		t.Errorf("environment ends %q, want Config.AppEnv last", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, stateFile))
	for _, secret := range []string{"s3cret", s.RedisPassword(), s.SentinelPassword()} {
		if strings.Contains(string(b), secret) {
			t.Errorf("stack.json holds the secret %q", secret)
		}
	}
}

// TestMySQLSizes: a stack's buffer pool and redo log sizes reach
// mariadbd through its state (so a restart keeps them), the small
// defaults without them.
func TestMySQLSizes(t *testing.T) {
	s := attachEmpty(t)
	p := &Proc{Name: "mysql", Kind: KindMySQL, s: s}
	args := strings.Join(mysqlArgs(p), " ")
	if !strings.Contains(args, "--innodb-buffer-pool-size=64M") || !strings.Contains(args, "--innodb-log-file-size=16M") {
		t.Errorf("defaults: %s", args)
	}
	cfg, err := Config{Dir: t.TempDir(), MySQLBufferPool: "1G", MySQLLogFile: "256M"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	st, err := newState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.st = st
	args = strings.Join(mysqlArgs(p), " ")
	if !strings.Contains(args, "--innodb-buffer-pool-size=1G") || !strings.Contains(args, "--innodb-log-file-size=256M") {
		t.Errorf("set: %s", args)
	}
}
