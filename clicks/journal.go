// Package clicks counts redirects without ever losing or doubling one.
//
// Each instance appends its clicks to a journal on local disk before the
// redirect's answer is written (Journal.Record), so a killed process loses
// no click a client received, and a Shipper copies the journal to the
// source of truth in batches, each counted exactly once. Redirects never
// wait on the database: while it is down the journal grows, up to a
// bound, and is shipped when it returns.
package clicks

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"shortener"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Observer hears of every group of clicks once it is in the journal. It
// is called from the journal's writer goroutine, never on a request's
// path, and must not block (buffer and return); it may keep the slice.
type Observer interface {
	Observe(clicks []shortener.Click)
}

// Config places and bounds a journal.
type Config struct {
	Dir    string // the journal's directory, created if missing
	NodeID int64  // the instance's node ID, written into each segment
	// MaxBytes bounds the journal on disk; past it new clicks are
	// dropped (and counted).
	MaxBytes int64
	// SegmentBytes is the size at which a segment is closed and the next
	// begun; a segment is deleted once wholly shipped.
	SegmentBytes int64
	// SyncInterval is how often the journal is fsynced: what a machine
	// crash (not a process crash) can lose.
	SyncInterval time.Duration
}

// Journal is an instance's append-only log of clicks on local disk, a
// directory of numbered segment files. Record appends a click and returns
// once it is written to the file (in the kernel's page cache, which
// survives the process); concurrent Records share one write. It is safe
// for concurrent use.
type Journal struct {
	cfg  Config
	id   int64
	lock *os.File // holds the directory's flock while open
	obs  Observer
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex
	cur    *group
	closed bool
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}

	size atomic.Int64 // bytes of every segment on disk, the current one included

	// Written by the writer goroutine, read by the shipper.
	hmu  sync.Mutex
	head position // the current segment and how far it is written
	// Owned by the writer goroutine.
	f        *os.File
	seq      int64
	broken   bool // the last write failed: begin a new segment
	syncs    syncer
	recorded prometheus.Counter
	dropped  *prometheus.CounterVec
}

// position is a place in the journal.
type position struct {
	seq    int64
	off    int64
	closed bool // the journal is closed: nothing more will be written
}

// group is the clicks that arrive while the writer is busy: they are
// encoded into one buffer and written with one write.
type group struct {
	clicks []shortener.Click
	buf    []byte
	done   chan struct{}
	err    error
}

func newGroup() *group { return &group{done: make(chan struct{})} }

// Journal errors.
var (
	ErrLocked = errors.New("clicks: journal directory is in use by another process")
)

// Open opens (or creates) the journal in cfg.Dir and begins a new segment
// in it; segments left by an earlier run stay for the shipper. obs may be
// nil.
func Open(cfg Config, obs Observer, log *slog.Logger, reg prometheus.Registerer) (*Journal, error) {
	// No defaults here: cmd/shortener's configuration owns them.
	if cfg.Dir == "" || cfg.MaxBytes <= 0 || cfg.SegmentBytes <= 0 || cfg.SyncInterval <= 0 {
		return nil, fmt.Errorf("open journal: need a directory and a positive max bytes, segment bytes and sync interval, got %+v", cfg)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	// One process per journal: two writers would interleave segments and
	// two shippers would race for the same positions.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("open journal %s: %w (%v)", cfg.Dir, ErrLocked, err)
	}
	j := &Journal{
		cfg: cfg, lock: lock, obs: obs, log: log, now: time.Now,
		cur: newGroup(), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_clicks_recorded_total", Help: "Clicks written to the journal."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_clicks_dropped_total", Help: "Clicks not journaled: full (the journal reached its bound), error (a write failed), closed."}, []string{"reason"}),
	}
	fail := func(err error) (*Journal, error) {
		lock.Close()
		return nil, fmt.Errorf("open journal %s: %w", cfg.Dir, err)
	}
	if j.id, err = journalID(cfg.Dir); err != nil {
		return fail(err)
	}
	segs, err := listSegments(cfg.Dir)
	if err != nil {
		return fail(err)
	}
	for _, s := range segs {
		fi, err := os.Stat(segmentPath(cfg.Dir, s))
		if err != nil {
			return fail(err)
		}
		j.size.Add(fi.Size())
	}
	if len(segs) > 0 {
		j.seq = segs[len(segs)-1]
	}
	if err := j.rotate(); err != nil {
		return fail(err)
	}
	for _, r := range []string{"full", "error", "closed"} {
		j.dropped.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(j.recorded, j.dropped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortener_click_journal_bytes", Help: "Bytes of the click journal on disk (shipped segments are deleted)."},
			func() float64 { return float64(j.size.Load()) }))
	}
	go j.write()
	j.syncs.start(j.stop, cfg.SyncInterval, log)
	return j, nil
}

// ID returns the journal's ID, random and fixed for its directory.
func (j *Journal) ID() int64 { return j.id }

// Record appends c to the journal and returns once it is written to the
// file. It never waits on anything but the local disk. A click that
// cannot be journaled (the journal is at its bound, a write failed) is
// dropped and counted in shortener_clicks_dropped_total: the redirect it
// belongs to is answered all the same.
func (j *Journal) Record(c shortener.Click) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		j.dropped.WithLabelValues("closed").Inc()
		return
	}
	g := j.cur
	n := len(g.buf)
	g.buf = appendRecord(g.buf, c)
	// headerSize: room for the segment the write may have to begin.
	if j.size.Load()+int64(len(g.buf))+headerSize > j.cfg.MaxBytes {
		g.buf = g.buf[:n]
		j.mu.Unlock()
		j.dropped.WithLabelValues("full").Inc()
		return
	}
	g.clicks = append(g.clicks, c)
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-g.done
}

// Close writes what was recorded, fsyncs the journal and closes it. Later
// Records drop their clicks.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	close(j.stop)
	<-j.done
	j.syncs.wait()
	err := j.syncs.sync(true)
	j.hmu.Lock()
	j.head.closed = true
	j.hmu.Unlock()
	return errors.Join(err, j.lock.Close())
}

// write is the writer goroutine: it takes the group that gathered while
// it was busy, writes it with one write, and lets its Records return.
func (j *Journal) write() {
	defer close(j.done)
	for {
		stopping := false
		select {
		case <-j.wake:
		case <-j.stop:
			stopping = true
		}
		j.mu.Lock()
		g := j.cur
		if len(g.clicks) > 0 {
			j.cur = newGroup()
		} else {
			g = nil // still being filled: not ours to read
		}
		j.mu.Unlock()
		if g != nil {
			g.err = j.append(g.buf)
			close(g.done)
			if g.err != nil {
				j.dropped.WithLabelValues("error").Add(float64(len(g.clicks)))
				j.log.Error("click journal write failed; clicks dropped", "clicks", len(g.clicks), "err", g.err)
			} else {
				j.recorded.Add(float64(len(g.clicks)))
				if j.obs != nil {
					j.obs.Observe(g.clicks)
				}
			}
		}
		if stopping {
			return
		}
	}
}

// append writes b to the current segment, beginning a new one first when
// it is full or the last write failed.
func (j *Journal) append(b []byte) error {
	j.hmu.Lock()
	off := j.head.off
	j.hmu.Unlock()
	if j.broken || (off > headerSize && off+int64(len(b)) > j.cfg.SegmentBytes) {
		if err := j.rotate(); err != nil {
			return err
		}
		off = headerSize
	}
	n, err := j.f.Write(b)
	j.size.Add(int64(n))
	if err != nil {
		// The partial record is skipped as corrupt by the shipper,
		// which reads no further than the last whole write.
		j.broken = true
		return fmt.Errorf("append to journal segment %d: %w", j.seq, err)
	}
	j.hmu.Lock()
	j.head.off = off + int64(n)
	j.hmu.Unlock()
	return nil
}

// rotate begins segment seq+1 and hands the current one to the syncer,
// which fsyncs and closes it.
func (j *Journal) rotate() error {
	seq := j.seq + 1
	f, err := os.OpenFile(segmentPath(j.cfg.Dir, seq), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create journal segment %d: %w", seq, err)
	}
	hdr := appendHeader(nil, header{journal: j.id, node: j.cfg.NodeID, created: j.now()})
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("create journal segment %d: %w", seq, err)
	}
	j.size.Add(headerSize)
	old := j.f
	j.f, j.seq, j.broken = f, seq, false
	j.syncs.switchTo(f, old, j.cfg.Dir)
	j.hmu.Lock()
	j.head = position{seq: seq, off: headerSize}
	j.hmu.Unlock()
	return nil
}

// readable returns how far segment seq may be read: the current segment
// up to its last whole write, an older one (sealed) to its end.
func (j *Journal) readable(seq int64) (limit int64, sealed bool) {
	j.hmu.Lock()
	defer j.hmu.Unlock()
	if seq == j.head.seq && !j.head.closed {
		return j.head.off, false
	}
	return -1, true
}

// remove deletes a wholly shipped, sealed segment.
func (j *Journal) remove(seq int64) error {
	p := segmentPath(j.cfg.Dir, seq)
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("remove journal segment %d: %w", seq, err)
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("remove journal segment %d: %w", seq, err)
	}
	j.size.Add(-fi.Size())
	return nil
}

// segmentPath names segment seq: its number, zero-padded so names sort.
func segmentPath(dir string, seq int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.clicks", seq))
}

// listSegments returns the sequence numbers of the segments in dir, in
// order.
func listSegments(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list journal segments: %w", err)
	}
	var segs []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".clicks")
		if !ok || e.IsDir() {
			continue
		}
		if n, err := strconv.ParseInt(name, 10, 64); err == nil && n > 0 {
			segs = append(segs, n)
		}
	}
	sort.Slice(segs, func(a, b int) bool { return segs[a] < segs[b] })
	return segs, nil
}

// journalID reads the journal's ID from dir/ID, creating a random one the
// first time. Batches are counted once per (journal ID, segment,
// position), so the ID must differ between directories: a fresh volume
// starts its segments at 1 again without colliding with an old one's.
func journalID(dir string) (int64, error) {
	p := filepath.Join(dir, "ID")
	b, err := os.ReadFile(p)
	if err == nil {
		id, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil || id <= 0 {
			return 0, fmt.Errorf("journal ID file %s is malformed: %q", p, b)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("read journal ID: %w", err)
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return 0, fmt.Errorf("make journal ID: %w", err)
	}
	id := int64(binary.BigEndian.Uint64(r[:])>>1) | 1 // positive, never 0
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("write journal ID: %w", err)
	}
	_, err = fmt.Fprintln(f, id)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return 0, fmt.Errorf("write journal ID: %w", err)
	}
	return id, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
