package clicks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"shortener"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
)

// memSink is the Sink's contract in memory: positions per segment and
// counts per link, a batch applied only from its segment's position.
type memSink struct {
	mu     sync.Mutex
	pos    map[[2]int64]int64
	counts map[int64]int
	// requests counted, as the store's click_request_sets
	requests map[shortener.ClickRequest]bool
	// forgotten is, per journal, the last segment forgotten
	forgotten map[int64]int64
	down      bool // every call fails
	lose      int  // this many next batches are applied but answered with an error
	batches   int
	retired   map[int64]bool
}

func newMemSink() *memSink {
	return &memSink{pos: map[[2]int64]int64{}, counts: map[int64]int{}, requests: map[shortener.ClickRequest]bool{},
		forgotten: map[int64]int64{}, retired: map[int64]bool{}}
}

var errDown = errors.New("sink down")

func (m *memSink) ShippedTo(_ context.Context, journal, segment int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return 0, errDown
	}
	return m.position(journal, segment), nil
}

// position is the Sink's contract for a segment's position; mu is held.
func (m *memSink) position(journal, segment int64) int64 {
	if p, ok := m.pos[[2]int64{journal, segment}]; ok {
		return p
	}
	if through, ok := m.forgotten[journal]; ok && segment <= through {
		return shortener.SegmentForgotten
	}
	return 0
}

func (m *memSink) ShipClicks(_ context.Context, b shortener.ClickBatch) (bool, int64, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false, 0, 0, errDown
	}
	k := [2]int64{b.Journal, b.Segment}
	if p := m.position(b.Journal, b.Segment); p != b.From {
		return false, p, 0, nil
	}
	dups := 0
	for _, c := range b.Clicks {
		if c.Request.Known() {
			if m.requests[c.Request] {
				dups++
				continue
			}
			m.requests[c.Request] = true
		}
		m.counts[c.LinkID]++
	}
	m.pos[k] = b.To
	m.batches++
	if m.lose > 0 {
		m.lose--
		return false, 0, 0, errors.New("connection lost after commit")
	}
	return true, b.To, dups, nil
}

func (m *memSink) PurgeClickRequests(context.Context, time.Duration, time.Duration, time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return 0, errDown
	}
	return 0, nil
}

func (m *memSink) ForgetSegments(_ context.Context, journal, through int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.pos {
		if k[0] == journal && k[1] <= through {
			delete(m.pos, k)
		}
	}
	m.forgotten[journal] = max(m.forgotten[journal], through)
	return nil
}

func (m *memSink) CaughtUp(context.Context, int64, int64, time.Time) error { return nil }

func (m *memSink) RetireJournal(_ context.Context, journal int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retired[journal] = true
	return nil
}

func (m *memSink) isRetired(journal int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retired[journal]
}

func (m *memSink) total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.counts {
		n += c
	}
	return n
}

func (m *memSink) setDown(v bool) {
	m.mu.Lock()
	m.down = v
	m.mu.Unlock()
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openJournal(tb testing.TB, cfg Config, obs Observer) *Journal {
	tb.Helper()
	cfg = withDefaults(tb, cfg)
	j, err := Open(cfg, obs, discard(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { j.Close() })
	return j
}

// withDefaults fills what a test leaves out: a fresh directory, 1 GiB,
// 64 MiB segments, a 1 s fsync.
func withDefaults(tb testing.TB, cfg Config) Config {
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 1 << 30
	}
	if cfg.SegmentBytes == 0 {
		cfg.SegmentBytes = 64 << 20
	}
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = time.Second
	}
	if cfg.MaxRequestAge == 0 {
		cfg.MaxRequestAge = 30 * time.Second
	}
	return cfg
}

// newShipper is NewShipper with a test's settings.
func newShipper(tb testing.TB, j *Journal, sink Sink, reg prometheus.Registerer) *Shipper {
	tb.Helper()
	s, err := NewShipper(j, sink, ShipperConfig{MaxBatch: 100, Interval: time.Millisecond, Timeout: 10 * time.Second, Heartbeat: time.Millisecond,
		PurgeEvery: time.Millisecond, RequestWindow: time.Minute, RequestHold: time.Hour}, discard(), reg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func click(link int64, at time.Time) shortener.Click {
	return shortener.Click{LinkID: link, Code: "c" + string(rune('a'+link%26)), At: at, Referrer: "news.example", Agent: shortener.Agent(link % 2)}
}

// record sends n clicks from 8 goroutines, spread over links 1..10.
func record(j *Journal, n int) {
	var wg sync.WaitGroup
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				j.Record(click(int64(i%10+1), at.Add(time.Duration(i)*time.Millisecond)))
			}
		})
	}
	wg.Wait()
}

// runShipper runs a shipper of j into sink until the test ends.
func runShipper(tb testing.TB, j *Journal, sink Sink, reg prometheus.Registerer) *Shipper {
	tb.Helper()
	s := newShipper(tb, j, sink, reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
		s.closeSegment()
	})
	return s
}

func segmentCount(tb testing.TB, dir string) int {
	tb.Helper()
	segs, err := listSegments(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return len(segs)
}

// TestRecordShipRotateDelete records clicks from many goroutines into
// small segments: every click is counted once, and every segment but the
// current one is deleted once shipped.
func TestRecordShipRotateDelete(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, Config{Dir: dir, NodeID: 3, SegmentBytes: 4 << 10}, nil)
	sink := newMemSink()
	record(j, 5000)
	if n := segmentCount(t, dir); n < 10 {
		t.Fatalf("got %d segments after 5000 clicks in 4 KiB segments, want many", n)
	}
	runShipper(t, j, sink, nil)
	poll.Until(t, "all clicks shipped", func() error {
		if got := sink.total(); got < 5000 {
			return fmt.Errorf("got %v, want at least %v", got, 5000)
		}
		return nil
	})
	poll.Until(t, "shipped segments deleted", func() error {
		if got := segmentCount(t, dir); got != 1 {
			return fmt.Errorf("got %v, want %v", got, 1)
		}
		return nil
	})
	if got := sink.total(); got != 5000 {
		t.Errorf("counted %d clicks, want 5000", got)
	}
	for link := int64(1); link <= 10; link++ {
		if got := sink.counts[link]; got != 500 {
			t.Errorf("link %d: counted %d, want 500", link, got)
		}
	}
	// Positions of deleted segments are forgotten.
	sink.mu.Lock()
	n := len(sink.pos)
	sink.mu.Unlock()
	if n > 2 {
		t.Errorf("sink remembers %d segment positions, want at most 2 (current and last deleted)", n)
	}
}

// TestReplayAfterCrash ships part of a journal, "crashes" (the process
// goes away without closing), reopens the directory: the rest is shipped
// and nothing twice, even when a commit's answer was lost.
func TestReplayAfterCrash(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	j1, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 8 << 10}), nil, discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	record(j1, 3000)
	sink.lose = 3 // three commits whose answers are lost
	s1 := newShipper(t, j1, sink, nil)
	ctx, cancel := context.WithCancel(context.Background())
	for i := 0; sink.total() < 1200; i++ {
		if _, err := s1.step(ctx); err != nil && !strings.Contains(err.Error(), "lost after commit") || i > 1000 {
			t.Fatalf("step %d: %v (counted %d)", i, err, sink.total())
		}
	}
	cancel()
	s1.closeSegment()
	// A crash: the writer stops, the lock goes with the process. Close
	// does no more than that to the files (segments stay as written).
	j1.Close()

	j2 := openJournal(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 8 << 10}, nil)
	if j2.ID() == j1.ID() {
		t.Fatalf("journal ID %d kept across reopen; each run must have its own", j1.ID())
	}
	record(j2, 1000)
	runShipper(t, j2, sink, nil)
	poll.Until(t, "all 4000 clicks shipped", func() error {
		if got := sink.total(); got < 4000 {
			return fmt.Errorf("got %v, want at least %v", got, 4000)
		}
		return nil
	})
	poll.Until(t, "old segments deleted", func() error {
		if got := segmentCount(t, dir); got != 1 {
			return fmt.Errorf("got %v, want %v", got, 1)
		}
		return nil
	})
	poll.Until(t, "the crashed run's journal retired", func() error {
		if !sink.isRetired(j1.ID()) {
			return fmt.Errorf("journal %d not retired", j1.ID())
		}
		return nil
	})
	if got := sink.total(); got != 4000 {
		t.Errorf("counted %d clicks, want 4000", got)
	}
	if sink.isRetired(j2.ID()) {
		t.Error("the running journal was retired")
	}
}

// TestCrashLeavesZeroTail takes the journal's files as a SIGKILL leaves
// them (segments never sealed: written records, then zeros to the
// segment's size) into a new directory: every click is shipped once and
// the zeros are not corruption.
func TestCrashLeavesZeroTail(t *testing.T) {
	dir := t.TempDir()
	j1 := openJournal(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 8 << 10}, nil)
	record(j1, 700)
	crashed := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+"/"+e.Name(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := listSegments(crashed)
	if fi, _ := os.Stat(segmentPath(crashed, last[len(last)-1])); fi.Size() != 8<<10 {
		t.Fatalf("unsealed segment is %d bytes, want its full 8 KiB", fi.Size())
	}
	j2 := openJournal(t, Config{Dir: crashed, NodeID: 1, SegmentBytes: 8 << 10}, nil)
	sink := newMemSink()
	s := runShipper(t, j2, sink, nil)
	poll.Until(t, "crashed segments shipped and deleted", func() error {
		if got := segmentCount(t, crashed); got != 1 {
			return fmt.Errorf("got %v, want %v", got, 1)
		}
		return nil
	})
	if got := sink.total(); got != 700 {
		t.Errorf("counted %d clicks, want 700", got)
	}
	if got := testutil.ToFloat64(s.corrupt); got != 0 {
		t.Errorf("corrupt counter %v, want 0 (zeros are the end)", got)
	}
}

// TestTornTail cuts the last record of a segment short, as a machine
// crash mid-write may: the whole records before it are shipped, the torn
// one is counted as corrupt, nothing crashes.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	j1, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1}), nil, discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	record(j1, 100)
	j1.Close()
	p := segmentPath(dir, 1)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, fi.Size()-5); err != nil {
		t.Fatal(err)
	}
	j2 := openJournal(t, Config{Dir: dir, NodeID: 1}, nil)
	sink := newMemSink()
	reg := prometheus.NewRegistry()
	s := runShipper(t, j2, sink, reg)
	poll.Until(t, "torn segment deleted", func() error {
		if got := segmentCount(t, dir); got != 1 {
			return fmt.Errorf("got %v, want %v", got, 1)
		}
		return nil
	})
	if got := sink.total(); got != 99 {
		t.Errorf("counted %d clicks, want 99 (100 minus the torn one)", got)
	}
	if got := testutil.ToFloat64(s.corrupt); got != 1 {
		t.Errorf("corrupt counter %v, want 1", got)
	}
}

// TestCorruptRecordSkipped flips a byte inside a record in the middle of
// a segment: that record alone is skipped and counted.
func TestCorruptRecordSkipped(t *testing.T) {
	dir := t.TempDir()
	j1, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1}), nil, discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i := range 50 {
		j1.Record(click(int64(i+1), at))
	}
	j1.Close()
	p := segmentPath(dir, 1)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Record 20 (link 21) starts after the header and 20 records of the
	// same length.
	recLen := len(appendRecord(nil, click(1, at)))
	b[headerSize+20*recLen+recordHeader+3] ^= 0xFF
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	j2 := openJournal(t, Config{Dir: dir, NodeID: 1}, nil)
	sink := newMemSink()
	s := runShipper(t, j2, sink, nil)
	poll.Until(t, "segment shipped and deleted", func() error {
		if got := segmentCount(t, dir); got != 1 {
			return fmt.Errorf("got %v, want %v", got, 1)
		}
		return nil
	})
	if got := sink.total(); got != 49 {
		t.Errorf("counted %d clicks, want 49", got)
	}
	if sink.counts[21] != 0 || sink.counts[20] != 1 || sink.counts[22] != 1 {
		t.Errorf("counts around the corrupt record: 20:%d 21:%d 22:%d, want 1 0 1", sink.counts[20], sink.counts[21], sink.counts[22])
	}
	if got := testutil.ToFloat64(s.corrupt); got != 1 {
		t.Errorf("corrupt counter %v, want 1", got)
	}
}

// TestBoundReached fills a small journal while the database is down:
// past the bound clicks are dropped and counted, Record never blocks, and
// once the database returns the journal drains and takes clicks again.
func TestBoundReached(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	j, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1, MaxBytes: 16 << 10, SegmentBytes: 4 << 10}), nil, discard(), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	sink := newMemSink()
	sink.setDown(true)
	runShipper(t, j, sink, nil)
	record(j, 2000)
	stored := testutil.ToFloat64(j.recorded)
	dropped := testutil.ToFloat64(j.dropped.WithLabelValues("full"))
	if stored+dropped != 2000 || dropped == 0 {
		t.Fatalf("recorded %v + dropped %v, want 2000 with some dropped", stored, dropped)
	}
	if size := j.size.Load(); size > 16<<10 {
		t.Errorf("journal holds %d bytes, over its bound of %d", size, 16<<10)
	}
	sink.setDown(false)
	poll.Until(t, "journal drained", func() error {
		if got := sink.total(); got != int(stored) {
			return fmt.Errorf("got %v, want %v", got, int(stored))
		}
		return nil
	})
	record(j, 10)
	poll.Until(t, "new clicks shipped", func() error {
		if got := sink.total(); got != int(stored)+10 {
			return fmt.Errorf("got %v, want %v", got, int(stored)+10)
		}
		return nil
	})
	if got := testutil.ToFloat64(j.dropped.WithLabelValues("full")); got != dropped {
		t.Errorf("dropped %v after draining, want still %v", got, dropped)
	}
}

// TestDrainOnClose closes the journal and drains it: everything is
// shipped, no segment is left, and the journal is retired.
func TestDrainOnClose(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(withDefaults(t, Config{Dir: dir, NodeID: 1, SegmentBytes: 4 << 10}), nil, discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	record(j, 500)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	s := newShipper(t, j, sink, nil)
	done, err := s.Drain(context.Background())
	if !done || err != nil {
		t.Fatalf("Drain: %v, %v; want true, nil", done, err)
	}
	if got := sink.total(); got != 500 {
		t.Errorf("counted %d, want 500", got)
	}
	if n := segmentCount(t, dir); n != 0 {
		t.Errorf("%d segments left after draining, want 0", n)
	}
	if !sink.isRetired(j.ID()) {
		t.Error("journal not retired after draining")
	}
}

// TestLocked refuses a second journal on the same directory.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	openJournal(t, Config{Dir: dir}, nil)
	if _, err := Open(withDefaults(t, Config{Dir: dir}), nil, discard(), nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

// groups is an Observer that keeps what it is told.
type groups struct {
	mu sync.Mutex
	n  int
}

func (g *groups) Observe(c []shortener.Click) {
	g.mu.Lock()
	g.n += len(c)
	g.mu.Unlock()
}

// TestObserver hears every journaled click once.
func TestObserver(t *testing.T) {
	g := &groups{}
	j := openJournal(t, Config{}, g)
	record(j, 1000)
	j.Close()
	if g.n != 1000 {
		t.Errorf("observer heard %d clicks, want 1000", g.n)
	}
}

// TestRecordRoundTrip encodes and decodes clicks, long fields clipped.
func TestRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 123e6, time.UTC)
	long := string(make([]byte, 300))
	for _, c := range []shortener.Click{
		{LinkID: 1, Code: "a", At: at},
		{LinkID: 1 << 62, Code: "AbC123xyz", At: at, Referrer: "news.example.com", Agent: shortener.AgentBot},
		{LinkID: -5, Code: long, At: at, Referrer: long},
		{LinkID: 7, Code: "req", At: at, Referrer: "t.co", Request: shortener.ClickRequest{ID: [16]byte{1, 2, 3, 15: 0xff}, At: at.UnixMilli() - 3}},
		{LinkID: 7, Code: "req", At: at, Request: shortener.ClickRequest{ID: [16]byte{15: 1}, At: 1}},
		{LinkID: 8, Code: "dims", At: at, Referrer: "t.co", Analyzed: true,
			Dims: shortener.ClickDims{Country: [2]byte{'D', 'E'}, Browser: 2, OS: 3, Device: 1, Visitor: 1<<63 | 5}},
		{LinkID: 8, Code: "dims", At: at, Analyzed: true, Request: shortener.ClickRequest{ID: [16]byte{7: 9}, At: at.UnixMilli()},
			Dims: shortener.ClickDims{Device: 3}},
		{LinkID: 8, Code: long, At: at, Referrer: long, Analyzed: true, Request: shortener.ClickRequest{ID: [16]byte{0: 1}, At: 1 << 60},
			Dims: shortener.ClickDims{Country: [2]byte{'Z', 'Z'}, Browser: 255, OS: 255, Device: 255, Visitor: 1<<64 - 1}},
	} {
		b := appendRecord(nil, c)
		// Clicks without a request keep version 1, the only version
		// journals written before requests existed hold; version 3 is
		// only for analyzed clicks.
		wantV := map[bool]byte{false: recordVersion, true: recordVersionRequest}[c.Request.Known()]
		if c.Analyzed {
			wantV = recordVersionDims
		}
		if b[recordHeader] != wantV {
			t.Errorf("record of %+v has version %d, want %d", c, b[recordHeader], wantV)
		}
		sc := parse(nil, nil, b, 0, true, 10)
		if len(sc.clicks) != 1 || sc.corrupt != 0 || sc.torn || sc.next != int64(len(b)) {
			t.Fatalf("parse(%+v): %+v", c, sc)
		}
		got := sc.clicks[0]
		want := c
		want.Code, want.Referrer = clip(c.Code), clip(c.Referrer)
		if !got.At.Equal(want.At) || got.LinkID != want.LinkID || got.Code != want.Code || got.Referrer != want.Referrer || got.Agent != want.Agent ||
			got.Request != want.Request || got.Analyzed != want.Analyzed || got.Dims != want.Dims {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
}

// TestRecordVersion1 reads a record as the journal wrote it before
// clicks named their requests (bytes taken from such a journal's
// encoding): journals left by an older binary ship unchanged.
func TestRecordVersion1(t *testing.T) {
	payload := []byte{1, 84, 0xf6, 0xd5, 0xe3, 0xef, 0xc1, 0x65, 0, 2, 'c', 'k', 4, 't', '.', 'c', 'o'}
	rec := []byte{recordMagic, 0, byte(len(payload)), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(rec[3:], crc32.Checksum(payload, castagnoli))
	rec = append(rec, payload...)
	sc := parse(nil, nil, rec, 0, true, 10)
	if len(sc.clicks) != 1 || sc.corrupt != 0 {
		t.Fatalf("parse of a version 1 record: %+v", sc)
	}
	if c := sc.clicks[0]; c.LinkID != 42 || c.Code != "ck" || c.Referrer != "t.co" || c.Request.Known() {
		t.Errorf("version 1 record read as %+v", c)
	}
}

// TestStaleRequestDropped drops a click whose proxied request is older
// than MaxRequestAge when it is written (the proxy gave up on it), and
// keeps one just within it and one with no request.
func TestStaleRequestDropped(t *testing.T) {
	reg := prometheus.NewRegistry()
	j, err := Open(withDefaults(t, Config{MaxRequestAge: 30 * time.Second}), nil, discard(), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	now := time.Now()
	old := click(1, now)
	old.Request = shortener.ClickRequest{ID: [16]byte{1}, At: now.Add(-31 * time.Second).UnixMilli()}
	fresh := click(2, now)
	fresh.Request = shortener.ClickRequest{ID: [16]byte{2}, At: now.Add(-29 * time.Second).UnixMilli()}
	j.Record(old)
	j.Record(fresh)
	j.Record(click(3, now))
	if got := testutil.ToFloat64(j.dropped.WithLabelValues("stale")); got != 1 {
		t.Errorf("dropped{stale} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(j.recorded); got != 2 {
		t.Errorf("recorded = %v, want 2", got)
	}
}

// TestParse covers the shapes a segment's tail and middle can take.
func TestParse(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var three []byte
	for i := range 3 {
		three = appendRecord(three, click(int64(i+1), at))
	}
	rl := len(three) / 3
	garbage := append(append(append([]byte{}, three[:rl]...), 0, 0, recordMagic, 0xFF, 0xFF, 9), three[rl:]...)
	for _, tc := range []struct {
		name    string
		b       []byte
		end     bool
		max     int
		clicks  int
		next    int
		corrupt int
		torn    bool
	}{
		{"whole", three, true, 10, 3, 3 * rl, 0, false},
		{"max", three, true, 2, 2, 2 * rl, 0, false},
		{"torn tail", three[:3*rl-2], true, 10, 2, 3*rl - 2, 0, true},
		{"incomplete, more to read", three[:3*rl-2], false, 10, 2, 2 * rl, 0, false},
		// next stops where the zeros begin: they may be a copy of bytes
		// still to be written (cloneLiveVolume).
		{"zeros at the end", append(append([]byte{}, three...), 0, 0, 0, 0), true, 10, 3, 3 * rl, 0, false},
		{"only zeros", []byte{0, 0, 0, 0}, true, 10, 0, 0, 0, false},
		{"zeros, then a record", append(append(append([]byte{}, three[:rl]...), 0, 0), three[rl:]...), true, 10, 3, 3*rl + 2, 1, false},
		{"garbage between records", garbage, true, 10, 3, len(garbage), 1, false},
		{"empty", nil, true, 10, 0, 0, 0, false},
	} {
		sc := parse(nil, nil, tc.b, 0, tc.end, tc.max)
		if len(sc.clicks) != tc.clicks || sc.next != int64(tc.next) || sc.corrupt != tc.corrupt || sc.torn != tc.torn {
			t.Errorf("%s: got %d clicks, next %d, corrupt %d, torn %v; want %d, %d, %d, %v",
				tc.name, len(sc.clicks), sc.next, sc.corrupt, sc.torn, tc.clicks, tc.next, tc.corrupt, tc.torn)
		}
	}
	// A reused array: the clicks of the scan before are overwritten, not
	// appended to, and the array is not replaced while it is big enough.
	old := parse(nil, nil, three, 0, true, 10).clicks
	dst := make([]shortener.Click, 1, 8)
	dst[0] = click(99, at)
	sc := parse(dst, nil, three[rl:], int64(rl), true, 10)
	if len(sc.clicks) != 2 || &sc.clicks[0] != &dst[0] || sc.clicks[0] != old[1] || sc.clicks[1] != old[2] {
		t.Errorf("parse into a reused array: got %+v, want the last two of %+v in the same array", sc.clicks, old)
	}
}

// TestIdleJournalWritesNothing: once clicks stop, the periodic fsyncs
// find nothing to write. The pages ahead of the writer are populated
// again after an fsync only while clicks come: populating dirties them,
// and an idle journal wrote its whole window back on every fsync.
func TestIdleJournalWritesNothing(t *testing.T) {
	j := openJournal(t, Config{SyncInterval: 5 * time.Millisecond}, nil)
	record(j, 100)
	afterSyncs := func(n int64) {
		target := j.syncs.rounds.Load() + n
		poll.Until(t, fmt.Sprintf("%d more fsync rounds", n), func() error {
			if got := j.syncs.rounds.Load(); got < target {
				return fmt.Errorf("%d of %d rounds", got, target)
			}
			return nil
		})
	}
	afterSyncs(3) // the clicks' own pages, and one window after them
	before := writtenBytes(t)
	afterSyncs(10)
	if w := writtenBytes(t) - before; w >= prefaultWindow/4 {
		t.Errorf("an idle journal dirtied %d bytes over 10 fsyncs, want nothing like the %d-byte window", w, prefaultWindow)
	}
}

// writtenBytes is what this process has sent (or dirtied for) storage.
func writtenBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatalf("no /proc/self/io (the journal is Linux-only): %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("/proc/self/io has no write_bytes")
	return 0
}
