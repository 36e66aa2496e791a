package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
	"shortener/clicks"
	"shortener/handler"
	"shortener/store"
)

// clickCounting is the running click journal and its shipper.
type clickCounting struct {
	j     *clicks.Journal
	ship  *clicks.Shipper
	stop  context.CancelFunc
	done  chan error
	fold  chan struct{} // closed when the folder has stopped
	drain time.Duration
	log   *slog.Logger
}

// startClicks opens the journal and starts shipping it to st, beginning
// with whatever an earlier run left. obs hears every journaled group (the
// trending ranking); it may be nil. Counting off: nil, nil.
func startClicks(cfg Config, st *store.Store, obs clicks.Observer, log *slog.Logger, reg prometheus.Registerer) (*clickCounting, error) {
	if !cfg.Clicks.On {
		log.Warn("click counting is off (SHORTENER_CLICKS=false): redirects are not counted")
		return nil, nil
	}
	j, err := clicks.Open(cfg.clicksConfig(), obs, log, reg)
	if err != nil {
		return nil, err
	}
	ship, err := clicks.NewShipper(j, st, cfg.shipperConfig(), log, reg)
	if err != nil {
		j.Close()
		return nil, err
	}
	cc := &clickCounting{j: j, ship: ship, done: make(chan error, 1), fold: make(chan struct{}), drain: cfg.Clicks.DrainTimeout, log: log}
	ctx, stop := context.WithCancel(context.Background())
	cc.stop = stop
	go func() { cc.done <- cc.ship.Run(ctx) }()
	folder := clicks.NewFolder(st, clicksFold, log, reg)
	go func() { defer close(cc.fold); folder.Run(ctx) }()
	log.Info("click journal open", "dir", cfg.Clicks.Dir, "journal_id", j.ID())
	return cc, nil
}

// recorder is what the handler journals clicks with: nil when counting is
// off (an untyped nil, so the handler sees none).
func (cc *clickCounting) recorder() handler.Recorder {
	if cc == nil {
		return nil
	}
	return cc.j
}

// close runs after the HTTP server has drained: it stops the shipper,
// closes the journal (writing and fsyncing the last group), then ships
// what is left for at most the drain timeout. Whatever remains stays on
// disk and ships at the next start.
func (cc *clickCounting) close() {
	if cc == nil {
		return
	}
	cc.stop()
	<-cc.done
	<-cc.fold
	if err := cc.j.Close(); err != nil {
		cc.log.Error("closing the click journal", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cc.drain)
	defer cancel()
	done, err := cc.ship.Drain(ctx)
	switch {
	case err != nil && !done:
		cc.log.Warn("click journal not drained at shutdown; it ships at the next start", "err", err)
	case err != nil:
		cc.log.Warn("click journal drained, not retired", "err", err)
	default:
		cc.log.Info("click journal drained")
	}
}

// Shipping settings not worth a knob: a batch is at most this many
// clicks, a second's at up to 30,000 redirects a second per instance (a
// batch cut short leaves the rest to a batch of its own at once, where
// each hot link has a click or two: its rows made again, or its clicks
// pending; statements carry at most 500 rows), and an idle shipper says
// it is caught up (for as_of) this often. How long a caught-up shipper
// waits is the knob -clicks-ship-interval: a batch costs MySQL one row
// per link-hour and link-day-host in it however many clicks it holds, so
// fewer, larger batches are cheaper (make bench: with 200 ms and
// 2,000-click batches the stack spent ~14% more CPU per redirect with
// counting on than off; through nginx over 1,000 hot links, MariaDB
// spent 2.4-2.9 µs a redirect at 3 s against 2.6-4.6 at 1 s).
//
// Counted request IDs are purged every clicksPurge, and never younger
// than clicksRequestWindow (by MySQL's clock): what covers a journal
// that has not reached MySQL yet (store.PurgeClickRequests).
//
// Every clicksFold an instance checks whether the pending clicks of the
// hour just ended are folded, and folds them if not
// (store.Store.FoldClicks): within a minute of each hour's end.
const (
	clicksBatch         = 30000
	clicksHeartbeat     = 2 * time.Second
	clicksPurge         = 10 * time.Second
	clicksRequestWindow = 10 * time.Minute
	clicksFold          = time.Minute
)

// clicksConfig is the journal's: its section, with the node ID and the
// segment size derived unless set: a sixteenth of the bound, between 1
// and 16 MiB, and never above the bound.
func (cfg Config) clicksConfig() clicks.Config {
	c := cfg.Clicks.Config
	c.NodeID = cfg.Node.ID.N
	if c.SegmentBytes == 0 {
		c.SegmentBytes = min(16<<20, max(1<<20, c.MaxBytes/16))
		if c.MaxBytes > 0 {
			c.SegmentBytes = min(c.SegmentBytes, c.MaxBytes)
		}
	}
	return c
}

// minSegmentBytes is the smallest segment the configuration accepts, a
// few hundred clicks: a rule of this deployment's, above the journal's
// own (a segment must hold one record), so that a mistyped size does not
// make the journal begin a segment every few clicks.
const minSegmentBytes = 16 << 10

// validate checks what is the configuration's own: a segment size given
// is not below minSegmentBytes.
func (c ClicksConfig) validate() error {
	if c.SegmentBytes != 0 && c.SegmentBytes < minSegmentBytes {
		return shortener.Invalid("SegmentBytes", "must be 0 (derived) or at least %d, got %d", minSegmentBytes, c.SegmentBytes)
	}
	return nil
}

// shipperConfig is the shipper's: a batch's transaction may take a few
// query deadlines.
func (cfg Config) shipperConfig() clicks.ShipperConfig {
	return clicks.ShipperConfig{MaxBatch: clicksBatch, Interval: cfg.Clicks.ShipInterval, Timeout: 5 * cfg.MySQL.QueryTimeout, Heartbeat: clicksHeartbeat,
		PurgeEvery: clicksPurge, RequestWindow: clicksRequestWindow, RequestHold: cfg.Clicks.RequestHold}
}
