package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// The MySQL driver, for the read-only user the ledger checks with.
	_ "github.com/go-sql-driver/mysql"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"shortener/internal/stack"
	"shortener/internal/tick"
)

// Config is a chaos run's settings; cmd/chaos fills it from flags.
type Config struct {
	// Traffic is the load's rate, mix and client bounds.
	Traffic
	// Links is how many links Setup creates for the redirects.
	Links int
	// Phases: warm-up, steady, fault (at least: a fault that takes longer
	// to inject extends it) and recovery.
	Warmup, Steady, Fault, Recovery time.Duration
	// RedisTimeout, L1TTL and MySQLTimeout are the apps' settings
	// (SHORTENER_REDIS_TIMEOUT, _L1_UNSYNCED_TTL, _MYSQL_TIMEOUT); the
	// verdicts measure against them. L1TTL is the shortest an L1 entry
	// answers: the unsynced TTL (an app cut off from MySQL looks its
	// older entries up again), or SHORTENER_L1_TTL if that is shorter.
	RedisTimeout, L1TTL, MySQLTimeout time.Duration
	// ScrapeEvery is how often each app's /metrics is read.
	ScrapeEvery time.Duration
	// HealTimeout bounds healing the stack and waiting for it to be whole.
	HealTimeout time.Duration
	// RunID names this run; it prefixes every URL and key it creates.
	RunID string
	// EnforceTiming makes the checks of wall-clock time decide the
	// verdict (Check.Timing).
	EnforceTiming bool
}

// DefaultConfig returns the settings `make chaos` uses unless told
// otherwise: about 70 s a scenario, the matrix (16 scenarios) in about 19 minutes.
func DefaultConfig() Config {
	return Config{
		Traffic: Traffic{
			Rate:           1000,
			CreateShare:    0.05,
			MissShare:      0.01,
			Zipf:           1.1,
			Timeout:        2 * time.Second,
			MaxInFlight:    1000,
			CreateAttempts: 4,
		},
		Links:         1000,
		Warmup:        5 * time.Second,
		Steady:        10 * time.Second,
		Fault:         20 * time.Second,
		Recovery:      15 * time.Second,
		RedisTimeout:  50 * time.Millisecond,
		L1TTL:         5 * time.Second,
		MySQLTimeout:  time.Second,
		ScrapeEvery:   200 * time.Millisecond,
		HealTimeout:   2 * time.Minute,
		RunID:         time.Now().UTC().Format("20060102T150405"),
		EnforceTiming: true,
	}
}

// Target is where a run sends its load: nginx, or one app directly, and
// the apps whose /metrics and /readyz it reads. The apps need not be
// processes of the stack: an integration test may run them in-process.
type Target struct {
	BaseURL string
	Apps    []App
	// APIKey, if set, is sent as X-Api-Key with every request: creates
	// then draw on the key's own limit, not an anonymous address's.
	APIKey string
}

// StackTarget is the stack's nginx and its apps, with the stack's API key
// (the api-key file in its directory) when it has one.
func StackTarget(s *stack.Stack) Target {
	t := Target{BaseURL: s.BaseURL()}
	if b, err := os.ReadFile(filepath.Join(s.Dir(), "api-key")); err == nil {
		t.APIKey = strings.TrimSpace(string(b))
	}
	for _, p := range s.Apps() {
		t.Apps = append(t.Apps, App{Name: p.Name, URL: "http://" + p.Addr()})
	}
	return t
}

// Runner runs scenarios against one stack.
type Runner struct {
	s        *stack.Stack
	t        Target
	cfg      Config
	live     io.Writer
	client   *http.Client // the load's
	probe    *http.Client // scrapes and health checks, no keep-alive
	db       *sql.DB      // the read-only user
	accounts []Account
	links    []Link
}

// NewRunner returns a runner that breaks the stack s while it loads t.
// live receives a line per second while a scenario runs. The ledger keeps
// Accounts() and those added with AddAccount.
func NewRunner(s *stack.Stack, t Target, cfg Config, live io.Writer) (*Runner, error) {
	if t.BaseURL == "" || len(t.Apps) == 0 {
		return nil, errors.New("new runner: no base URL or no apps to load")
	}
	if cfg.CreateShare*cfg.Rate > 90 {
		// nginx limits creates per client address to 100/s (429 above):
		// every request of the load comes from 127.0.0.1.
		return nil, fmt.Errorf("new runner: %.0f creates/s is above nginx's per-address limit of 100/s; lower -rate or -create-share", cfg.CreateShare*cfg.Rate)
	}
	db, err := sql.Open("mysql", s.MySQLReadOnlyDSN())
	if err != nil {
		return nil, fmt.Errorf("new runner: open ledger database: %w", err)
	}
	db.SetMaxOpenConns(2)
	client := NewClient(cfg.MaxInFlight)
	if t.APIKey != "" {
		client.Transport = keyTransport{next: client.Transport, key: t.APIKey}
	}
	return &Runner{
		s:      s,
		t:      t,
		cfg:    cfg,
		live:   live,
		client: client,
		probe: &http.Client{
			Timeout:   2 * time.Second,
			Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		},
		db:       db,
		accounts: Accounts(),
	}, nil
}

// AddAccount adds an account to the ledger of every later run.
func (r *Runner) AddAccount(a Account) { r.accounts = append(r.accounts, a) }

// Close releases the runner's connections.
func (r *Runner) Close() error { return r.db.Close() }

// Setup heals the stack, waits until it is whole and creates the links
// the redirects go to. The links are created on the apps directly, with
// several workers, paced at 80/s an app, below the create limit that nginx
// and each app apply per client address (100/s): the setup is not under
// test, and a 429 would end it.
func (r *Runner) Setup(ctx context.Context) error {
	if err := r.heal(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	apps := r.t.Apps
	links := make([]Link, r.cfg.Links)
	pace := rate.NewLimiter(rate.Limit(80*len(apps)), 1)
	var g errgroup.Group // every create runs; Wait returns the first error
	g.SetLimit(8)
	var err error // the pace's: the run's context ended, or would first
	for i := range r.cfg.Links {
		if err = pace.Wait(ctx); err != nil {
			break
		}
		g.Go(func() error {
			res := Result{Kind: Create, URL: fmt.Sprintf("https://chaos.example/%s/links/%d", r.cfg.RunID, i),
				Key: fmt.Sprintf("%s-links-%d", r.cfg.RunID, i)}
			create(ctx, r.client, apps[i%len(apps)].URL, r.cfg.Timeout, r.cfg.CreateAttempts, time.Now(), &res)
			links[i] = Link{Code: res.Code, URL: res.URL}
			if res.Outcome != OK {
				return fmt.Errorf("create link %d: %s", i, res.Err)
			}
			return nil
		})
	}
	if err := errors.Join(g.Wait(), err); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r.links = links
	return nil
}

// prime reads every link once through each app, so that every scenario
// starts with all links in Redis (redis-down leaves Redis empty) and in
// both apps' L1.
func (r *Runner) prime(ctx context.Context) error {
	var failed []string
	for _, a := range r.t.Apps {
		for _, why := range lookupAll(ctx, r.client, a.URL, r.links, r.cfg.Timeout) {
			if why != "" {
				failed = append(failed, why)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("prime: %d lookups failed; one: %s", len(failed), failed[0])
	}
	return nil
}

// Run runs one scenario: it waits for a whole stack, primes the caches,
// opens the ledger's accounts, starts the load and the scrapes, runs the
// phases with the fault in the third, stops the load, heals the stack,
// settles the accounts, measures, and returns the report. A fault that
// cannot be injected or healed is an error in the report, and the run
// still heals and reports; only a stack that cannot be made whole again
// is returned as an error, because the next scenario would measure the
// wreck of this one.
func (r *Runner) Run(ctx context.Context, sc Scenario) (*Report, error) {
	if r.links == nil {
		return nil, errors.New("run: Setup first")
	}
	if err := r.heal(ctx); err != nil {
		return nil, fmt.Errorf("run %s: before: %w", sc.Name, err)
	}
	if err := r.prime(ctx); err != nil {
		return nil, fmt.Errorf("run %s: %w", sc.Name, err)
	}
	prefix := r.cfg.RunID + "-" + sc.Name
	env := &Env{Target: r.t, DB: r.db, Client: r.client, Config: r.cfg, Prefix: prefix, Links: r.links}
	settles := make([]Settle, len(r.accounts))
	for i, a := range r.accounts {
		settle, err := a.Open(ctx, env)
		if err != nil { // the account settles with its error; the others still do
			settle = func(context.Context, *Run) (Entry, error) { return Entry{}, fmt.Errorf("open %T: %w", a, err) }
		}
		settles[i] = settle
	}
	began := time.Now()
	load, err := StartLoad(ctx, LoadConfig{Traffic: r.cfg.Traffic, BaseURL: r.t.BaseURL, Links: r.links,
		Prefix: prefix, Seed: uint64(began.UnixNano())}, r.client)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", sc.Name, err)
	}
	stopScraper := startScraper(r.t.Apps, r.cfg.ScrapeEvery, load.Start(), r.probe)
	scene := &Scene{Stack: r.s, Load: load, marks: map[string]time.Duration{}}

	var phase atomic.Value
	phase.Store("warm-up")
	liveCtx, stopLive := context.WithCancel(ctx)
	var live sync.WaitGroup
	live.Go(func() { // a line a second: elapsed time, phase, and the load's figures of that second
		load.tick() // start the first second now
		tick.Every(liveCtx, time.Second, func() {
			fmt.Fprintf(r.live, "%-18s %6.1fs %-9s %s\n", sc.Name, time.Since(load.Start()).Seconds(), phase.Load(), load.tick())
		})
	})

	at := func() time.Duration { return time.Since(load.Start()) }
	// The phases are a schedule: the load keeps its own time.
	sleepUntil := func(d time.Duration) { pause(ctx, d-at()) }
	var bounds []time.Duration // where steady, fault, recovery and draining began
	enter := func(name string) time.Duration {
		bounds = append(bounds, at())
		phase.Store(name)
		return bounds[len(bounds)-1]
	}
	var faultErrs []error

	sleepUntil(r.cfg.Warmup)
	sleepUntil(enter("steady") + r.cfg.Steady)
	fault := enter("fault")
	// Injecting and healing get their own deadline: a step that hangs must
	// not hold the run past its budget.
	fctx, fcancel := context.WithTimeout(ctx, r.cfg.Fault+r.cfg.HealTimeout)
	step := func(what string, do func(context.Context, *Scene) error) {
		if err := do(fctx, scene); err != nil {
			faultErrs = append(faultErrs, fmt.Errorf("%s: %w", what, err))
			scene.Note("", "%s failed: %v", what, err)
		}
	}
	step("inject", sc.Inject)
	sleepUntil(fault + r.cfg.Fault)
	phase.Store("heal")
	step("heal", sc.Heal)
	fcancel()
	scene.watches.Wait() // they end with fctx, so their last notes are in before the report reads them
	sleepUntil(enter("recovery") + r.cfg.Recovery)
	enter("draining")

	stopCtx, cancel := context.WithTimeout(ctx, 2*time.Duration(r.cfg.CreateAttempts)*(r.cfg.Timeout+retryCap))
	results, stopErr := load.Stop(stopCtx)
	cancel()
	samples := stopScraper()
	stopLive()
	live.Wait()
	if stopErr != nil {
		faultErrs = append(faultErrs, stopErr)
	}

	run := &Run{
		Config: r.cfg, Scenario: sc, Results: results, Samples: samples, Apps: appNames(r.t.Apps),
		Phases: []Window{{0, bounds[0]}, {bounds[0], bounds[1]}, {bounds[1], bounds[2]}, {bounds[2], bounds[3]}},
		Marks:  scene.marks,
	}
	in := reportInput{run: run, began: began, events: scene.events, errs: faultErrs}
	// The stack is made whole before the ledger is read: a create's row is
	// in MySQL or not whether Redis is back, but the ledger resolves every
	// acknowledged code through nginx.
	if err := r.heal(ctx); err != nil {
		in.errs = append(in.errs, fmt.Errorf("heal after the run: %w", err))
		in.ledgerErr = errors.New("not checked: the stack could not be healed")
		return buildReport(in), fmt.Errorf("run %s: %w", sc.Name, err)
	}
	for _, settle := range settles { // each under its own deadline
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		e, err := settle(sctx, run)
		cancel()
		if err != nil {
			in.ledgerErr = errors.Join(in.ledgerErr, fmt.Errorf("ledger: %w", err))
		} else {
			in.ledger = append(in.ledger, e)
		}
	}
	return buildReport(in), nil
}

func appNames(apps []App) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Name
	}
	return out
}

// keyTransport sends key as X-Api-Key with every request.
type keyTransport struct {
	next http.RoundTripper
	key  string
}

func (t keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Api-Key", t.key)
	return t.next.RoundTrip(r)
}
