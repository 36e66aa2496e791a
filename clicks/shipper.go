package clicks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"shortener"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sink is where shipped clicks are counted: the source of truth.
type Sink interface {
	// ShippedTo returns the position through which a segment is counted,
	// 0 if none of it is, or shortener.SegmentForgotten if it was counted to its end and
	// its position forgotten (ForgetSegments).
	ShippedTo(ctx context.Context, journal, segment int64) (int64, error)
	// ShipClicks counts b and records its segment as counted through
	// b.To, in one transaction, if the segment is counted through exactly
	// b.From. Otherwise it counts nothing and returns applied false with
	// the position the segment is counted through (shortener.SegmentForgotten for a
	// forgotten segment, whatever b.From). A click whose
	// request (Click.Request) is counted already is not counted again:
	// dups is how many of b's were such. It must not keep b.Clicks,
	// which the shipper reuses for its next batch.
	ShipClicks(ctx context.Context, b shortener.ClickBatch) (applied bool, pos int64, dups int, err error)
	// PurgeClickRequests forgets the counted requests no journal can
	// still hold a copy of (clicks older than maxAge are never journaled;
	// window and hold bound what the journals' progress cannot vouch
	// for) and returns how many it forgot.
	PurgeClickRequests(ctx context.Context, maxAge, window, hold time.Duration) (int64, error)
	// ForgetSegments drops the positions of a journal's segments up to
	// segment through, whose files are gone, and remembers that each of
	// them is counted to its end: a copy of one that comes back (a
	// restored backup of the directory) must not be counted again.
	ForgetSegments(ctx context.Context, journal, through int64) error
	// CaughtUp records that every click the journal held before at is
	// counted.
	CaughtUp(ctx context.Context, journal, node int64, at time.Time) error
	// RetireJournal says the journal is wholly shipped and closed, so it
	// no longer holds the stats' as_of back.
	RetireJournal(ctx context.Context, journal int64) error
}

// ShipperConfig tunes shipping. Every field is required.
type ShipperConfig struct {
	MaxBatch int           // clicks per transaction
	Interval time.Duration // pause when caught up
	Timeout  time.Duration // deadline of one database call
	// Heartbeat is how often an idle shipper says it is caught up, which
	// keeps the stats' as_of current.
	Heartbeat time.Duration
	// PurgeEvery is how often the counted requests are purged
	// (Sink.PurgeClickRequests) with RequestWindow and RequestHold.
	PurgeEvery    time.Duration
	RequestWindow time.Duration
	RequestHold   time.Duration
}

// Validate reports every setting NewShipper cannot work with, each a
// *shortener.SettingError naming its field: all are required.
func (c ShipperConfig) Validate() error {
	var errs []error
	if c.MaxBatch <= 0 {
		errs = append(errs, shortener.Invalid("MaxBatch", "must be positive, got %d", c.MaxBatch))
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"Interval", c.Interval}, {"Timeout", c.Timeout}, {"Heartbeat", c.Heartbeat},
		{"PurgeEvery", c.PurgeEvery}, {"RequestWindow", c.RequestWindow}, {"RequestHold", c.RequestHold},
	} {
		if d.v <= 0 {
			errs = append(errs, shortener.Invalid(d.field, "must be positive, got %s", d.v))
		}
	}
	return errors.Join(errs...)
}

// Shipper copies a journal to the Sink in batches, each counted exactly
// once, and deletes the segments it has shipped. It runs in one goroutine
// (Run, then Drain at shutdown).
type Shipper struct {
	j   *Journal
	db  Sink
	cfg ShipperConfig
	log *slog.Logger
	now func() time.Time

	// The segment being shipped; f is nil between segments. padded: it
	// was never sealed by its writer (it ends in zeros).
	f      *os.File
	seq    int64
	hdr    header
	pos    int64
	padded bool
	// passed is the journal of the last segment finished when that is not
	// this process's own (an earlier run's, or a restored copy's): it is
	// retired once the shipper moves past its segments.
	passed    int64
	lastBeat  time.Time
	lastPurge time.Time
	oldest    atomic.Int64 // Unix ns of the oldest unshipped click; 0: none known
	// buf holds what a step reads, kept from step to step: a fresh
	// megabyte a second, cleared by the allocator and then collected,
	// was a quarter of the shipper's CPU under steady traffic.
	buf []byte
	// clicks is the array a step parses into, kept likewise (a batch's
	// 10,000 clicks are a megabyte); the Sink does not keep it.
	clicks []shortener.Click
	// in interns codes and referrer hosts across batches, so a link
	// clicked in every batch costs no string after its first; it is
	// emptied when it holds maxInterned.
	in interner

	shipped, batches, corrupt, errs, dups, purged prometheus.Counter
}

// NewShipper returns a Shipper of j's segments into db.
func NewShipper(j *Journal, db Sink, cfg ShipperConfig, log *slog.Logger, reg prometheus.Registerer) (*Shipper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new shipper: %w", err)
	}
	s := &Shipper{j: j, db: db, cfg: cfg, log: log, now: time.Now, in: interner{},
		shipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_clicks_shipped_total", Help: "Clicks counted in MySQL from this instance's journal."}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_click_batches_total", Help: "Batches of clicks committed in MySQL."}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_click_journal_corrupt_total", Help: "Corrupt stretches and torn tails skipped while reading the journal."}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_click_ship_errors_total", Help: "Failed attempts to ship a batch (retried)."}),
		dups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_clicks_duplicate_total", Help: "Clicks shipped but not counted: their request (nginx's retry of it on another instance, or on this one) was counted already."}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_click_requests_purged_total", Help: "Sets of counted request IDs (one per shipped batch) forgotten by this instance's purges."}),
	}
	if reg != nil {
		reg.MustRegister(s.shipped, s.batches, s.corrupt, s.errs, s.dups, s.purged, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortener_click_oldest_unshipped_seconds", Help: "Age of the oldest click in the journal not yet counted in MySQL; 0 when caught up."},
			s.oldestAge))
	}
	return s, nil
}

func (s *Shipper) oldestAge() float64 {
	ns := s.oldest.Load()
	if ns == 0 {
		return 0
	}
	return max(0, s.now().Sub(time.Unix(0, ns)).Seconds())
}

// Run ships until ctx ends, retrying with backoff while the database
// cannot be reached. It returns nil when ctx ends.
func (s *Shipper) Run(ctx context.Context) error {
	_, err := s.loop(ctx, false)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Drain ships until the journal, closed first, is empty, or ctx ends. It
// reports whether everything was shipped.
func (s *Shipper) Drain(ctx context.Context) (bool, error) {
	defer s.closeSegment()
	done, err := s.loop(ctx, true)
	if !done {
		return false, err
	}
	if err := s.db.RetireJournal(ctx, s.j.ID()); err != nil {
		return true, fmt.Errorf("retire journal: %w", err)
	}
	return true, nil
}

// loop ships batch after batch. With untilEmpty it returns once nothing is
// left instead of waiting for more.
func (s *Shipper) loop(ctx context.Context, untilEmpty bool) (bool, error) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		idle, err := s.step(ctx)
		switch {
		case err != nil:
			s.errs.Inc()
			s.log.Warn("shipping clicks failed; retrying", "err", err, "retry_in", backoff.String())
			if !sleep(ctx, backoff) {
				return false, ctx.Err()
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		case idle && untilEmpty:
			return true, nil
		case idle:
			if !sleep(ctx, s.cfg.Interval) {
				return false, nil
			}
		}
		backoff = 100 * time.Millisecond
	}
	return false, ctx.Err()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// step does one unit of work: open the oldest segment, ship a batch from
// it, or delete it once shipped. It reports idle when there was nothing
// more to do: nothing to ship, or it shipped up to the writer.
func (s *Shipper) step(ctx context.Context) (idle bool, err error) {
	if s.f == nil {
		segs, err := listSegments(s.j.cfg.Dir)
		if err != nil {
			return false, err
		}
		if len(segs) == 0 {
			s.oldest.Store(0)
			return true, s.retirePassed(ctx, 0)
		}
		if err := s.openSegment(ctx, segs[0]); err != nil {
			return false, err
		}
	}
	readAt := s.now()
	limit, sealed := s.j.readable(s.seq)
	if sealed {
		fi, err := s.f.Stat()
		if err != nil {
			return false, fmt.Errorf("stat journal segment %d: %w", s.seq, err)
		}
		limit = fi.Size()
	}
	start := max(s.pos, headerSize) // pos 0: nothing counted yet
	if start >= limit {
		if !sealed {
			s.oldest.Store(0)
			if err := s.heartbeat(ctx, readAt); err != nil {
				return true, err
			}
			return true, s.purge(ctx)
		}
		return false, s.finishSegment(ctx)
	}
	sc, err := s.read(start, limit)
	if err != nil {
		return false, err
	}
	if sc.padding {
		s.padded = true
		if len(sc.clicks) == 0 && sc.next == start {
			// Nothing but zeros left: the end of a segment whose writer
			// crashed (the writer's own current segment is read only up
			// to what it has written).
			if !sealed {
				return true, nil
			}
			return false, s.finishSegment(ctx)
		}
	}
	if sc.corrupt > 0 || sc.torn {
		n := sc.corrupt
		if sc.torn {
			n++
		}
		s.corrupt.Add(float64(n))
		s.log.Warn("skipped corrupt or torn journal records", "segment", s.seq, "from", start, "to", sc.next, "corrupt", sc.corrupt, "torn_tail", sc.torn)
	}
	b := shortener.ClickBatch{Journal: s.hdr.journal, Node: s.hdr.node, Segment: s.seq,
		From: s.pos, To: sc.next, Clicks: sc.clicks}
	if n := len(sc.clicks); n > 0 {
		s.oldest.Store(sc.clicks[0].At.UnixNano())
		b.CaughtUp = sc.clicks[n-1].At
	}
	if !sealed && sc.next == limit {
		b.CaughtUp = readAt
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	applied, pos, dups, err := s.db.ShipClicks(cctx, b)
	if err != nil {
		return false, fmt.Errorf("ship clicks of journal segment %d [%d, %d): %w", s.seq, b.From, b.To, err)
	}
	if !applied {
		// Counted already (a commit whose answer was lost), or the
		// recorded position is elsewhere: continue from the record.
		s.log.Info("batch already counted; continuing from the recorded position", "segment", s.seq, "from", b.From, "recorded", pos)
		s.pos = pos
		return false, nil
	}
	s.pos = sc.next
	s.shipped.Add(float64(len(sc.clicks) - dups))
	s.dups.Add(float64(dups))
	s.batches.Inc()
	if !b.CaughtUp.IsZero() {
		s.lastBeat = s.now()
	}
	// A batch that reached the end of what the writer had written is
	// the shipper caught up: it waits Interval before the next, so that
	// under steady traffic a batch holds Interval's clicks. Going on at
	// once made a transaction of the few clicks written while the last
	// one ran (tens, at thousands a second), and MySQL's cost is per
	// transaction far more than per click.
	return !sealed && sc.next == limit, s.purge(ctx)
}

// purge forgets counted requests now and then (every instance does it;
// a purge is idempotent and cheap when there is nothing to forget).
func (s *Shipper) purge(ctx context.Context) error {
	if s.now().Sub(s.lastPurge) < s.cfg.PurgeEvery {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n, err := s.db.PurgeClickRequests(cctx, s.j.cfg.MaxRequestAge, s.cfg.RequestWindow, s.cfg.RequestHold)
	if err != nil {
		return fmt.Errorf("purge counted click requests: %w", err)
	}
	s.purged.Add(float64(n))
	s.lastPurge = s.now()
	return nil
}

// maxRead bounds what one step reads from a segment: about 50,000
// records, more than a batch.
const maxRead = 4 << 20

// maxInterned bounds the shipper's interned strings (a few MB at most).
const maxInterned = 100_000

// read parses the segment from start up to limit.
func (s *Shipper) read(start, limit int64) (scan, error) {
	n := min(limit-start, maxRead)
	if int64(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	buf := s.buf[:n]
	got, err := s.f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return scan{}, fmt.Errorf("read journal segment %d: %w", s.seq, err)
	}
	clear(buf[got:]) // past the file's end reads as the zeros of a fresh buffer
	if len(s.in) >= maxInterned {
		clear(s.in)
	}
	sc := parse(s.clicks, s.in, buf, start, start+n == limit, s.cfg.MaxBatch)
	s.clicks = sc.clicks
	if sc.next == start && len(sc.clicks) == 0 && !sc.padding {
		// A record straddles the read window: cannot happen with
		// records under maxPayload, but never spin on it.
		return scan{}, fmt.Errorf("read journal segment %d: no progress at %d", s.seq, start)
	}
	return sc, nil
}

// openSegment opens segment seq and finds how far it is counted.
func (s *Shipper) openSegment(ctx context.Context, seq int64) error {
	f, err := os.Open(segmentPath(s.j.cfg.Dir, seq))
	if err != nil {
		return fmt.Errorf("open journal segment %d: %w", seq, err)
	}
	buf := make([]byte, headerSize)
	n, _ := f.ReadAt(buf, 0)
	hdr, ok := parseHeader(buf[:n])
	if !ok {
		f.Close()
		if _, sealed := s.j.readable(seq); !sealed {
			return fmt.Errorf("journal segment %d has no header", seq)
		}
		// A crash while the segment was being created: nothing in it
		// was ever acknowledged.
		s.log.Warn("removing a journal segment without a header", "segment", seq, "bytes", n)
		s.corrupt.Inc()
		return s.j.remove(seq)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.retirePassed(ctx, hdr.journal); err != nil {
		f.Close()
		return err
	}
	pos, err := s.db.ShippedTo(cctx, hdr.journal, seq)
	if err != nil {
		f.Close()
		s.oldest.CompareAndSwap(0, hdr.created.UnixNano())
		return fmt.Errorf("position of journal segment %d: %w", seq, err)
	}
	s.f, s.seq, s.hdr, s.pos, s.padded = f, seq, hdr, pos, false
	return nil
}

// retirePassed retires the journal of an earlier run (or of a restored
// directory) once its last segment here is shipped, which is when the
// next segment, next's (0: none), belongs to another journal: it no
// longer holds the stats' as_of back. Its segments sort before this
// run's, which begin after the highest number found at Open.
func (s *Shipper) retirePassed(ctx context.Context, next int64) error {
	if s.passed == 0 || s.passed == next {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.db.RetireJournal(cctx, s.passed); err != nil {
		return fmt.Errorf("retire journal %d of an earlier run: %w", s.passed, err)
	}
	s.log.Info("journal of an earlier run shipped and retired", "journal_id", s.passed)
	s.passed = 0
	return nil
}

// finishSegment deletes a sealed segment that is shipped to its end.
func (s *Shipper) finishSegment(ctx context.Context) error {
	seq, journal, padded := s.seq, s.hdr.journal, s.padded
	s.closeSegment()
	if err := s.j.remove(seq); err != nil {
		return err
	}
	if journal != s.j.ID() {
		s.passed = journal
		if padded {
			// Never sealed: its writer crashed, or this is a copy of a
			// segment still being written elsewhere (a cloned volume).
			// Its position stays, so the writer, if alive, goes on from
			// it; one row per crash.
			return nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.db.ForgetSegments(cctx, journal, seq); err != nil {
		// Harmless: the next segment's deletion forgets it too.
		s.log.Warn("forgetting shipped journal segments", "through", seq, "err", err)
	}
	return nil
}

func (s *Shipper) closeSegment() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// heartbeat tells the database, now and then, that this journal is caught
// up, so the stats' as_of moves while no clicks arrive.
func (s *Shipper) heartbeat(ctx context.Context, at time.Time) error {
	if s.now().Sub(s.lastBeat) < s.cfg.Heartbeat {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.db.CaughtUp(cctx, s.hdr.journal, s.hdr.node, at); err != nil {
		return fmt.Errorf("record caught up: %w", err)
	}
	s.lastBeat = s.now()
	return nil
}
