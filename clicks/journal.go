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

// Observer hears of every click once it is in the journal, in groups. It
// is called from the journal's own goroutine, never on a request's path,
// and must not block (buffer and return). It must not keep the slice:
// the journal reuses it for the next group.
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
	// SegmentBytes is the size of a segment file: its blocks are
	// allocated when it begins, it is mapped whole, and the next is begun
	// when it is full. A segment is deleted once wholly shipped. A new
	// segment needs this much free space on the volume.
	SegmentBytes int64
	// SyncInterval is how often the journal is fsynced: what a machine
	// crash (not a process crash) can lose.
	SyncInterval time.Duration
	// MaxRequestAge is how old a click's proxied request (Click.Request)
	// may be when it is journaled; an older one is dropped and counted
	// (reason "stale"). The proxy has long given up on such a request
	// (nginx waits 400 ms for a redirect, then retries elsewhere), so its
	// client never got this answer; and the bound is what lets the
	// database forget request IDs (see Store.PurgeClickRequests). It
	// must exceed the longest the proxy waits for an answer plus the
	// clock difference between proxy and instance.
	MaxRequestAge time.Duration
}

// Validate reports every setting Open cannot work with, all at once,
// each a *shortener.SettingError naming its field. There are no defaults
// here: cmd/shortener's configuration owns them.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) { errs = append(errs, shortener.Invalid(field, format, a...)) }
	if c.Dir == "" {
		bad("Dir", "is required")
	}
	if c.MaxBytes <= 0 {
		bad("MaxBytes", "must be positive, got %d", c.MaxBytes)
	}
	// A segment holds at least its header and one record of the largest
	// size, and fits within the journal's bound.
	switch least := int64(headerSize + recordHeader + maxPayload); {
	case c.SegmentBytes <= least:
		bad("SegmentBytes", "must be more than %d, got %d", least, c.SegmentBytes)
	case c.MaxBytes > 0 && c.SegmentBytes > c.MaxBytes:
		bad("SegmentBytes", "must be at most the max bytes (%d), got %d", c.MaxBytes, c.SegmentBytes)
	}
	if c.SyncInterval <= 0 {
		bad("SyncInterval", "must be positive, got %s", c.SyncInterval)
	}
	if c.MaxRequestAge <= 0 {
		bad("MaxRequestAge", "must be positive, got %s", c.MaxRequestAge)
	}
	return errors.Join(errs...)
}

// Pages ahead of the write position are faulted in, writable, by a
// goroutine (prefaultLoop), so a redirect does not take the page fault of
// a first write to a page of a shared file mapping: on a busy machine
// that fault waits on the file system's journal, 100 µs and more, once
// every ~90 clicks. MADV_POPULATE_WRITE (Linux 5.14; the syscall package
// does not name it) does it without changing a byte, so it is safe beside
// concurrent Records. Every fsync write-protects the pages again, so the
// window is repopulated after each. Elsewhere than Linux nothing is
// populated (populate, in journal_linux.go and journal_other.go).
const (
	pageSize       = 4096
	prefaultStep   = 64 << 10  // repopulate each time the writer crosses this
	prefaultWindow = 512 << 10 // how far ahead
)

// segmentRetry is how often, while no segment can be begun (the volume
// is full), a click tries again: often enough that journaling resumes
// within a moment of space returning, rarely enough that a full disk
// costs a redirect nothing but a clock read.
const segmentRetry = 250 * time.Millisecond

// maxRequestSkew is how far in the future a proxied request's time may be
// by this instance's clock: the two clocks' difference. A later one is a
// wrong clock or a forged header; it is clamped to this instance's clock
// (and counted), so nothing future is journaled.
const maxRequestSkew = time.Second

// observeEvery is how often written clicks are passed to the Observer: a
// tenth of trending's default tick, so its answers lose nothing, with ten
// times fewer wake-ups of an idle instance than the 20 ms it was.
const observeEvery = 200 * time.Millisecond

// Journal is an instance's append-only log of clicks on local disk, a
// directory of numbered segment files. Each segment is a file of
// SegmentBytes mapped into memory (MAP_SHARED): Record copies the encoded
// click into the mapping, which is the kernel's page cache of the file,
// so the click outlives the process the moment Record returns, without a
// system call. A syncer fsyncs it every SyncInterval. It is safe for
// concurrent use.
type Journal struct {
	cfg  Config
	id   int64
	lock *os.File // holds the directory's flock while open
	obs  Observer
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex
	closed bool
	f      *os.File // the current segment; nil while none could be begun
	mem    []byte   // its mapping
	// While no segment can be begun, clicks are dropped for failReason
	// until retryAt, when the next click tries again.
	retryAt    time.Time
	failReason string
	seq        int64
	off        int64 // bytes written to the current segment, header included
	scratch    []byte
	pending    []shortener.Click // written, not yet observed
	// spare is the slice observe handed the observer last time, emptied:
	// the next pending, so that recording a click allocates nothing
	// (a fresh slice each time was a tenth of a hot redirect's bytes).
	// Only observe's goroutine touches it.
	spare []shortener.Click

	prefault   chan struct{}  // asks prefaultLoop to populate the pages ahead
	populating sync.WaitGroup // a populate of the current mapping in progress

	size atomic.Int64 // bytes of every segment on disk (written bytes of the current one)
	// syncedSize is size at the last periodic fsync (the sync loop's own).
	syncedSize int64

	stop     chan struct{}
	done     chan struct{}
	syncs    syncer
	recorded prometheus.Counter
	dropped  *prometheus.CounterVec
	clamped  prometheus.Counter
}

// Journal errors.
var (
	ErrLocked = errors.New("clicks: journal directory is in use by another process")
)

// Open opens (or creates) the journal in cfg.Dir and begins a new segment
// in it; segments left by an earlier run stay for the shipper. obs may be
// nil.
//
// Each Open takes a new random journal ID, written into the header of
// every segment it begins: batches are counted once per (journal ID,
// segment, position), so segments must never share an ID with a different
// history. A directory restored from a backup, or a cloned volume, holds
// older copies of segments whose positions MySQL has already counted
// further; had the ID survived in the directory, its new segments would
// reuse those numbers and be skipped as counted. Its old segments keep
// their own IDs and ship like any other (see Shipper).
//
// Open fails only if the directory cannot be used at all (created,
// locked). A segment that cannot be begun, on a full volume say, is not
// an error: clicks are dropped and counted until one can.
func Open(cfg Config, obs Observer, log *slog.Logger, reg prometheus.Registerer) (*Journal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
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
		scratch: make([]byte, 0, recordHeader+maxPayload),
		stop:    make(chan struct{}), done: make(chan struct{}), prefault: make(chan struct{}, 1),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_clicks_recorded_total", Help: "Clicks written to the journal."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_clicks_dropped_total", Help: "Clicks not journaled: full (the journal reached its bound), disk_full (its volume has no room for a new segment), error (a segment could not be begun for another reason), closed, stale (the proxy's request was older than the max request age: the proxy had given up on it)."}, []string{"reason"}),
		clamped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_click_request_times_clamped_total", Help: "Clicks whose proxied request claimed a time more than a second ahead of this instance's clock; journaled with this instance's time."}),
	}
	fail := func(err error) (*Journal, error) {
		lock.Close()
		return nil, fmt.Errorf("open journal %s: %w", cfg.Dir, err)
	}
	if j.id, err = newJournalID(); err != nil {
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
	j.begin()
	for _, r := range []string{"full", "disk_full", "error", "closed", "stale"} {
		j.dropped.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(j.recorded, j.dropped, j.clamped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortener_click_journal_bytes", Help: "Bytes of the click journal on disk (shipped segments are deleted)."},
			func() float64 { return float64(j.size.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "shortener_click_journal_free_bytes", Help: "Bytes free on the click journal's volume for an unprivileged writer (statfs); a new segment needs the journal's segment size. -1 if it cannot be read."},
				j.freeBytes))
	}
	go j.observeLoop()
	go j.prefaultLoop()
	j.syncs.start(j.stop, cfg.SyncInterval, log, j.afterSync)
	return j, nil
}

// freeBytes reads the free space of the journal's volume.
func (j *Journal) freeBytes() float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(j.cfg.Dir, &st); err != nil {
		return -1
	}
	return float64(st.Bavail) * float64(st.Bsize) //nolint:unconvert // the field types differ by OS
}

// ID returns the journal's ID: random, new at each Open.
func (j *Journal) ID() int64 { return j.id }

// Record appends c to the journal. When it returns, the click is in the
// page cache of a segment file: a crash of this process cannot lose it.
// It never waits on anything but a mutex held for a copy (and, once per
// segment, for creating the next one). A click that cannot be journaled
// (the journal is at its bound, a segment cannot be created) is dropped
// and counted in shortener_clicks_dropped_total: the redirect it belongs
// to is answered all the same. So is a click whose proxied request is
// older than MaxRequestAge when it would be written.
func (j *Journal) Record(c shortener.Click) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		j.dropped.WithLabelValues("closed").Inc()
		return
	}
	// The age check reads the clock under mu, which the shipper's
	// readable takes after reading its own clock: a click the shipper
	// did not see was checked against a clock reading later than the
	// shipper's. That is what bounds how far a journal's caught-up time
	// can run ahead of the requests it has yet to ship
	// (store.PurgeClickRequests relies on it).
	if c.Request.Known() {
		now := j.now().UnixMilli()
		if now-c.Request.At > j.cfg.MaxRequestAge.Milliseconds() {
			j.dropped.WithLabelValues("stale").Inc()
			return
		}
		if c.Request.At > now+maxRequestSkew.Milliseconds() {
			c.Request.At = now
			j.clamped.Inc()
		}
	}
	rec := appendRecord(j.scratch[:0], c)
	n := int64(len(rec))
	// headerSize: room for the segment the click may have to begin.
	if j.size.Load()+n+headerSize > j.cfg.MaxBytes {
		j.dropped.WithLabelValues("full").Inc()
		return
	}
	if j.off+n > int64(len(j.mem)) {
		if reason := j.begin(); reason != "" {
			j.dropped.WithLabelValues(reason).Inc()
			return
		}
	}
	copy(j.mem[j.off:], rec)
	if j.off/prefaultStep != (j.off+n)/prefaultStep {
		j.askPrefault()
	}
	j.off += n
	j.size.Add(n)
	j.recorded.Inc()
	if j.obs != nil {
		j.pending = append(j.pending, c)
	}
}

// begin seals the current segment and begins the next, and returns ""; or
// the reason clicks are dropped while no segment can be begun. After a
// failure it tries again only once segmentRetry has passed, so a full
// volume costs each click a clock read, not a file created and removed.
// The caller holds mu (or is Open).
func (j *Journal) begin() (dropReason string) {
	if j.failReason != "" && j.now().Before(j.retryAt) {
		return j.failReason
	}
	err := j.rotate()
	if err == nil {
		if j.failReason != "" {
			j.log.Info("click journal: a segment could be begun again; clicks are journaled", "segment", j.seq)
			j.failReason = ""
		}
		return ""
	}
	reason := "error"
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		reason = "disk_full"
	}
	if j.failReason == "" {
		// Logged once per outage; the drops are counted by reason.
		j.log.Error("click journal: cannot begin a segment; clicks are dropped (and counted) until one can be, redirects are unaffected",
			"reason", reason, "free_bytes", j.freeBytes(), "segment_bytes", j.cfg.SegmentBytes, "err", err)
	}
	j.failReason, j.retryAt = reason, j.now().Add(segmentRetry)
	return reason
}

// Close seals the current segment, fsyncs the journal and closes it.
// Later Records drop their clicks.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	err := j.seal()
	j.mu.Unlock()
	close(j.stop)
	<-j.done
	j.syncs.wait()
	err = errors.Join(err, j.syncs.sync(true))
	return errors.Join(err, j.lock.Close())
}

func (j *Journal) askPrefault() {
	select {
	case j.prefault <- struct{}{}:
	default:
	}
}

// afterSync runs on the sync loop after each periodic fsync. Writeback
// write-protected the pages ahead of the writer, so they are populated
// again, but only if clicks came since the last time: populating a page
// marks it dirty, and on an idle journal every fsync would otherwise
// write the same prefaultWindow of nothing back to disk (512 KB a second
// per idle instance, until this).
func (j *Journal) afterSync() {
	if size := j.size.Load(); size != j.syncedSize {
		j.syncedSize = size
		j.askPrefault()
	}
}

// prefaultLoop populates the pages ahead of the write position whenever
// asked (the writer crossed a step, a segment began, an fsync
// write-protected them), until the journal closes.
func (j *Journal) prefaultLoop() {
	warned := false
	for {
		select {
		case <-j.stop:
			return
		case <-j.prefault:
		}
		j.mu.Lock()
		mem, off := j.mem, j.off
		if mem != nil {
			j.populating.Add(1) // seal waits for it before unmapping
		}
		j.mu.Unlock()
		if mem == nil {
			continue
		}
		start := off &^ (pageSize - 1)
		end := min(int64(len(mem)), start+prefaultWindow)
		if err := populate(mem[start:end]); err != nil && !warned {
			warned = true
			j.log.Info("click journal: cannot populate pages ahead; redirects take the page faults", "err", err)
		}
		j.populating.Done()
	}
}

// observeLoop passes written clicks to the Observer every observeEvery,
// off the requests' path, until the journal closes.
func (j *Journal) observeLoop() {
	defer close(j.done)
	if j.obs == nil {
		<-j.stop
		return
	}
	t := time.NewTicker(observeEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			j.observe()
		case <-j.stop:
			j.observe()
			return
		}
	}
}

func (j *Journal) observe() {
	j.mu.Lock()
	c := j.pending
	j.pending = j.spare
	j.mu.Unlock()
	if len(c) > 0 {
		j.obs.Observe(c)
	}
	clear(c) // no codes kept alive
	j.spare = c[:0]
}

// rotate seals the current segment and begins segment seq+1: a file of
// SegmentBytes, its blocks allocated before anything is written to it,
// with its header, mapped into memory. A write to a page of a shared
// mapping that the file system cannot back (a sparse file on a full
// volume) is a SIGBUS, which kills the process; allocating first turns a
// full volume into this error instead. The caller holds mu (or is Open).
func (j *Journal) rotate() error {
	if err := j.seal(); err != nil {
		j.log.Error("click journal: sealing a segment", "segment", j.seq, "err", err)
	}
	seq := j.seq + 1
	f, err := os.OpenFile(segmentPath(j.cfg.Dir, seq), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("create journal segment %d: %w", seq, err)
	}
	mem, err := func() ([]byte, error) {
		if err := allocate(f, j.cfg.SegmentBytes); err != nil {
			return nil, err
		}
		return syscall.Mmap(int(f.Fd()), 0, int(j.cfg.SegmentBytes), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	}()
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("create journal segment %d: %w", seq, err)
	}
	copy(mem, appendHeader(nil, header{journal: j.id, node: j.cfg.NodeID, created: j.now()}))
	j.size.Add(headerSize)
	j.f, j.mem, j.seq, j.off = f, mem, seq, headerSize
	j.syncs.switchTo(f, j.cfg.Dir)
	j.askPrefault()
	return nil
}

// allocate gives f size bytes of allocated blocks: fallocate, or, on a
// file system or OS without it, zeros written out.
func allocate(f *os.File, size int64) error {
	err := fallocate(f, size)
	if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOSYS) {
		return err
	}
	zeros := make([]byte, min(size, 1<<20))
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// seal unmaps the current segment and cuts its file to what was written,
// so a reader finds its end; the syncer fsyncs and closes it. A segment
// left by a crash is not sealed: its tail is zeros, which the shipper
// reads as its end.
func (j *Journal) seal() error {
	if j.f == nil {
		return nil
	}
	j.populating.Wait() // never unmap under a running populate
	err := syscall.Munmap(j.mem)
	err = errors.Join(err, j.f.Truncate(j.off))
	j.syncs.retire(j.f)
	j.f, j.mem = nil, nil
	return err
}

// readable returns how far segment seq may be read: the current segment
// up to its last whole record, an older one (sealed) to its end.
func (j *Journal) readable(seq int64) (limit int64, sealed bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq == j.seq && j.f != nil && !j.closed {
		return j.off, false
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

// newJournalID returns a random journal ID: positive, never 0.
func newJournalID() (int64, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return 0, fmt.Errorf("make journal ID: %w", err)
	}
	return int64(binary.BigEndian.Uint64(r[:])>>1) | 1, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
