// Command bench is `make bench`: the side-by-side performance run a
// reviewer would do, on the running local stack (make up first).
//
// It loads the stack with wrk (Debian's package) from 127.0.0.1 in rounds,
// each row once per round, and writes the medians to docs/bench/ (Markdown
// and JSON) with the machine described: warm redirects through nginx and
// directly against one app, each read against a minimal Go 302 server
// (behind an nginx rendered from the same template, for the first);
// creates per second through nginx with the stack's API key; each app's
// memory with a million links cached; and throughput as the working set
// grows from a thousand hot links to a million links bulk-loaded into
// MySQL, uniform and Zipf, with Redis cold and warm.
//
// It measures; it asserts nothing, and is not part of make test. Every
// load is bounded in time and goes to 127.0.0.1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"shortener/cache"
	"shortener/internal/stack"
	"shortener/store"
)

func main() {
	if os.Getenv(minimalEnv) != "" {
		fmt.Fprintln(os.Stderr, "bench:", serveMinimal())
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.Exit(1)
	}
}

// options are bench's flags.
type options struct {
	stackDir, out, only string
	golink              string
	rounds              int
	duration, ramp      time.Duration
	threads, conns      int
	links, hot          int
	zipf                float64
	seed                uint64
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.stackDir, "stack", ".stack", "state directory of the running stack (make up)")
	fs.StringVar(&o.out, "out", "docs/bench", "directory for README.md and bench.json")
	fs.StringVar(&o.only, "rows", "", "comma-separated name prefixes: run only those rows (e.g. redirect/,create/)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each row runs once per round and the report gives medians")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each run")
	fs.DurationVar(&o.ramp, "ramp", time.Minute, "after the rounds, load the million links from cold for this long, in runs of -duration, to show Redis filling (0: skip)")
	fs.IntVar(&o.threads, "threads", 1, "wrk threads")
	fs.IntVar(&o.conns, "conns", 32, "wrk connections (a closed loop: each waits for its answer)")
	fs.IntVar(&o.links, "links", 1_000_000, "links bulk-loaded into MySQL for the working-set rows")
	fs.IntVar(&o.hot, "hot", 1000, "hot links, the small working set")
	fs.Float64Var(&o.zipf, "zipf", 1.1, "Zipf exponent (> 1) of the Zipf rows, as the chaos load's")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the code lists")
	fs.StringVar(&o.golink, "golink", golinkModule, "golink for the redirect/direct/golink row: a module@version to build with go install, or a built binary; empty: no golink row")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.rounds < 1 || o.duration < time.Second || o.threads < 1 || o.conns < o.threads {
		errs = append(errs, fmt.Errorf("need rounds >= 1 (%d), duration >= 1s (%s), 1 <= threads (%d) <= conns (%d)", o.rounds, o.duration, o.threads, o.conns))
	}
	if o.hot < 1 || o.links < o.hot || o.zipf <= 1 {
		errs = append(errs, fmt.Errorf("need 1 <= hot (%d) <= links (%d) and zipf (%g) > 1", o.hot, o.links, o.zipf))
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %q", fs.Args()))
	}
	return o, errors.Join(errs...)
}

// env is what rows run against.
type env struct {
	stack   *stack.Stack
	store   *store.Store
	redis   *redisTier
	wrk     *wrk
	proc    procfs.FS
	targets map[string]string // target -> base URL
	codes   map[string]string // list -> file
	apiKey  string
	runID   string
	links   int
	round   int
	warm    bool // Redis holds every bench link (this round)
	// minimalNginxPid is the master of the minimal servers' nginx;
	// minimalPids are the servers.
	minimalNginxPid int
	minimalPids     []int
	// capacity, countingOff and analyticsOff are the bench's own pairs
	// of apps behind an nginx each: counting on (analytics on), counting
	// off, counting on with analytics off (see capacity).
	capacity, countingOff, analyticsOff *capacity
	// golink is the peer the direct redirects are read against; nil
	// when it could not be built (its rows are left out, with a note).
	golink *golink
	rep    *report
	out    io.Writer
}

func (e *env) logf(format string, args ...any) { fmt.Fprintf(e.out, format+"\n", args...) }

func (e *env) note(s string) { e.rep.Notes = append(e.rep.Notes, s) }

// sampleMemory records every app's resident memory.
func (e *env) sampleMemory(when string) error {
	for _, a := range e.stack.Apps() {
		p, err := e.proc.Proc(a.Pid())
		if err != nil {
			return fmt.Errorf("memory of %s: %w", a.Name, err)
		}
		st, err := p.Stat()
		if err != nil {
			return fmt.Errorf("memory of %s: %w", a.Name, err)
		}
		e.rep.Memory = append(e.rep.Memory, memSample{When: when, App: a.Name, RSSBytes: uint64(st.ResidentMemory())})
	}
	return nil
}

func (e *env) load1() float64 {
	la, err := e.proc.LoadAvg()
	if err != nil {
		return 0
	}
	return la.Load1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	started := time.Now()
	s, err := stack.Attach(o.stackDir)
	if err != nil {
		return fmt.Errorf("%w (%v)", errNoStack, err)
	}
	if s.Nginx() == nil || !s.Nginx().Running() || len(s.Apps()) == 0 {
		return errNoStack
	}
	for _, a := range s.Apps() {
		if !a.Running() {
			return fmt.Errorf("%s is not running: make up", a.Name)
		}
	}
	key, err := os.ReadFile(filepath.Join(o.stackDir, "api-key"))
	if err != nil {
		return fmt.Errorf("read the stack's API key: %w", err)
	}
	cache.RouteLibraryLogs(slog.New(slog.DiscardHandler)) // go-redis's Sentinel chatter
	proc, err := procfs.NewDefaultFS()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "shortener-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	st, err := store.Open(store.Config{DSN: s.MySQLDSN(), MaxOpen: 4, MaxIdle: 4, MaxLifetime: time.Minute,
		DialTimeout: 2 * time.Second, QueryTimeout: time.Minute}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.Close()
	mysqlSizes, restore, err := sizeMySQL(ctx, s)
	if err != nil {
		return err
	}
	defer restore()
	tier, err := newRedisTier(s, st)
	if err != nil {
		return err
	}
	defer tier.close()
	w, err := newWrk(work, o.threads, o.conns, o.duration, 5*time.Second)
	if err != nil {
		return err
	}
	m, err := startMinimal(ctx, filepath.Join(work, "minimal"))
	if err != nil {
		return err
	}
	defer m.close()
	capa, err := startCapacity(ctx, proc, s.Apps()[0], filepath.Join(work, "capacity"), "bench")
	if err != nil {
		return err
	}
	defer capa.close()
	off, err := startCapacity(ctx, proc, s.Apps()[0], filepath.Join(work, "counting-off"), "off", "SHORTENER_CLICKS=false")
	if err != nil {
		return err
	}
	defer off.close()
	anOff, err := startCapacity(ctx, proc, s.Apps()[0], filepath.Join(work, "analytics-off"), "anoff", "SHORTENER_ANALYTICS=false")
	if err != nil {
		return err
	}
	defer anOff.close()

	rep := &report{Started: started, Machine: describeMachine(ctx, proc), Settings: map[string]string{
		"rounds": strconv.Itoa(o.rounds), "run length": o.duration.String(),
		"wrk":   fmt.Sprintf("%d thread(s), %d connections, keep-alive, closed loop", o.threads, o.conns),
		"links": keysString(o.links), "hot links": keysString(o.hot), "zipf exponent": strconv.FormatFloat(o.zipf, 'g', -1, 64),
		"stack":  "make up's local stack: nginx :8080, app1 :8081, app2 :8082, defaults of cmd/shortener",
		"commit": commit(ctx), "mysql": mysqlSizes,
	}}
	e := &env{
		stack: s, store: st, redis: tier, wrk: w, proc: proc, apiKey: strings.TrimSpace(string(key)),
		runID: started.UTC().Format("20060102T150405"), links: o.links, rep: rep, out: stdout,
		minimalNginxPid: m.proxy.pid(), minimalPids: m.pids(), capacity: capa, countingOff: off, analyticsOff: anOff,
		targets: map[string]string{
			targetNginx: s.BaseURL(), targetApp: "http://" + s.Apps()[0].Addr(),
			targetMinimalNginx: m.url(), targetMinimal: m.directURL(), targetCapacity: capa.proxy.url(),
			targetCountingOff: off.proxy.url(), targetAnalyticsOff: anOff.proxy.url(),
		},
	}
	e.logf("bench: load1 %.1f at start; %d round(s) of %s runs", rep.Machine.Load1Start, o.rounds, o.duration)

	n, err := loadLinks(ctx, st, o.links, stdout)
	if err != nil {
		return err
	}
	if n > 0 {
		e.logf("bench: %s links bulk-loaded into MySQL in %s", keysString(int(n)), time.Since(started).Round(time.Second))
	}
	if e.codes, err = codeLists(work, o); err != nil {
		return err
	}
	if err := e.sampleMemory("start"); err != nil {
		return err
	}

	selected := selectRows(rows(o.hot, o.links), o.only)
	if slices.ContainsFunc(selected, func(r row) bool { return r.target == targetGolink }) {
		gl, err := e.startGolink(ctx, o, filepath.Join(work, "golink"))
		if err != nil {
			e.note("No golink row: " + err.Error() + ".")
			e.logf("bench: no golink row: %v", err)
			selected = slices.DeleteFunc(selected, func(r row) bool { return r.target == targetGolink })
		} else {
			defer gl.close()
		}
	}
	// A warm-up, not recorded: the hot links into L1, connections opened.
	warmUp := []string{targetNginx, targetMinimalNginx, targetCapacity, targetCountingOff, targetAnalyticsOff}
	if e.golink != nil {
		warmUp = append(warmUp, targetGolink)
	}
	for _, t := range warmUp {
		if _, err := w.run(ctx, e.targets[t], rowWarmUpTime, "get", e.codes[codesHot], "0"); err != nil {
			return err
		}
	}
	// Whatever earlier activity left pending is folded first, so that
	// each row's fold is its own.
	if n, err := st.FoldPending(ctx, time.Now()); err != nil {
		return err
	} else if n > 0 {
		e.logf("bench: folded %d pending clicks left from before the run", n)
	}
	rep.Rows = make([]rowResult, len(selected))
	for i, r := range selected {
		rep.Rows[i] = rowResult{Name: r.name, What: r.what, Floor: r.floor}
	}
	for e.round = 0; e.round < o.rounds; e.round++ {
		e.warm = false
		e.logf("round %d/%d", e.round+1, o.rounds)
		for _, i := range roundOrder(selected, e.round) {
			r := selected[i]
			m, err := e.runRow(ctx, r)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", e.round+1, r.name, err)
			}
			rep.Rows[i].Runs = append(rep.Rows[i].Runs, m)
			e.logf("  %-30s %8.0f req/s  p50 %6.2f ms  p99 %7.2f ms  cpu %6.1f µs/req  errors %d  4xx/5xx %d  load1 %.1f",
				r.name, m.RPS, m.P50ms, m.P99ms, m.CPUus, m.Errors, m.BadStatus, m.Load1)
		}
	}
	if o.ramp > 0 && (o.only == "" || strings.Contains(o.only, "workingset/")) {
		if err := e.rampRows(ctx, o); err != nil {
			return err
		}
	}
	ran := func(name string) bool {
		return slices.ContainsFunc(selected, func(r row) bool { return r.name == name })
	}
	for _, q := range ratios() {
		if ran(q.num) && ran(q.den) { // -rows may leave a ratio's rows out
			rep.Ratios = append(rep.Ratios, ratioResult{Name: q.name, Num: q.num, Den: q.den, Min: q.min})
		}
	}
	rep.Took = time.Since(started).Round(time.Second).String()
	e.note(fmt.Sprintf("The machine is shared: the one-minute load average was %.1f at the start (see load1 per row). Read the ratios, taken a few seconds apart in the same round, before the absolute figures.", rep.Machine.Load1Start))
	rep.summarise()
	rep.Previous = readPrevious(o.out)
	return writeReport(o.out, rep)
}

// runRow runs one row once.
func (e *env) runRow(ctx context.Context, r row) (measure, error) {
	if r.before != nil {
		if err := r.before(ctx, e); err != nil {
			return measure{}, err
		}
	}
	get := func(offset int) []string { return []string{"get", e.codes[r.codes], strconv.Itoa(offset)} }
	args := []string{"create", e.apiKey, fmt.Sprintf("bench/%s/r%d", e.runID, e.round)}
	if r.codes != "" {
		args = get(e.round * 104729)
	}
	if r.steady > 0 && r.codes != "" {
		// From another place in the list than the row's (half a million
		// codes on), so that the row does not replay what the warm-up
		// just put in L1. Its clicks are folded before the row, so that
		// the row's fold is its own.
		if _, err := e.wrk.run(ctx, e.targets[r.target], r.steady, get(e.round*104729+500_009)...); err != nil {
			return measure{}, err
		}
		if err := quiesce(ctx, e); err != nil {
			return measure{}, err
		}
		if _, err := e.store.FoldPending(ctx, time.Now().Add(time.Minute)); err != nil {
			return measure{}, err
		}
	}
	if err := e.clearOfFold(ctx, e.wrk.duration); err != nil {
		return measure{}, err
	}
	if err := quiesce(ctx, e); err != nil {
		return measure{}, err
	}
	if err := e.waitIdle(ctx); err != nil {
		return measure{}, err
	}
	pids := e.servers(r.target)
	if r.wholeCost {
		pids = append(pids, e.stack.MySQL().Pid())
		for _, p := range e.stack.Redis() {
			pids = append(pids, p.Pid())
		}
	}
	parts := e.parts(r.target)
	cpu0, parts0 := cpuSeconds(e.proc, pids), cpuByPart(e.proc, parts)
	m, err := e.wrk.run(ctx, e.targets[r.target], 0, args...)
	if err != nil {
		return measure{}, err
	}
	good := float64(m.Requests - m.BadStatus)
	if !r.wholeCost && good > 0 {
		m.CPUus = (cpuSeconds(e.proc, pids) - cpu0) / good * 1e6
	}
	// The breakdown counts every part until the apps are quiet again: the
	// clicks shipped to MySQL and the trending batches sent to Redis are
	// the row's too.
	if err := quiesce(ctx, e); err != nil {
		return measure{}, err
	}
	if good > 0 {
		if r.wholeCost {
			m.CPUus = (cpuSeconds(e.proc, pids) - cpu0) / good * 1e6
		}
		m.Parts = map[string]float64{}
		for name, before := range parts0 {
			m.Parts[name] = (cpuSeconds(e.proc, parts[name]) - before) / good * 1e6
		}
	}
	if err := e.foldRow(ctx, &m, good); err != nil {
		return measure{}, err
	}
	m.Load1 = e.load1()
	if r.after != nil {
		if err := r.after(ctx, e); err != nil {
			return measure{}, err
		}
	}
	return m, nil
}

// rampRows loads every link uniformly from cold in consecutive runs, one
// row each, to show throughput rising as Redis fills.
func (e *env) rampRows(ctx context.Context, o options) error {
	if err := e.clearOfFold(ctx, o.ramp+time.Minute); err != nil {
		return err
	}
	if err := makeCold(ctx, e); err != nil {
		return err
	}
	e.logf("ramp: %s uniform from cold, %s", keysString(o.links), o.ramp)
	for t := o.duration; t <= o.ramp; t += o.duration {
		m, err := e.wrk.run(ctx, e.targets[targetNginx], 0, "get", e.codes[codesAll], strconv.Itoa(int(t/time.Second)*7919))
		if err != nil {
			return err
		}
		m.Load1 = e.load1()
		name := fmt.Sprintf("ramp/all/uniform/%03ds", int(t/time.Second))
		e.rep.Rows = append(e.rep.Rows, rowResult{Name: name, Runs: []measure{m},
			What: fmt.Sprintf("GET %s links (uniform) through nginx, %s to %s after Redis was emptied", keysString(o.links), t-o.duration, t)})
		e.logf("  %-30s %8.0f req/s  p99 %7.2f ms", name, m.RPS, m.P99ms)
	}
	// The ramp's clicks are folded too, not left to the next run's first
	// row (its CPU is not read: the ramp rows read throughput only).
	if err := quiesce(ctx, e); err != nil {
		return err
	}
	n, err := e.store.FoldPending(ctx, time.Now())
	if err != nil {
		return err
	}
	e.logf("ramp: folded its %d pending clicks", n)
	return nil
}

// foldRow folds the pending clicks a row's run left (store.FoldPending)
// and notes how many and what folding them cost MySQL and this process
// (the folder) per answered request, outside the run's own figures.
func (e *env) foldRow(ctx context.Context, m *measure, good float64) error {
	pids := []int{e.stack.MySQL().Pid(), os.Getpid()}
	cpu0 := cpuSeconds(e.proc, pids)
	n, err := e.store.FoldPending(ctx, time.Now().Add(time.Minute))
	if err != nil {
		return err
	}
	m.Folded = n
	if good > 0 {
		m.FoldCPUus = (cpuSeconds(e.proc, pids) - cpu0) / good * 1e6
	}
	return nil
}

// The apps fold the pending clicks of an hour within a minute of its end
// (cmd/shortener: clicksFold). A run under way then would pay for that
// fold, whatever of the earlier runs' clicks the bench had not folded:
// a run that would end less than foldMargin before an hour's end waits
// until foldSettle past it.
const (
	foldMargin = 20 * time.Second
	foldSettle = 75 * time.Second
)

// clearOfFold waits, if a run of d from now would come near the next
// hour's end, or if the last one is less than foldSettle ago, until the
// apps have folded that hour.
func (e *env) clearOfFold(ctx context.Context, d time.Duration) error {
	end := time.Now().Truncate(time.Hour)
	if time.Since(end) >= foldSettle {
		end = end.Add(time.Hour)
	}
	if time.Until(end.Add(foldSettle)) > d+foldMargin+foldSettle {
		return nil
	}
	e.logf("  waiting until %s: the apps fold the hour's pending clicks after it ends", end.Add(foldSettle).Format(time.TimeOnly))
	return sleep(ctx, time.Until(end.Add(foldSettle)))
}

// commit names the checked-out commit the stack was built from, as far as
// git in the working directory knows it.
func commit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// selectRows keeps the rows whose names start with one of the
// comma-separated prefixes in only; all of them when only is empty.
func selectRows(all []row, only string) []row {
	if only == "" {
		return all
	}
	var out []row
	for _, r := range all {
		for _, p := range strings.Split(only, ",") {
			if p = strings.TrimSpace(p); p != "" && strings.HasPrefix(r.name, p) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// codeLists writes the lists the GET rows draw from.
func codeLists(dir string, o options) (map[string]string, error) {
	lists := map[string]string{}
	for i, l := range []struct {
		name  string
		count int
		pick  func(*rand.Rand) picker
	}{
		{codesHot, 100_000, func(r *rand.Rand) picker { return uniform(r, o.hot) }},
		{codesHotZipf, 100_000, func(r *rand.Rand) picker { return zipf(r, o.zipf, o.hot) }},
		{codesAll, o.links, func(r *rand.Rand) picker { return uniform(r, o.links) }},
		{codesAllZipf, o.links, func(r *rand.Rand) picker { return zipf(r, o.zipf, o.links) }},
	} {
		path := filepath.Join(dir, l.name+".codes")
		if err := writeCodesFile(path, l.count, l.pick(rand.New(rand.NewPCG(o.seed, uint64(i))))); err != nil {
			return nil, err
		}
		lists[l.name] = path
	}
	return lists, nil
}

// writeReport writes README.md and bench.json into dir.
func writeReport(dir string, rep *report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for name, write := range map[string]func(io.Writer) error{"README.md": rep.writeMarkdown, "bench.json": rep.writeJSON} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}

// golinkModule is what -golink builds by default: golink's command at its
// newest version.
const golinkModule = "github.com/tailscale/golink/cmd/golink@latest"

// startGolink builds and starts golink for its row (golink.go).
func (e *env) startGolink(ctx context.Context, o options, dir string) (*golink, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin, err := buildGolink(ctx, o.golink, dir)
	if err != nil {
		return nil, err
	}
	gl, err := startGolink(ctx, bin, dir, o.hot)
	if err != nil {
		return nil, err
	}
	e.golink = gl
	e.targets[targetGolink] = gl.url()
	e.rep.Settings["golink"] = golinkSetting(o.golink)
	return gl, nil
}

// golinkSetting is how the report names -golink: a module@version as it
// is; a binary by what it is, not where it lay on the machine that ran
// the bench (the report is committed).
func golinkSetting(spec string) string {
	if strings.Contains(spec, "@") {
		return spec
	}
	return "a golink binary built from its source beforehand (-golink PATH)"
}
