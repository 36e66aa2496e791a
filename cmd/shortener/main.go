// Command shortener serves the URL shortener's HTTP API: it creates short
// links in MySQL and resolves redirects through Redis (via Sentinel) with
// MySQL behind it.
//
// Configuration comes from SHORTENER_* environment variables, each of
// which a flag of the same name overrides; run with -h for the list.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shortener/cache"
	"shortener/handler"
	"shortener/idgen"
	"shortener/lease"
	"shortener/store"
	"shortener/trending"
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
// maxClockWait is how far behind the last issued ID the clock may be at
// start-up before the instance refuses to start rather than wait.
const maxClockWait = 15 * time.Second

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
	if cfg.Instance == "" { // an auto node ID: a pod's name tells instances apart
		if cfg.Instance, err = os.Hostname(); err != nil {
			return fmt.Errorf("instance name: %w", err)
		}
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).
		With("instance", cfg.Instance)
	if stdout == os.Stdout { // go-redis logs per process, not per run
		cache.RouteLibraryLogs(log)
	}
	log.Info("starting", "config", cfg)

	if cfg.CodeKey == idgen.DefaultKey { // only with SHORTENER_DEV_CODE_KEY
		log.Warn("SHORTENER_CODE_KEY is the built-in default (allowed by SHORTENER_DEV_CODE_KEY): anyone can decode codes; never use it in production")
	}
	codec, err := idgen.NewCodec(cfg.CodeKey)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	st, err := store.Open(store.Config{
		DSN:          cfg.MySQLDSN,
		MaxOpen:      cfg.MySQLMaxOpen,
		MaxIdle:      cfg.MySQLMaxIdle,
		MaxLifetime:  5 * time.Minute,
		DialTimeout:  cfg.MySQLDialTimeout,
		QueryTimeout: cfg.MySQLTimeout,
	}, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := waitMigrate(ctx, st, cfg.MigrateTimeout, log); err != nil {
		return err
	}
	nodes, err := lease.New(lease.Config{NodeID: cfg.NodeID, Auto: cfg.AutoNodeID, MaxNode: idgen.MaxNode,
		Instance: cfg.Instance, TTL: cfg.NodeLeaseTTL, MaxClockWait: maxClockWait}, st, now, log, reg)
	if err != nil {
		return err
	}
	if err := nodes.Claim(ctx); err != nil {
		return err
	}
	cfg.NodeID = nodes.NodeID() // the one claimed, with SHORTENER_NODE_ID=auto
	ids, err := idgen.New(cfg.NodeID, codec)
	if err != nil {
		return err
	}
	// Released last but one (before MySQL closes), with the last ID's time.
	defer func() { nodes.Release(ctx, ids.Horizon(now())) }()
	keep := goTask(ctx, func(ctx context.Context) error { return nodes.Keep(ctx, ids.Horizon) })
	defer keep.join() //nolint:errcheck // a lost lease is answered in the select below

	c, err := cache.New(cfg.cacheConfig(), st, st, log, reg)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.LoadPending(ctx); err != nil {
		// The replay loop reads them within its interval.
		log.Warn("pending invalidations not loaded at start", "err", err)
	}
	cacheRun := goTask(ctx, c.Run)
	defer cacheRun.join() //nolint:errcheck // Run returns when stopped; before Redis closes

	trend, err := trending.New(cfg.trendingConfig(), c, time.Now, log, reg)
	if err != nil {
		return err
	}
	defer trend.Close()
	trendRun := goTask(ctx, trend.Run)
	defer trendRun.join() //nolint:errcheck // last flush and spool, before Redis closes

	// Expired idempotency keys are purged in the background.
	purge := goTask(ctx, func(ctx context.Context) error { purgeIdempotencyKeys(ctx, st, log); return nil })
	defer purge.join() //nolint:errcheck // never fails

	// The click journal feeds the trending ranking with each group it
	// writes; it closes (and drains to MySQL) before trending and MySQL.
	clk, err := startClicks(cfg, st, trend, log, reg)
	if err != nil {
		return err
	}
	defer clk.close()

	// Keys are checked against the last list read, never waiting on MySQL;
	// the first list is read here so the first requests find one.
	keyring := handler.NewKeyring(st, []string{cfg.APIKey}, []string{cfg.AdminKey}, 5*time.Second, time.Now, log)
	if err := keyring.Load(ctx); err != nil {
		log.Warn("API keys not loaded at start; keyed calls answer 503 until they are", "err", err)
	}
	h, err := handler.New(handler.Config{BaseURL: cfg.BaseURL, Instance: cfg.Instance, AnonymousCreate: cfg.Anonymous,
		CreateRate: cfg.CreateRate, CreateBurst: cfg.CreateBurst, IdempotencyTTL: cfg.IdemTTL,
		KeyCreateRate: cfg.KeyCreateRate, KeyCreateBurst: cfg.KeyCreateBurst, TrustedProxies: cfg.TrustedProxies,
		PageRate: cfg.PageRate, PageBurst: cfg.PageBurst,
		ReferrerPolicy: cfg.ReferrerPolicy, PermanentMaxAge: cfg.PermanentMaxAge,
		TrendingKeyed: cfg.TrendingKeyed, Pages: true, CookieSecret: cookieSecret(cfg.CodeKey),
		Policy: handler.NewURLPolicy(cfg.BaseURL, cfg.SelfHosts, cfg.DenyHosts, cfg.AllowLocal)}, handler.Deps{
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
		Clicks:      clk.recorder(),
		Stats:       st,
		Log:         log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	srv := newServer(ln, h, cfg.IdleTimeout, log)
	log.Info("listening", "addr", ln.Addr().String())
	if cfg.PprofAddr != "" {
		profiles := goTask(ctx, func(ctx context.Context) error { servePprof(ctx, cfg.PprofAddr, log); return nil })
		defer profiles.join() //nolint:errcheck // never fails
	}

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
	return nil // deferred: close Redis, then MySQL
}

// waitMigrate retries until the database answers and the migrations are
// applied, so instances can start before MariaDB is up.
func waitMigrate(ctx context.Context, st *store.Store, limit time.Duration, log *slog.Logger) error {
	deadline := time.Now().Add(limit)
	for {
		err := st.Migrate(ctx, max(time.Until(deadline), time.Second))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("database not ready after %s: %w", limit, err)
		}
		log.Warn("database not ready, retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Idempotency keys are purged every minute in batches of idemPurgeBatch
// (each DELETE holds its locks briefly), batch after batch while they come
// back full, up to idemPurgeBatches: 1,000 a minute could not keep up with
// 1,000 keyed creates a second; this keeps up with over 8,000.
const (
	idemPurgeBatch   = 1000
	idemPurgeBatches = 500
)

// purgeIdempotencyKeys removes expired idempotency keys every minute until
// ctx ends.
func purgeIdempotencyKeys(ctx context.Context, st *store.Store, log *slog.Logger) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := purgeExpiredKeys(ctx, st, log); n > 0 {
			log.Info("expired idempotency keys purged", "keys", n)
		}
	}
}

// keyPurger is the store's purge of expired idempotency keys.
type keyPurger interface {
	PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int64, error)
}

// purgeExpiredKeys is one round of the purge: batches while they come
// back full. It returns how many keys went.
func purgeExpiredKeys(ctx context.Context, p keyPurger, log *slog.Logger) int64 {
	var total int64
	for range idemPurgeBatches {
		n, err := p.PurgeIdempotencyKeys(ctx, time.Now(), idemPurgeBatch)
		if err != nil {
			log.Debug("purge idempotency keys", "err", err)
			break
		}
		total += n
		if n < idemPurgeBatch {
			break
		}
	}
	return total
}

// cookieSecret is the key that signs the pages' key cookie, derived from
// the code key: a secret every instance already shares, so a cookie one
// instance set is good on the others, and that never leaves the servers.
func cookieSecret(codeKey string) []byte {
	m := hmac.New(sha256.New, []byte(codeKey))
	m.Write([]byte("shortener: key cookie"))
	return m.Sum(nil)
}
