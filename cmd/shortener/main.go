// Command shortener serves the URL shortener's HTTP API: it creates short
// links in MySQL and resolves redirects through Redis (via Sentinel) with
// MySQL behind it.
//
// Configuration comes from SHORTENER_* environment variables, each of
// which a flag of the same name overrides; run with -h for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shortener/analytics"
	"shortener/cache"
	"shortener/handler"
	"shortener/idgen"
	"shortener/lease"
	"shortener/store"
	"shortener/trending"
	"shortener/visits"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "shortener:", err)
		}
		os.Exit(1)
	}
}

// run starts the server and blocks until ctx is cancelled, then shuts
// down in order: stop accepting, drain requests, stop the background
// tasks and join them, close the journal, Redis, then MySQL.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWithClock(ctx, args, getenv, stdout, stderr, time.Now)
}

// runWithClock is run with the clock that decides whether it is safe to
// issue IDs after a restart; tests set it behind the real one.
//
// Each step defers its closer as it starts, so they run in reverse at
// shutdown, after serve has drained the HTTP server: pprof stops, the
// click journal closes and ships what it holds to MySQL, the purge, the
// ranking (its last flush and spool) and the lookup path's tasks are
// joined and their Redis clients closed, the lease is released with the
// last ID's time, and MySQL closes last. Every goroutine started here is
// a task (task.go), joined before what it uses closes.
func runWithClock(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, now func() time.Time) error {
	if len(args) > 0 && args[0] == "keys" {
		return keys(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "probe" { // a container's healthcheck
		return probe(ctx, args[1:], getenv, stderr)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	log, err := startLog(&cfg, stdout)
	if err != nil {
		return err
	}
	tuneMemory(getenv, log)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	st, err := openStore(ctx, cfg.MySQL, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if c := st.Collector(); c != nil {
		reg.MustRegister(c)
	}
	node, err := claimNode(ctx, &cfg, st, now, log, reg)
	if err != nil {
		return err
	}
	defer node.release(ctx)
	c, stopCache, err := startCache(ctx, cfg, st, log, reg)
	if err != nil {
		return err
	}
	defer stopCache()
	// Links with a maximum of visits count them in Redis (package visits).
	vis, err := visits.New(cfg.Redis, st, log, reg)
	if err != nil {
		return err
	}
	defer vis.Close()
	trend, stopTrending, err := startTrending(ctx, cfg, c, log, reg)
	if err != nil {
		return err
	}
	defer stopTrending()
	purge := goTask(ctx, func(ctx context.Context) error { purgeIdempotencyKeys(ctx, st, log); return nil })
	defer purge.join() //nolint:errcheck // never fails
	// The click journal feeds the ranking with each group it writes.
	clk, err := startClicks(cfg, st, trend, log, reg)
	if err != nil {
		return err
	}
	defer clk.close()
	an, err := startAnalytics(cfg.Analytics, st, log, reg)
	if err != nil {
		return err
	}
	defer an.Close()
	stopWebhooks, err := startWebhooks(ctx, cfg, st, log, reg)
	if err != nil {
		return err
	}
	defer stopWebhooks()
	h, err := newHandler(ctx, cfg, st, c, vis, trend, clk, an, node.ids, reg, log)
	if err != nil {
		return err
	}
	srv, err := listen(cfg.Server, h, log)
	if err != nil {
		return err
	}
	if cfg.Server.PprofAddr != "" {
		profiles := goTask(ctx, func(ctx context.Context) error { servePprof(ctx, cfg.Server.PprofAddr, log); return nil })
		defer profiles.join() //nolint:errcheck // never fails
	}
	return serve(ctx, cfg.Server, srv, node.keep, log)
}

// startLog names the instance when the configuration did not (an auto
// node ID: a pod's name tells instances apart), returns the logger and
// logs the configuration with it.
func startLog(cfg *Config, stdout io.Writer) (*slog.Logger, error) {
	if cfg.Server.Instance == "" {
		var err error
		if cfg.Server.Instance, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("instance name: %w", err)
		}
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.Server.LogLevel})).
		With("instance", cfg.Server.Instance)
	if stdout == os.Stdout { // go-redis logs per process, not per run
		cache.RouteLibraryLogs(log)
	}
	log.Info("starting", "config", cfg)
	if cfg.Node.CodeKey == idgen.DefaultKey { // only with SHORTENER_DEV_CODE_KEY
		log.Warn("SHORTENER_CODE_KEY is the built-in default (allowed by SHORTENER_DEV_CODE_KEY): anyone can decode codes; never use it in production")
	}
	return log, nil
}

// openStore opens MySQL and waits, up to the migrate timeout, until it
// answers and the migrations are applied, so instances can start before
// MariaDB is up.
func openStore(ctx context.Context, cfg MySQLConfig, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(cfg.storeConfig(), log)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(cfg.MigrateTimeout)
	for {
		err := st.Migrate(ctx, max(time.Until(deadline), time.Second))
		if err == nil {
			return st, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			st.Close()
			return nil, fmt.Errorf("database not ready after %s: %w", cfg.MigrateTimeout, err)
		}
		log.Warn("database not ready, retrying", "err", err)
		select {
		case <-ctx.Done():
			st.Close()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// node is this instance's node ID: the lease that holds it, the task that
// renews the lease (it ends early only when the lease is lost), and the
// IDs issued with it.
type node struct {
	lease *lease.Lease
	keep  *task
	ids   *idgen.Generator
	now   func() time.Time
}

// claimNode claims the node ID (with SHORTENER_NODE_ID=auto, a free one,
// which it writes into cfg) and keeps renewing it.
func claimNode(ctx context.Context, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) (*node, error) {
	codec, err := idgen.NewCodec(cfg.Node.CodeKey)
	if err != nil {
		return nil, err
	}
	l, err := lease.New(cfg.leaseConfig(), st, now, log, reg)
	if err != nil {
		return nil, err
	}
	if err := l.Claim(ctx); err != nil {
		return nil, err
	}
	cfg.Node.ID.N = l.NodeID()
	ids, err := idgen.New(cfg.Node.ID.N, codec)
	if err != nil {
		return nil, err
	}
	keep := goTask(ctx, func(ctx context.Context) error { return l.Keep(ctx, ids.Horizon) })
	return &node{lease: l, keep: keep, ids: ids, now: now}, nil
}

// release stops renewing the lease and releases it with the last ID's
// time, so a restart issues none at or below it.
func (n *node) release(ctx context.Context) {
	n.keep.join() //nolint:errcheck // a lost lease is serve's to answer
	n.lease.Release(ctx, n.ids.Horizon(n.now()))
}

// startCache opens the lookup path and runs what it handles in the
// background; stop joins that, then closes its Redis clients.
func startCache(ctx context.Context, cfg Config, st *store.Store, log *slog.Logger, reg prometheus.Registerer) (c *cache.Cache, stop func(), err error) {
	c, err = cache.New(cfg.cacheConfig(), st, st, log, reg)
	if err != nil {
		return nil, nil, err
	}
	if err := c.LoadPending(ctx); err != nil {
		// The replay loop reads them within its interval.
		log.Warn("pending invalidations not loaded at start", "err", err)
	}
	run := goTask(ctx, c.Run)
	return c, func() {
		run.join() //nolint:errcheck // Run returns when stopped
		c.Close()
	}, nil
}

// startTrending starts the ranking; stop joins it (its last flush and
// spool), then closes its Redis client.
func startTrending(ctx context.Context, cfg Config, c *cache.Cache, log *slog.Logger, reg prometheus.Registerer) (r *trending.Ranking, stop func(), err error) {
	r, err = trending.New(cfg.trendingConfig(), c, time.Now, log, reg)
	if err != nil {
		return nil, nil, err
	}
	run := goTask(ctx, r.Run)
	return r, func() {
		run.join() //nolint:errcheck // Run returns when stopped
		r.Close()
	}, nil
}

// newHandler is the HTTP API and pages over the other parts. API keys
// are checked against the last list read, never waiting on MySQL; the
// first list is read here so the first requests find one.
func newHandler(ctx context.Context, cfg Config, st *store.Store, c *cache.Cache, vis *visits.Limiter, trend *trending.Ranking, clk *clickCounting,
	an *analytics.Enricher, ids *idgen.Generator, reg *prometheus.Registry, log *slog.Logger) (http.Handler, error) {
	keyring := handler.NewKeyring(st, []string{cfg.Handler.APIKey}, []string{cfg.Handler.AdminKey}, 5*time.Second, time.Now, log)
	if err := keyring.Load(ctx); err != nil {
		log.Warn("API keys not loaded at start; keyed calls answer 503 until they are", "err", err)
	}
	return handler.New(cfg.handlerConfig(), handler.Deps{
		Resolver:    c,
		Registry:    reg,
		Links:       st,
		Warmer:      c,
		Invalidator: c,
		IDs:         ids,
		Keys:        keyring,
		Lister:      st,
		Editor:      st,
		BatchKeys:   st,
		Exporter:    st,
		Importer:    st,
		Limiter:     c,
		Ready:       st,
		Metrics:     promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		Trending:    trend,
		Visits:      vis,
		Clicks:      clk.recorder(),
		Analytics:   analyzer(an, cfg.Analytics.Enabled),
		Stats:       st,
		Webhooks:    webhookBook(st),
		Log:         log,
	})
}

// listen starts serving h on the configured address.
func listen(cfg ServerConfig, h http.Handler, log *slog.Logger) (*server, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	log.Info("listening", "addr", ln.Addr().String())
	return newServer(ln, h, cfg.IdleTimeout, log), nil
}

// serve waits for the end: ctx cancelled (a signal), the server failing,
// or the node ID's lease lost (keep ending). It then drains the server:
// stop accepting, let open connections finish for the drain timeout,
// shut down within the shutdown timeout. http.ErrServerClosed is a clean
// exit; a lost lease is an error however the drain goes.
func serve(ctx context.Context, cfg ServerConfig, srv *server, keep *task, log *slog.Logger) error {
	select {
	case err := <-srv.failed():
		return fmt.Errorf("serve: %w", err)
	case <-keep.done: // Keep returns early only when the lease was lost
		err := keep.err
		log.Error("stopping", "err", err)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		srv.drain(sctx, 0) //nolint:errcheck // the lease error is what matters
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain", cfg.DrainTimeout, "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout+cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.drain(sctx, cfg.DrainTimeout); err != nil {
		return err
	}
	log.Info("stopped")
	return nil // the deferred closers run next
}
