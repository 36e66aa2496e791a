package trending

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"shortener"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/sentinel"
)

// Resolver looks a code up through the lookup path, so a ranked link that
// was deleted or expired is seen as such and left out.
type Resolver interface {
	Resolve(ctx context.Context, code string) (shortener.Link, error)
}

// Config tunes the ranking, its Redis client and its breaker.
type Config struct {
	// Redis is the Sentinel group and the breaker's tuning. The ranking
	// has a client of the master (the increments write, and a read must
	// see them: replicas lag) and a breaker of its own: a sick trending
	// path must not open the lookup path's breakers, nor the other way
	// round.
	Redis sentinel.Config

	// Node names this instance in Redis (its batches' sequence mark); it
	// must be distinct per live instance and kept across restarts.
	Node string
	// Prefix starts every Redis key ("trending:").
	Prefix string
	// Spool is the file holding the clicks not yet merged into Redis, so
	// a restart replays them; "" keeps them in memory only.
	Spool string

	// Tick is how often clicks are sent to Redis; Refresh how often the
	// served answer is recomputed (and the 5m window read from Redis).
	Tick    time.Duration
	Refresh time.Duration
	// Capacity is the number of counters of each local top-K (one per
	// window bucket); MaxQueued bounds the link-minutes awaiting
	// merge-back.
	Capacity  int
	MaxQueued int
	// MinClients is how many clicks (distinct clients a minute: see
	// distinct.go) a link needs in a window to appear in its answer, so
	// that a handful of clients cannot put a link on the public list; 0
	// or 1: any.
	MinClients int
}

// KeyPrefix is the namespace of trending's Redis keys.
const KeyPrefix = "trending:"

// batchSlots bounds the link-minutes of one batch, so that one script
// (three increments per slot) runs in well under a Redis deadline.
const batchSlots = 500

// Validate names every missing or impossible value of the ranking's own
// settings, each a *shortener.SettingError; Redis is sentinel.Config's to
// validate (New checks both). The defaults are the configuration's
// (cmd/shortener), not this package's.
func (c Config) Validate() error {
	var errs []error
	need := func(ok bool, field, format string, a ...any) {
		if !ok {
			errs = append(errs, shortener.Invalid(field, format, a...))
		}
	}
	need(c.Node != "", "Node", "is required")
	need(c.Prefix != "", "Prefix", "is required")
	need(c.Tick > 0, "Tick", "must be positive, got %s", c.Tick)
	need(c.Refresh >= c.Tick, "Refresh", "must be at least the tick (%s), got %s", c.Tick, c.Refresh)
	need(c.Capacity > 0, "Capacity", "must be positive, got %d", c.Capacity)
	need(c.MaxQueued > 0, "MaxQueued", "must be positive, got %d", c.MaxQueued)
	need(c.MinClients >= 0, "MinClients", "must not be negative, got %d", c.MinClients)
	return errors.Join(errs...)
}

// Ranking counts clicks into Redis's trending sets and answers trending
// queries from memory. Observe and Top are safe for concurrent use; Run
// must be running for clicks to reach Redis and answers to move.
type Ranking struct {
	cfg    Config
	master *sentinel.Client
	res    Resolver
	now    func() time.Time
	log    *slog.Logger
	m      *metrics

	inMu  sync.Mutex
	inbox map[slot]uint64
	seen  *distinct // which (client, link) pairs counted this minute

	// Owned by the loop (Run, or a test calling step).
	q        queue
	snaps    [3]*ranked                // each window's last Redis read: the snapshot
	overlay  [3]map[int64]*TopK        // per window and bucket: this instance's clicks since the snapshot
	mine     map[int64]uint64          // this instance's clicks per minute
	share    float64                   // this instance's share of all clicks
	removals map[string]bool           // gone links to drop from Redis
	links    map[string]shortener.Link // last good resolution per ranked code
	round    int
	computed time.Time

	pub atomic.Pointer[[3]shortener.Trending]
}

// New returns a Ranking and replays its spool, if any, into the queue;
// Redis is connected lazily. res filters deleted and expired links; now
// is the clock (time.Now outside tests); metrics are registered on reg.
func New(cfg Config, res Resolver, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) (*Ranking, error) {
	if err := errors.Join(cfg.Redis.Validate(), cfg.Validate()); err != nil {
		return nil, fmt.Errorf("new trending: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new trending: %w", err)
	}
	r := &Ranking{
		cfg:      cfg,
		master:   sentinel.NewClient(cfg.Redis, sentinel.Master, sentinel.NewBreaker(cfg.Redis, breakerName, m.breaker, log)),
		res:      res,
		now:      now,
		log:      log,
		m:        m,
		inbox:    map[slot]uint64{},
		seen:     newDistinct(),
		q:        queue{chunk: batchSlots},
		mine:     map[int64]uint64{},
		share:    1,
		removals: map[string]bool{},
		links:    map[string]shortener.Link{},
	}
	for i := range r.overlay {
		r.overlay[i] = map[int64]*TopK{}
	}
	// The spool is a convenience, not the record (clicks are in the click
	// journal and MySQL): a spool that cannot be replayed, say one a power
	// loss cut short, costs trending its outage clicks and must not keep
	// the instance from starting.
	if err := removeStaleTemp(cfg.Spool); err != nil {
		log.Warn("trending spool: leftover temporary file not removed", "path", cfg.Spool+".tmp", "err", err)
	}
	if err := r.q.load(cfg.Spool, cfg.Node); err != nil {
		m.setAside.Inc()
		to, aerr := setAside(cfg.Spool, now())
		log.Warn("trending spool set aside: its clicks are not merged back",
			"path", cfg.Spool, "err", err, "moved_to", to, "set_aside_err", aerr)
	}
	if n := len(r.q.batches); n > 0 {
		log.Info("trending spool replayed", "batches", n, "link_minutes", r.q.slots)
	}
	var empty [3]shortener.Trending
	for i, w := range windows() {
		empty[i] = shortener.Trending{Window: w.span, Source: sourceLocal}
	}
	r.pub.Store(&empty)
	return r, nil
}

// Sources of an answer.
const (
	sourceRedis = "redis"
	sourceLocal = "local"
)

// Close closes the Redis client; Run must have returned.
func (r *Ranking) Close() error { return r.master.Close() }

// Observe counts clicks. It only adds them to an in-memory inbox, so the
// click journal's writer never waits on Redis. Bots are left out, and a
// client's repeats of a link within a minute (distinct.go).
func (r *Ranking) Observe(clicks []shortener.Click) {
	r.inMu.Lock()
	defer r.inMu.Unlock()
	var bots, repeats float64
	over := r.seen.overflow
	for _, c := range clicks {
		if c.Agent == shortener.AgentBot {
			bots++
			continue
		}
		m := c.At.Unix() / 60
		if !r.seen.first(c.Client, c.Code, m) {
			repeats++
			continue
		}
		r.inbox[slot{c.Code, m}]++
	}
	r.m.ignored.WithLabelValues("bot").Add(bots)
	r.m.ignored.WithLabelValues("repeat").Add(repeats)
	r.m.ignored.WithLabelValues("overflow").Add(float64(r.seen.overflow - over))
}

// Run sends clicks to Redis and recomputes answers until ctx ends, then
// sends what it can one last time and writes the spool.
func (r *Ranking) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.step(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
			r.step(ctx)
		}
	}
}

// Top answers the links with the most clicks in window ("5m", "1h" or
// "24h"), at most limit of them, from memory. Links that expired since
// the answer was computed are left out.
func (r *Ranking) Top(window string, limit int) (shortener.Trending, error) {
	i, err := windowIndex(window)
	if err != nil {
		return shortener.Trending{}, err
	}
	t := r.pub.Load()[i]
	now := r.now()
	links := make([]shortener.Trend, 0, min(limit, len(t.Links)))
	for _, tr := range t.Links {
		if len(links) == limit {
			break
		}
		if !tr.Link.Gone(now) {
			links = append(links, tr)
		}
	}
	t.Links = links
	return t, nil
}

// step is one round of the loop: take the inbox, send batches, drop gone
// links from Redis, write the spool, and recompute the answers when due.
func (r *Ranking) step(ctx context.Context) {
	now := r.now()
	r.drain(now)
	r.saveSpool()
	r.flush(ctx)
	if r.q.head() == nil && len(r.removals) > 0 {
		codes := make([]string, 0, len(r.removals))
		for c := range r.removals {
			codes = append(codes, c)
		}
		if err := r.remove(ctx, codes, now); err == nil {
			r.m.removed.Add(float64(len(codes)))
			clear(r.removals)
		}
	}
	r.saveSpool()
	r.m.queued.Set(float64(r.q.slots))
	if now.Sub(r.computed) >= r.cfg.Refresh || now.Before(r.computed) {
		r.publish(ctx, now)
	}
}

func (r *Ranking) saveSpool() {
	if err := r.q.save(r.cfg.Spool, r.cfg.Node); err != nil {
		r.log.Error("trending spool", "err", err)
	}
}

// drain moves the inbox into the queue (for Redis) and the overlays (for
// local answers).
func (r *Ranking) drain(now time.Time) {
	r.inMu.Lock()
	in := r.inbox
	r.inbox = make(map[slot]uint64, len(in))
	r.inMu.Unlock()
	ws := windows()
	for s, n := range in {
		r.mine[s.Minute] += n
		for i, w := range ws {
			b := w.res.ofMinute(s.Minute)
			tk := r.overlay[i][b]
			if tk == nil {
				tk = NewTopK(r.cfg.Capacity)
				r.overlay[i][b] = tk
			}
			tk.Add(s.Code, n)
		}
		if r.q.slots >= r.cfg.MaxQueued {
			r.m.dropped.Add(float64(n))
			continue
		}
		r.q.add(s.Code, s.Minute, n, now.UnixMicro())
	}
	// Keep only what a window can still reach.
	for i, w := range ws {
		first := w.first(now)
		for b := range r.overlay[i] {
			if b < first {
				delete(r.overlay[i], b)
			}
		}
	}
	oldest := now.Unix()/60 - 15
	for m := range r.mine {
		if m < oldest {
			delete(r.mine, m)
		}
	}
}

// flush applies queued batches, oldest first, while Redis takes them.
func (r *Ranking) flush(ctx context.Context) {
	for range 256 {
		b := r.q.head()
		if b == nil {
			return
		}
		if err := r.apply(ctx, b); err != nil {
			if !errors.Is(err, errOpen) {
				r.m.batches.WithLabelValues("error").Inc()
				r.log.Debug("trending batch not applied", "seq", b.Seq, "err", err)
			}
			return
		}
		r.q.pop()
	}
}

// healthy reports whether Redis holds everything this instance counted
// and its breaker is closed: only then may its counts be read and the
// overlays be reset.
func (r *Ranking) healthy() bool {
	return r.q.head() == nil && r.master.Breaker().IsClosed()
}

// publish recomputes every window's answer: from a fresh Redis read when
// Redis is healthy and the window is due, otherwise from its snapshot
// plus this instance's clicks since.
func (r *Ranking) publish(ctx context.Context, now time.Time) {
	r.round++
	r.computed = now
	ws := windows()
	for i, w := range ws {
		if !r.healthy() || (r.snaps[i] != nil && r.round%w.every != 0) {
			continue
		}
		got, err := r.read(ctx, w, now)
		if err != nil {
			continue
		}
		r.snaps[i] = &got
		clear(r.overlay[i])
		if i == 0 {
			r.measureShare(ctx, w, now)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var out [3]shortener.Trending
	used := map[string]bool{}
	local := false
	for i, w := range ws {
		out[i] = r.answer(rctx, i, w, now, true, used)
		local = local || out[i].Source == sourceLocal
	}
	for code := range r.links {
		if !used[code] {
			delete(r.links, code)
		}
	}
	if local {
		r.m.local.Set(1)
	} else {
		r.m.local.Set(0)
	}
	r.pub.Store(&out)
}

// minShare caps how far local counts are scaled up while Redis is out
// (divided by the share): an instance that served a sliver of the
// traffic would otherwise multiply its few clicks, and one client's, by
// up to 64 (an earlier floor) into the public list.
const minShare = 1.0 / 8

// measureShare estimates this instance's share of all clicks over the
// 5m window, from Redis's totals and its own; local answers divide this
// instance's counts by it to stand for every instance's.
func (r *Ranking) measureShare(ctx context.Context, w window, now time.Time) {
	last := now.Unix() / 60
	first := last - int64(w.span/time.Minute) + 1
	total, err := r.totals(ctx, first, last)
	if err != nil || total < 100 {
		return
	}
	var mine uint64
	for m := first; m <= last; m++ {
		mine += r.mine[m]
	}
	r.share = min(max(float64(mine)/float64(total), minShare), 1)
}

// answer computes window i's answer at now: the snapshot's counts, scaled
// to the part of its period still inside the window, plus this instance's
// clicks since the snapshot divided by its share of all clicks. Right
// after a Redis read that is exactly Redis's count. Codes resolved are
// added to used.
func (r *Ranking) answer(ctx context.Context, i int, w window, now time.Time, withSnapshot bool, used map[string]bool) shortener.Trending {
	counts := r.estimate(i, w, now, withSnapshot)
	t := shortener.Trending{Window: w.span, From: w.res.start(w.first(now)), AsOf: now, Source: sourceLocal}
	if s := r.snaps[i]; s != nil && withSnapshot {
		t.Synced = s.asOf
		// Labelled redis while the last read is at most a few refresh
		// periods older than the window's own refresh period.
		fresh := now.Sub(s.asOf) <= time.Duration(w.every+3)*r.cfg.Refresh
		if fresh && r.healthy() {
			t.Source = sourceRedis
		}
	}
	for _, c := range counts {
		if len(t.Links) == fetch || c.Count < uint64(r.cfg.MinClients) {
			break // counts come largest first
		}
		l, ok := r.link(ctx, c.Key, now)
		used[c.Key] = true
		if ok {
			t.Links = append(t.Links, shortener.Trend{Link: l, Clicks: int64(c.Count)})
		}
	}
	return t
}

// estimate ranks window i's codes as described at answer.
func (r *Ranking) estimate(i int, w window, now time.Time, withSnapshot bool) []Count {
	first := w.first(now)
	from := w.res.start(first)
	est := map[string]float64{}
	if s := r.snaps[i]; s != nil && withSnapshot {
		// The snapshot covers [s.from, s.asOf); only the part after from
		// is still in the window. Clicks are taken as spread evenly over
		// it, which scales every code alike and keeps their order.
		f := 1.0
		if from.After(s.from) {
			f = 0
			if span := s.asOf.Sub(s.from); span > 0 {
				f = min(max(float64(s.asOf.Sub(from))/float64(span), 0), 1)
			}
		}
		for _, c := range s.counts {
			est[c.Key] += f * float64(c.Count)
		}
	}
	for b, tk := range r.overlay[i] {
		if b < first {
			continue
		}
		for _, c := range tk.h {
			est[c.Key] += float64(c.Count) / r.share
		}
	}
	type scored struct {
		key string
		v   float64
	}
	all := make([]scored, 0, len(est))
	for k, v := range est {
		all = append(all, scored{k, v})
	}
	order := func(a, b scored) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	}
	// Only the first few hundred can be served (fetch alive links, after
	// those found gone).
	slices.SortFunc(all, order)
	all = all[:min(len(all), 4*fetch)]
	out := make([]Count, len(all))
	for i, c := range all {
		out[i] = Count{Key: c.key, Count: uint64(math.Round(c.v))}
	}
	return out
}

// link resolves a ranked code through the lookup path. A deleted, expired
// or unknown link is left out and queued for removal from Redis; when the
// lookup path cannot answer, the last good resolution stands in.
func (r *Ranking) link(ctx context.Context, code string, now time.Time) (shortener.Link, bool) {
	l, err := r.res.Resolve(ctx, code)
	switch {
	case err == nil && l.Gone(now), errors.Is(err, shortener.ErrNotFound), errors.Is(err, shortener.ErrGone):
		delete(r.links, code)
		r.removals[code] = true
		return shortener.Link{}, false
	case err == nil:
		r.links[code] = l
		return l, true
	}
	l, ok := r.links[code]
	return l, ok && !l.Gone(now)
}
