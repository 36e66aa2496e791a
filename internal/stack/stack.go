// Package stack starts the servers the shortener runs against — MariaDB
// (one server, or with Config.Galera a three-node Galera cluster:
// galera.go), three redis-server nodes and three redis-sentinels — and,
// when asked, the shortener apps and nginx in front of them, as real
// local processes on 127.0.0.1, and gives chaos tests and the cmd/stack
// CLI the controls they need: kill, terminate, freeze, continue, restart
// (RestartWith: with extra environment for that start), partition and
// heal, "who is the Redis master now" and how each Galera node stands
// (GaleraStatus); for gray and resource faults, a freeze cycle of
// several servers (FreezeCycle), a Redis node's settings (ConfigGet,
// ConfigSet), and an app's clicks directory on a small tmpfs that can be
// filled, or put back from an older copy (clicks.go).
//
// Everything a stack owns lives in one state directory:
//
//	stack.json          ports and settings, so a later process can Attach
//	logs/<name>.log     stdout and stderr of each server
//	pids/<name>.pid     pid of each running server
//	<name>/             data and config files of each server
//	redis-password      the Redis nodes' password and the sentinels' own,
//	sentinel-password   made by the first Start (mode 0600, secret.go)
//
// The package imports nothing else of the project: the caller builds the
// shortener binary and renders nginx.conf (Config.AppBinary, NginxConf).
//
// The servers run in their own process groups, so they outlive the process
// that started them (the CLI's "up" returns while they keep running) and a
// Ctrl-C in a terminal does not reach them. A later process controls them
// through the pid files, which are checked against /proc/<pid>/cmdline
// before any signal is sent, because a pid outlives its process.
//
// It speaks to MariaDB with database/sql (readiness, creating the users)
// and to Redis and the sentinels with go-redis, one question per fresh
// connection that it dials itself (ask, in redis.go, says why). Every
// Redis node and sentinel requires a password, and so every client of
// them needs RedisPassword or SentinelPassword.
package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"shortener/analytics"
)

// Kinds of process a stack runs; Proc.Kind holds one of them.
const (
	KindMySQL    = "mysql"
	KindRedis    = "redis"
	KindSentinel = "sentinel"
	// KindApp is a shortener instance. It gets its settings as SHORTENER_*
	// environment variables and is ready once GET /readyz answers 200.
	// SIGTERM makes it drain, which takes a few seconds, so Term and Close
	// give it longer than other servers before they SIGKILL it.
	KindApp = "app"
	// KindNginx is nginx in front of the apps, run in the foreground.
	KindNginx = "nginx"
)

// Credentials of the database users Start creates. They are fixed because
// the stack is local and throwaway; the DSN methods are the way to use them.
const (
	appUser          = "shortener"
	appPassword      = "shortener"
	readOnlyUser     = "shortener_ro"
	readOnlyPassword = "shortener_ro"
)

// Timeouts applied when the caller's context has no deadline, so that a
// server that never becomes ready fails the call instead of hanging it.
const (
	defaultStartTimeout   = 2 * time.Minute
	defaultRestartTimeout = time.Minute
	defaultWaitTimeout    = time.Minute
)

var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("stack: invalid config")
	// ErrRunning reports that a server of the stack is already running, so
	// Start (or a start of that process) would fight it for its port and data.
	ErrRunning = errors.New("stack: already running")
	// ErrNoStack reports that a directory holds no stack to Attach to.
	ErrNoStack = errors.New("stack: no stack in directory")
	// ErrUnknownProc reports a process name the stack does not have.
	ErrUnknownProc = errors.New("stack: unknown process")
	// ErrNotRunning reports a control applied to a process that is not running.
	ErrNotRunning = errors.New("stack: process not running")
	// ErrNoMaster reports that no majority of the reachable sentinels named a
	// Redis master (none answered, or they disagree).
	ErrNoMaster = errors.New("stack: sentinels name no master")
	// ErrMissingProgram reports that a server binary is not installed.
	ErrMissingProgram = errors.New("stack: program not installed")
	// ErrPortInUse reports that another program holds a port the stack
	// needs.
	ErrPortInUse = errors.New("stack: port already in use")
)

// Config says where a stack lives and how it is set up. Zero values mean
// the defaults documented on each field.
type Config struct {
	// Dir is the state directory (required); it is created if missing.
	Dir string
	// MySQLPort is MariaDB's TCP port; 0 picks a free loopback port.
	MySQLPort int
	// RedisPorts are the redis-server ports; [0] starts as the master and
	// [1], [2] as its replicas. 0 picks a free port.
	RedisPorts [3]int
	// SentinelPorts are the redis-sentinel ports; 0 picks a free port.
	SentinelPorts [3]int
	// MasterName is the name the sentinels monitor; default "shortener".
	MasterName string
	// Quorum is the sentinels' quorum; default 2.
	Quorum int
	// DownAfter is the sentinels' down-after-milliseconds; default 1s.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout; default 3s, short
	// so that chaos runs can fail over again soon after the last failover.
	FailoverTimeout time.Duration
	// Database is the MariaDB database to create; default "shortener".
	Database string
	// MySQLBufferPool and MySQLLogFile are InnoDB's buffer pool and redo
	// log sizes, as mariadbd takes them ("1G"); default 64M and 16M,
	// which keep a test's data directory small and its start fast. A
	// stack that holds a day of a busy link table's clicks needs the day's
	// click rows to fit the pool, or every click's upsert reads pages
	// back from disk (docs/bench/findings.md).
	MySQLBufferPool, MySQLLogFile string
	// WithoutMySQL leaves MariaDB out: a stack of Redis and the sentinels
	// alone, for tests of the Redis tier, which start in a fraction of
	// the CPU time. It cannot run apps.
	WithoutMySQL bool
	// Galera runs MariaDB as a three-node Galera cluster instead of one
	// server (galera.go): processes mysql-1, mysql-2 and mysql-3 on
	// MySQLPort, MySQLPort+1 and MySQLPort+2 (free ports with 0), where
	// a single server is named mysql.
	Galera bool
	// GaleraPorts are each Galera node's ports for its peers, in node
	// order; a 0 picks a free port.
	GaleraPorts [galeraNodes]GaleraPorts
	// Apps are the shortener instances to run behind nginx, started once
	// MariaDB, Redis and the sentinels are ready. With none, neither apps
	// nor nginx run.
	Apps []App
	// AppBinary is the path of the built shortener binary; required with
	// Apps. Restart runs whatever binary is there then.
	AppBinary string
	// AppEnv holds extra "KEY=value" variables for every app's environment,
	// after (so overriding) those the stack sets; see KindApp.
	AppEnv []string
	// APIKeyFile, if set, names a file whose contents every app gets as
	// SHORTENER_API_KEY. It is read at each app start, so that the key
	// never lands in stack.json.
	APIKeyFile string
	// CodeKeyFile, if set, names a file whose contents every app gets as
	// SHORTENER_CODE_KEY, read the same way.
	CodeKeyFile string
	// NginxPort is nginx's port; 0 picks a free port.
	NginxPort int
	// NginxConf renders nginx.conf from the stack's final ports and paths;
	// required with Apps. Start calls it once; a Restart of nginx reuses
	// the file.
	NginxConf func(NginxLayout) ([]byte, error)
	// KillWithParent makes the kernel SIGKILL every server when the process
	// that started it exits. Tests set it so a crashed or timed-out test
	// binary leaves nothing running; the CLI leaves it off, because its
	// servers must outlive "up".
	KillWithParent bool
	// Log receives progress messages; nil discards them.
	Log *slog.Logger
}

// App is one shortener instance of a stack.
type App struct {
	// Name is the process name and the app's instance name, which it sends
	// in X-Served-By ("app1").
	Name string
	// NodeID is the app's Snowflake node ID, distinct per app.
	NodeID int
	// Port is the app's HTTP port on 127.0.0.1; 0 picks a free port.
	Port int
}

// Stack is a set of running (or stopped) local servers sharing a state
// directory. Its methods are safe for concurrent use.
type Stack struct {
	dir            string
	st             state
	log            *slog.Logger
	killWithParent bool

	// The data tier's passwords, read from the state directory when the
	// Stack is made (secret.go); "" for a stack that has none.
	redisPassword, sentinelPassword string

	procs  []*Proc            // in start order: mysql, redis-1..3, sentinel-1..3, apps, nginx
	byKind map[string][]*Proc // the same, by Kind

	// nginxConf renders nginx.conf; only Start has it (Config.NginxConf).
	nginxConf func(NginxLayout) ([]byte, error)

	closeMu sync.Mutex // serialises Close
	// galeraMu serialises the Galera nodes' choice between bootstrapping
	// a cluster and joining one (Proc.startNode).
	galeraMu sync.Mutex
}

var (
	namePattern    = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	appNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: Dir is required", ErrConfig)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return cfg, fmt.Errorf("%w: dir %q: %v", ErrConfig, cfg.Dir, err)
	}
	cfg.Dir = dir
	cfg.MasterName = cmp.Or(cfg.MasterName, DefaultMasterName)
	cfg.Quorum = cmp.Or(cfg.Quorum, DefaultQuorum)
	cfg.DownAfter = cmp.Or(cfg.DownAfter, DefaultDownAfter)
	cfg.FailoverTimeout = cmp.Or(cfg.FailoverTimeout, DefaultFailoverTimeout)
	cfg.Database = cmp.Or(cfg.Database, "shortener")
	if cfg.AppBinary != "" {
		// Before the caller's AppEnv, which may name another.
		cfg.AppEnv = append([]string{"SHORTENER_GEO_DB=" + findGeoDB()}, cfg.AppEnv...)
	}
	cfg.Log = cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	switch {
	case !namePattern.MatchString(cfg.MasterName):
		return cfg, fmt.Errorf("%w: master name %q: want letters, digits, _", ErrConfig, cfg.MasterName)
	case !namePattern.MatchString(cfg.Database):
		return cfg, fmt.Errorf("%w: database %q: want letters, digits, _", ErrConfig, cfg.Database)
	case cfg.Quorum < 1 || cfg.Quorum > 3:
		return cfg, fmt.Errorf("%w: quorum %d: want 1..3", ErrConfig, cfg.Quorum)
	case cfg.DownAfter < time.Millisecond || cfg.FailoverTimeout < time.Millisecond:
		return cfg, fmt.Errorf("%w: sentinel timeouts must be at least 1ms", ErrConfig)
	case cfg.WithoutMySQL && len(cfg.Apps) > 0:
		return cfg, fmt.Errorf("%w: apps need MariaDB: a stack without it runs none", ErrConfig)
	case cfg.WithoutMySQL && cfg.Galera:
		return cfg, fmt.Errorf("%w: Galera is MariaDB: a stack without MariaDB runs no cluster", ErrConfig)
	case cfg.Galera && cfg.MySQLPort != 0 && cfg.MySQLPort+len(cfg.GaleraPorts)-1 > 65535:
		return cfg, fmt.Errorf("%w: MySQL port %d: the Galera nodes take it and the next two", ErrConfig, cfg.MySQLPort)
	}
	return cfg.appsWithDefaults()
}

// appsWithDefaults validates the apps part of cfg.
func (cfg Config) appsWithDefaults() (Config, error) {
	if len(cfg.Apps) == 0 {
		return cfg, nil
	}
	if cfg.AppBinary == "" || cfg.NginxConf == nil {
		return cfg, fmt.Errorf("%w: apps need AppBinary and NginxConf", ErrConfig)
	}
	bin, err := filepath.Abs(cfg.AppBinary)
	if err != nil {
		return cfg, fmt.Errorf("%w: app binary %q: %v", ErrConfig, cfg.AppBinary, err)
	}
	cfg.AppBinary = bin
	for _, f := range []*string{&cfg.APIKeyFile, &cfg.CodeKeyFile} {
		if *f != "" {
			if *f, err = filepath.Abs(*f); err != nil {
				return cfg, fmt.Errorf("%w: key file %q: %v", ErrConfig, *f, err)
			}
		}
	}
	reserved := map[string]bool{"mysql": true, "nginx": true}
	for i := range 3 {
		reserved[galeraName(i)] = true
		reserved[fmt.Sprintf("redis-%d", i+1)] = true
		reserved[fmt.Sprintf("sentinel-%d", i+1)] = true
	}
	nodes := map[int]bool{}
	for _, a := range cfg.Apps {
		switch {
		case !appNamePattern.MatchString(a.Name):
			return cfg, fmt.Errorf("%w: app name %q: want lower-case letters, digits, - and _", ErrConfig, a.Name)
		case reserved[a.Name]:
			return cfg, fmt.Errorf("%w: app name %q is taken", ErrConfig, a.Name)
		case a.NodeID < 0 || a.NodeID > 1023:
			return cfg, fmt.Errorf("%w: app %s: node ID %d: want 0..1023", ErrConfig, a.Name, a.NodeID)
		case nodes[a.NodeID]:
			return cfg, fmt.Errorf("%w: app %s: node ID %d is not distinct, codes would collide", ErrConfig, a.Name, a.NodeID)
		}
		reserved[a.Name], nodes[a.NodeID] = true, true
	}
	for _, e := range cfg.AppEnv {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return cfg, fmt.Errorf("%w: app environment %q: want KEY=value", ErrConfig, e)
		}
	}
	return cfg, nil
}

// Start starts MariaDB (unless cfg.WithoutMySQL), three redis-server
// nodes and three sentinels in cfg.Dir, then the apps, then nginx, and
// returns once all are ready: the database and users exist, both replicas
// are linked to the master, every sentinel knows the master, both
// replicas and the other two sentinels, every app answers /readyz and
// nginx answers HTTP. On error it stops whatever it started.
//
// Start always sets up a fresh Redis topology (redis-1 master); only
// MariaDB's data survives from an earlier stack in the same directory. It
// returns ErrRunning if a server of an earlier stack there is still running,
// and ErrPortInUse, naming the port and the process, if another program
// holds a port, before it starts anything. Without a deadline on ctx, Start
// gives up after two minutes.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	need := []kind{redisKind(), sentinelKind()}
	switch {
	case cfg.Galera:
		need = append(need, galeraKind())
	case !cfg.WithoutMySQL:
		need = append(need, mysqlKind())
	}
	if len(cfg.Apps) > 0 {
		need = append(need, nginxKind())
	}
	if err := MissingError(missing(programs(need...))); err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx, defaultStartTimeout)
	defer cancel()

	for _, sub := range []string{"logs", "pids"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("start stack: %w", err)
		}
	}
	// An earlier stack's servers would hold the data and maybe the ports;
	// look at the pid files before picking ports or touching any file.
	if prev, err := Attach(cfg.Dir); err == nil {
		for _, p := range prev.procs {
			if pid := p.Pid(); pid != 0 {
				return nil, fmt.Errorf("start stack: %s (pid %d): %w; attach to it or stop it first", p.Name, pid, ErrRunning)
			}
		}
	}

	st, err := newState(cfg)
	if err != nil {
		return nil, fmt.Errorf("start stack: %w", err)
	}
	// Checked all at once, so that a taken port fails the start before any
	// server runs; launch checks again, as a port can be taken meanwhile.
	for _, ps := range st.Procs {
		if !portFree(ps.Port) {
			return nil, fmt.Errorf("start stack: %w", portInUse(ps.Name, ps.Port))
		}
		if err := peerPortsFree(ps); err != nil {
			return nil, fmt.Errorf("start stack: %w", err)
		}
	}
	// stack.json goes first, so that even a half-started stack can be
	// attached to and stopped by a later process; the passwords before
	// newStack, which reads them.
	if err := writeState(cfg.Dir, st); err != nil {
		return nil, fmt.Errorf("start stack: %w", err)
	}
	if err := ensurePasswords(cfg.Dir); err != nil {
		return nil, fmt.Errorf("start stack: %w", err)
	}
	s, err := newStack(cfg.Dir, st, cfg.Log, cfg.KillWithParent)
	if err != nil {
		return nil, fmt.Errorf("start stack: %w", err)
	}
	s.nginxConf = cfg.NginxConf
	begin := time.Now()
	if err := s.start(ctx); err != nil {
		return nil, fmt.Errorf("start stack: %w", errors.Join(err, s.Close()))
	}
	attrs := []any{"dir", s.dir, "took", time.Since(begin).Round(time.Millisecond), "sentinels", s.SentinelAddrs()}
	if s.MySQL() != nil {
		attrs = append(attrs, "mysql", strings.Join(s.MySQLAddrs(), ","))
	}
	if s.Nginx() != nil {
		attrs = append(attrs, "base_url", s.BaseURL())
	}
	s.log.Info("stack ready", attrs...)
	return s, nil
}

// start brings the servers up: MariaDB (or its Galera cluster) alongside
// Redis, because the two do not depend on each other and MariaDB's start
// overlaps the sentinels' discovery of each other. The apps need both,
// and nginx is started last so that its first request finds an app.
func (s *Stack) start(ctx context.Context) error {
	var wg sync.WaitGroup
	var mysqlErr error
	switch my := s.MySQL(); {
	case s.Galera():
		wg.Go(func() { mysqlErr = s.startGalera(ctx) })
	case my != nil:
		wg.Go(func() { mysqlErr = my.start(ctx, true) })
	}

	redisErr := s.startRedis(ctx)
	wg.Wait()
	if err := errors.Join(mysqlErr, redisErr); err != nil {
		return err
	}
	if err := launchAll(ctx, s.byKind[KindApp]); err != nil {
		return err
	}
	return launchAll(ctx, s.byKind[KindNginx]) // none without apps
}

// startRedis starts the nodes, waits for both replicas to link, and only then
// starts the sentinels: a sentinel learns of replicas from the master's INFO,
// which it asks for at once and then only every ten seconds, so replicas that
// link after its first look would be unknown to it for up to ten seconds.
func (s *Stack) startRedis(ctx context.Context) error {
	if err := launchAll(ctx, s.byKind[KindRedis]); err != nil {
		return err
	}
	err := Poll(ctx, readyPoll, func(ctx context.Context) error { return s.Replicated(ctx, s.byKind[KindRedis][0]) })
	if err != nil {
		return fmt.Errorf("wait replicas: %w", err)
	}
	if err := launchAll(ctx, s.byKind[KindSentinel]); err != nil {
		return err
	}
	return s.waitSentinels(ctx, s.byKind[KindRedis][0], true)
}

// launchAll starts procs concurrently, fresh, and waits until each is ready.
func launchAll(ctx context.Context, procs []*Proc) error {
	return AtOnce(procs, func(p *Proc) error { return p.start(ctx, true) })
}

// AtOnce runs f on every proc concurrently and joins their errors.
func AtOnce(procs []*Proc, f func(*Proc) error) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = f(p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Attach re-opens the stack whose state is in dir, started earlier by this
// or another process, so that its servers can be controlled and stopped.
// It starts nothing: a server that is not running stays down until its
// Restart.
func Attach(dir string) (*Stack, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", dir, err)
	}
	st, err := readState(abs)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", dir, err)
	}
	s, err := newStack(abs, st, slog.New(slog.DiscardHandler), false)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", dir, err)
	}
	return s, nil
}

// newStack builds the Proc values for st and reads the passwords; it
// starts nothing.
func newStack(dir string, st state, log *slog.Logger, killWithParent bool) (*Stack, error) {
	s := &Stack{dir: dir, st: st, log: log, killWithParent: killWithParent, byKind: map[string][]*Proc{}}
	for _, pw := range []struct {
		file string
		to   *string
	}{{RedisPasswordFile, &s.redisPassword}, {SentinelPasswordFile, &s.sentinelPassword}} {
		var err error
		if *pw.to, err = readSecret(filepath.Join(dir, pw.file)); err != nil {
			return nil, err
		}
	}
	for _, ps := range st.Procs {
		k, err := lookupKind(ps.Kind)
		if err != nil {
			return nil, fmt.Errorf("process %s: %w", ps.Name, err)
		}
		if st.Galera && ps.Kind == KindMySQL {
			k = galeraKind()
		}
		p := &Proc{Name: ps.Name, Kind: ps.Kind, Port: ps.Port, NodeID: ps.NodeID, peer: ps.Peer, s: s, k: k}
		s.procs = append(s.procs, p)
		s.byKind[ps.Kind] = append(s.byKind[ps.Kind], p)
	}
	n := func(kind string) int { return len(s.byKind[kind]) }
	mysqlOK := n(KindMySQL) <= 1
	if st.Galera {
		mysqlOK = n(KindMySQL) == galeraNodes
	}
	if !mysqlOK || n(KindRedis) != 3 || n(KindSentinel) != 3 || (n(KindMySQL) == 0 && n(KindApp) > 0) {
		return nil, fmt.Errorf("%w: stack.json lists %d processes, want mysql or, with Galera, mysql-1..3 (unless there are no apps), 3 redis, 3 sentinels", ErrNoStack, len(s.procs))
	}
	if (n(KindApp) > 0) != (n(KindNginx) == 1) || n(KindNginx) > 1 || (n(KindApp) > 0 && st.AppBinary == "") {
		return nil, fmt.Errorf("%w: stack.json lists %d apps, %d nginx, app binary %q: want apps, nginx and a binary, or none", ErrNoStack, n(KindApp), n(KindNginx), st.AppBinary)
	}
	return s, nil
}

// Close stops every server of the stack, kind by kind (nginx before
// the apps, the apps before the servers they use, sentinels before the
// Redis nodes they would otherwise fail over, Redis before MariaDB). Each
// gets SIGCONT (a frozen process would never act on SIGTERM), SIGTERM, its
// grace period to exit, then SIGKILL. It removes the servers' partition
// rules and pid files; it is idempotent, and servers that are already down
// are skipped.
func (s *Stack) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()

	var errs []error
	for _, k := range slices.Backward(kinds()) {
		errs = append(errs, AtOnce(s.byKind[k.name], (*Proc).close))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close stack: %w", err)
	}
	return nil
}

// Dir returns the stack's state directory (absolute).
func (s *Stack) Dir() string { return s.dir }

// MySQLDSN returns a go-sql-driver/mysql DSN for the application user, who
// has all privileges on the database.
func (s *Stack) MySQLDSN() string {
	return s.dsn(appUser, appPassword)
}

// MySQLReadOnlyDSN returns a DSN for a user who may only SELECT from the
// database, so that ledger checks cannot change what they are checking.
func (s *Stack) MySQLReadOnlyDSN() string {
	return s.dsn(readOnlyUser, readOnlyPassword)
}

// dsn names the first node of a Galera cluster: a client that must
// survive its loss takes MySQLAddrs too (SHORTENER_MYSQL_NODES).
func (s *Stack) dsn(user, password string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true", user, password, s.MySQL().Addr(), s.st.Database)
}

// SentinelAddrs returns the sentinels' host:port addresses.
func (s *Stack) SentinelAddrs() []string {
	addrs := make([]string, len(s.byKind[KindSentinel]))
	for i, p := range s.byKind[KindSentinel] {
		addrs[i] = p.Addr()
	}
	return addrs
}

// MasterName returns the name under which the sentinels monitor the master.
func (s *Stack) MasterName() string { return s.st.MasterName }

// RedisPassword returns the password every Redis node requires
// (requirepass; also their masterauth and the sentinels' auth-pass), kept
// in the state directory's RedisPasswordFile. Every client of the nodes
// needs it: cache.Config.Password, and the like.
func (s *Stack) RedisPassword() string { return s.redisPassword }

// SentinelPassword returns the password every sentinel requires
// (requirepass), kept in the state directory's SentinelPasswordFile:
// cache.Config.SentinelPassword, and the like.
func (s *Stack) SentinelPassword() string { return s.sentinelPassword }

// MySQL returns the MariaDB process, the first node of a Galera cluster
// (mysql-1), or nil for a stack without MariaDB (Config.WithoutMySQL).
func (s *Stack) MySQL() *Proc {
	if m := s.byKind[KindMySQL]; len(m) > 0 {
		return m[0]
	}
	return nil
}

// Redis returns the redis-server processes in configured order; the first
// was the master when the stack started.
func (s *Stack) Redis() []*Proc { return slices.Clone(s.byKind[KindRedis]) }

// Sentinels returns the redis-sentinel processes.
func (s *Stack) Sentinels() []*Proc { return slices.Clone(s.byKind[KindSentinel]) }

// Apps returns the app processes in Config.Apps order; none when the stack
// runs no apps.
func (s *Stack) Apps() []*Proc { return slices.Clone(s.byKind[KindApp]) }

// Nginx returns the nginx process, or nil when the stack runs no apps.
func (s *Stack) Nginx() *Proc {
	if n := s.byKind[KindNginx]; len(n) > 0 {
		return n[0]
	}
	return nil
}

// BaseURL returns "http://127.0.0.1:<nginx port>", the address clients use,
// or "" when the stack runs no apps.
func (s *Stack) BaseURL() string {
	if n := s.Nginx(); n != nil {
		return "http://" + n.Addr()
	}
	return ""
}

// Procs returns every process in start order.
func (s *Stack) Procs() []*Proc { return slices.Clone(s.procs) }

// Proc returns the process named name ("mysql", "redis-1", "sentinel-2", …).
func (s *Stack) Proc(name string) (*Proc, error) {
	for _, p := range s.procs {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownProc, name)
}

// withDefaultTimeout bounds ctx by d unless it already has a deadline.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// findGeoDB is the country database make geo installs, found from the
// working directory up (make up runs at the repository's root, a test in
// its package's directory), as an absolute path so an app started in the
// state directory finds it; "none" (no countries) when there is none.
func findGeoDB() string {
	dir, err := os.Getwd()
	if err != nil {
		return "none"
	}
	for {
		p := analytics.DefaultGeoDB(dir)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "none"
		}
		dir = parent
	}
}
