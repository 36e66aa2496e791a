// Command chaos runs the shortener's chaos matrix against the running
// local stack: for each scenario, open-model load through nginx, a fault
// (a Redis master killed, frozen or cut off, every Redis node slow, the
// master refusing writes, all of Redis down, the sentinels' quorum lost,
// the master and an app killed together, an app killed, frozen or
// restarted, an app's state file corrupt, its journal volume full or its
// journal put back from an older copy, MySQL down), and a report in
// Markdown, JSON and SVG with a ledger of every create, click and delete.
//
//	make up                          # start the stack (.stack/)
//	make chaos                       # every scenario, reports in docs/chaos/
//	make chaos SCENARIO=kill-master  # one
//
// It attaches to the stack in -dir (default .stack in the repository),
// heals it between scenarios, and exits 1 when a scenario could not run or
// a row of docs/design.md's failure table does not hold, after writing every
// report.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"shortener/internal/chaos"
	"shortener/internal/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	cfg       chaos.Config
	scenarios []chaos.Scenario
	dir       string
	out       string
	all       bool // the whole matrix of the stack's kind
}

// parse reads the flags; getenv supplies the defaults of -dir.
func parse(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	o := options{cfg: chaos.DefaultConfig()}
	c := &o.cfg
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names string
	var names0 []string
	for _, sc := range chaos.Scenarios() {
		names0 = append(names0, sc.Name)
	}
	fs.StringVar(&names, "scenario", "all", "scenarios to run, comma-separated, or all: "+strings.Join(names0, ", "))
	fs.StringVar(&o.dir, "dir", stack.DefaultDir(getenv), "state directory of the running stack ($SHORTENER_STACK_DIR)")
	fs.StringVar(&o.out, "out", "", "directory for the reports (default docs/chaos, or docs/chaos/galera on a Galera stack)")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "requests per second (constant arrival rate)")
	fs.Float64Var(&c.CreateShare, "create-share", c.CreateShare, "share of requests that create a link (nginx allows 100 creates/s per address)")
	fs.Float64Var(&c.MissShare, "miss-share", c.MissShare, "share of requests for codes that were never issued")
	fs.Float64Var(&c.Zipf, "zipf", c.Zipf, "Zipf exponent s (> 1) of link popularity")
	fs.IntVar(&c.Links, "links", c.Links, "links the redirects go to")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "client timeout of each request; a request that takes longer counts as unknown")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "requests waiting at once; one due beyond that counts as unknown")
	fs.IntVar(&c.CreateAttempts, "create-attempts", c.CreateAttempts, "POSTs per create, first included (same Idempotency-Key)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "warm-up phase")
	fs.DurationVar(&c.Steady, "steady", c.Steady, "steady phase before the fault")
	fs.DurationVar(&c.Fault, "fault", c.Fault, "fault phase (at least; the heal ends it)")
	fs.DurationVar(&c.Recovery, "recovery", c.Recovery, "recovery phase after the heal")
	fs.DurationVar(&c.RedisTimeout, "redis-timeout", c.RedisTimeout, "the apps' SHORTENER_REDIS_TIMEOUT, which the checks measure against")
	fs.DurationVar(&c.L1TTL, "l1-ttl", c.L1TTL, "the shortest an app's L1 entry answers (SHORTENER_L1_UNSYNCED_TTL, or SHORTENER_L1_TTL if shorter), for the MySQL load bound")
	fs.DurationVar(&c.MySQLTimeout, "mysql-timeout", c.MySQLTimeout, "the apps' SHORTENER_MYSQL_TIMEOUT, for the fast-503 check")
	fs.DurationVar(&c.ScrapeEvery, "scrape", c.ScrapeEvery, "how often each app's /metrics is read")
	fs.BoolVar(&c.EnforceTiming, "enforce-timing", c.EnforceTiming, "let checks of wall-clock time (latency bounds, failover times) decide whether a row holds")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if names == "all" || names == "" {
		// Narrowed to those that fit the stack once run attaches to it
		// (chaos.MatrixFor).
		o.scenarios, o.all = chaos.Scenarios(), true
		return o, nil
	}
	for _, n := range strings.Split(names, ",") {
		sc, err := chaos.ScenarioNamed(strings.TrimSpace(n))
		if err != nil {
			return o, err
		}
		o.scenarios = append(o.scenarios, sc)
	}
	return o, nil
}

// run attaches to the stack, runs the scenarios and writes their reports.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	s, err := stack.Attach(o.dir)
	if err != nil {
		return fmt.Errorf("%w (start the stack with `make up`)", err)
	}
	if o.all {
		o.scenarios = chaos.MatrixFor(s)
	}
	if o.out == "" {
		// A Galera stack's reports are a matrix of their own, beside the
		// single MariaDB's rather than over its baseline and summary.
		o.out = filepath.Join(stack.RepoRoot(), "docs", "chaos")
		if s.Galera() {
			o.out = filepath.Join(o.out, "galera")
		}
	}
	for _, sc := range o.scenarios {
		if !sc.Fits(s) {
			return fmt.Errorf("scenario %s does not run on this stack (Galera rows need SHORTENER_STACK_MYSQL=galera make up; mysql-down needs the single MariaDB)", sc.Name)
		}
	}
	r, err := chaos.NewRunner(s, chaos.StackTarget(s), o.cfg, stderr)
	if err != nil {
		return err
	}
	defer r.Close()

	begin := time.Now()
	fmt.Fprintf(stdout, "chaos run %s against %s: %d scenarios, %.0f requests/s\n", o.cfg.RunID, s.BaseURL(), len(o.scenarios), o.cfg.Rate)
	if err := r.AwaitQuietTrending(ctx, stdout); err != nil {
		return err
	}
	if err := r.Setup(ctx); err != nil {
		return err
	}
	var failed []string
	for _, sc := range o.scenarios {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(stdout, "--- %s: %s\n", sc.Name, sc.Fault)
		rep, err := r.Run(ctx, sc)
		if rep != nil {
			if werr := chaos.WriteFiles(o.out, rep); werr != nil {
				return werr
			}
			verdict := "holds"
			if !rep.Holds {
				verdict = "DOES NOT HOLD"
				failed = append(failed, sc.Name)
			}
			t := rep.Total.All
			fmt.Fprintf(stdout, "%s: %s; %d requests, %d failed, %d unknown; report %s\n",
				sc.Name, verdict, t.Sent, t.Failed, t.Unknown, filepath.Join(o.out, sc.Name+".md"))
			for _, f := range rep.Failures() {
				fmt.Fprintf(stdout, "  %s\n", f)
			}
		}
		if err != nil {
			// The stack could not be made whole: later scenarios would
			// measure this one's damage.
			return errors.Join(err, chaos.WriteSummary(o.out))
		}
	}
	if err := chaos.WriteSummary(o.out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "chaos run %s done in %s; summary in %s\n", o.cfg.RunID, time.Since(begin).Round(time.Second), filepath.Join(o.out, "README.md"))
	if len(failed) > 0 {
		return fmt.Errorf("rows that do not hold: %s (see their reports)", strings.Join(failed, ", "))
	}
	return nil
}
