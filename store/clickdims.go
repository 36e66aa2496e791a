package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shortener"
	"shortener/analytics"
)

// The analytics dimensions of clicks (docs/analytics.md): a batch adds
// each click once to its day's row of its combination of the four
// dimensions in click_dim_sets (click_dims, a row per dimension and value,
// holds the days counted before that table: migration 0027), and
// merges its visitor hashes into its hour's and day's sketches in
// click_visitors, in the transaction that counts the batch (ShipClicks),
// so both are exactly once like the counts.

// unknownValue is a dimension's value for a click made with analytics
// off (no Dims): it still counts, so each dimension sums to the total.
const unknownValue = "unknown"

// dimSetKey is a row of click_dim_sets: a link's day and one value of
// each dimension, in shortener.Dimensions' order.
type dimSetKey struct {
	link   int64
	day    time.Time
	values [4]string
}

type visitorKey struct {
	link   int64
	period string // "hour" or "day"
	start  time.Time
}

// clickAnalytics gathers a batch's dimension counts and visitor sketches.
type clickAnalytics struct {
	dims     map[dimSetKey]int64
	visitors map[visitorKey]*batchVisitors
	// written are the sketches the transaction merged into, for
	// seenVisitors once it commits.
	written []visitorKey
}

// batchVisitors are a batch's visitors of one sketch: their sketch, and
// their distinct hashes while there are at most seenPerKey.
type batchVisitors struct {
	sketch *analytics.Sketch
	hashes []uint64 // nil once there are more than seenPerKey
	many   bool
}

func (b *batchVisitors) add(v uint64) {
	b.sketch.Add(v)
	if b.many || slices.Contains(b.hashes, v) {
		return
	}
	if len(b.hashes) == seenPerKey {
		b.hashes, b.many = nil, true
		return
	}
	b.hashes = append(b.hashes, v)
}

func newClickAnalytics() *clickAnalytics {
	return &clickAnalytics{dims: map[dimSetKey]int64{}, visitors: map[visitorKey]*batchVisitors{}}
}

// A stored sketch only grows (a merge takes register maxima), so a batch
// whose visitors of a sketch were all in an earlier batch this process
// stored would change nothing there; its read, merge and write are
// skipped. Most clicks are repeat visitors of a link within its hour and
// day, so this spares most sketch writes (TestSeenVisitorsSkipWrites;
// BenchmarkShipClicks/analytics). seenVisitors remembers, per sketch,
// the hashes of batches that committed (a batch whose commit failed, or
// whose outcome is unknown, is not remembered: it is written again), at
// most seenPerKey per sketch (a sketch with more visitors is written
// every batch) and at most seenKeys sketches (past that all are
// forgotten at once, and the next batches write theirs again).
const (
	seenPerKey = 16
	seenKeys   = 1 << 16
)

type seenVisitors struct {
	mu   sync.Mutex
	keys map[visitorKey][]uint64
}

func newSeenVisitors() *seenVisitors { return &seenVisitors{keys: map[visitorKey][]uint64{}} }

// covers reports whether every one of b's visitors of k was stored.
func (s *seenVisitors) covers(k visitorKey, b *batchVisitors) bool {
	if b.many {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.keys[k]
	if !ok {
		return false
	}
	for _, v := range b.hashes {
		if !slices.Contains(seen, v) {
			return false
		}
	}
	return true
}

// remember notes the visitors of the sketches a committed batch wrote.
func (s *seenVisitors) remember(a *clickAnalytics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range a.written {
		b := a.visitors[k]
		seen, tracked := s.keys[k]
		if b.many || (tracked && seen == nil) {
			s.keys[k] = nil // too many to remember: always written
			continue
		}
		for _, v := range b.hashes {
			if !slices.Contains(seen, v) {
				seen = append(seen, v)
			}
		}
		if len(seen) > seenPerKey {
			seen = nil
		}
		if len(s.keys) >= seenKeys {
			clear(s.keys)
		}
		s.keys[k] = seen
	}
}

// add counts a click of link made at at (UTC) with dimension values
// values (clickValues) by visitor (0: none known).
func (a *clickAnalytics) add(link int64, at time.Time, values [4]string, visitor uint64) {
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	a.dims[dimSetKey{link, day, values}]++
	if visitor == 0 {
		return
	}
	for _, k := range []visitorKey{{link, "hour", at.Truncate(time.Hour)}, {link, "day", day}} {
		b := a.visitors[k]
		if b == nil {
			b = &batchVisitors{sketch: analytics.NewSketch()}
			a.visitors[k] = b
		}
		b.add(visitor)
	}
}

// clickVisitor is the visitor hash a click is counted under, 0 for none
// (analytics off, or not derived).
func clickVisitor(c shortener.Click) uint64 {
	if !c.Analyzed {
		return 0
	}
	return c.Dims.Visitor
}

// clickValues are a click's value of each dimension, in
// shortener.Dimensions' order (country, browser, OS, device).
func clickValues(c shortener.Click) [4]string {
	if !c.Analyzed {
		device := unknownValue
		if c.Agent == shortener.AgentBot {
			device = analytics.DeviceBot.String()
		}
		return [4]string{analytics.Country{}.String(), unknownValue, unknownValue, device}
	}
	d := c.Dims
	return [4]string{analytics.Country(d.Country).String(), analytics.Browser(d.Browser).String(),
		analytics.OS(d.OS).String(), analytics.Device(d.Device).String()}
}

// write adds the batch's dimension counts and merges its sketches, in
// primary key order (the lock order every shipper shares, as upsertHours).
func (a *clickAnalytics) write(ctx context.Context, tx *sql.Tx, seen *seenVisitors) error {
	if err := upsertDims(ctx, tx, a.dims); err != nil {
		return err
	}
	sketches := make(map[visitorKey]*analytics.Sketch, len(a.visitors))
	for k, b := range a.visitors {
		if !seen.covers(k, b) {
			sketches[k] = b.sketch
			a.written = append(a.written, k)
		}
	}
	return mergeVisitors(ctx, tx, sketches)
}

func upsertDims(ctx context.Context, tx *sql.Tx, dims map[dimSetKey]int64) error {
	if len(dims) == 0 {
		return nil
	}
	keys := make([]dimSetKey, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b dimSetKey) int {
		return cmp.Or(cmp.Compare(a.link, b.link), a.day.Compare(b.day), slices.Compare(a.values[:], b.values[:]))
	})
	args := make([]any, 0, 7*len(keys))
	for _, k := range keys {
		args = append(args, k.link, k.day, k.values[0], k.values[1], k.values[2], k.values[3], dims[k])
	}
	if err := upsertRows(ctx, tx, "INSERT INTO click_dim_sets (link_id, day, country, browser, os, device, clicks) VALUES ", "(?,?,?,?,?,?,?)",
		" ON DUPLICATE KEY UPDATE clicks = clicks + VALUES(clicks)", args); err != nil {
		return fmt.Errorf("add click dimensions: %w", err)
	}
	return nil
}

// visitorChunk bounds the keys one statement reads or writes.
const visitorChunk = 500

// mergeVisitors reads the stored sketches of the batch's keys (locking
// their rows), merges the batch's into them and writes them back.
func mergeVisitors(ctx context.Context, tx *sql.Tx, sketches map[visitorKey]*analytics.Sketch) error {
	keys := make([]visitorKey, 0, len(sketches))
	for k := range sketches {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b visitorKey) int {
		return cmp.Or(cmp.Compare(a.link, b.link), cmp.Compare(a.period, b.period), a.start.Compare(b.start))
	})
	for chunk := range slices.Chunk(keys, visitorChunk) {
		if err := mergeVisitorChunk(ctx, tx, chunk, sketches); err != nil {
			return err
		}
	}
	return nil
}

func mergeVisitorChunk(ctx context.Context, tx *sql.Tx, keys []visitorKey, sketches map[visitorKey]*analytics.Sketch) error {
	var q strings.Builder
	q.WriteString("SELECT link_id, period, start, sketch FROM click_visitors WHERE (link_id, period, start) IN (")
	args := make([]any, 0, 4*len(keys))
	for i, k := range keys {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString("(?,?,?)")
		args = append(args, k.link, k.period, k.start)
	}
	q.WriteString(") ORDER BY link_id, period, start FOR UPDATE")
	rows, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return fmt.Errorf("read visitor sketches: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k    visitorKey
			blob []byte
		)
		if err := rows.Scan(&k.link, &k.period, &k.start, &blob); err != nil {
			return fmt.Errorf("read visitor sketches: %w", err)
		}
		k.start = k.start.UTC()
		stored, err := analytics.UnmarshalSketch(blob)
		if err != nil {
			// A sketch that does not decode cannot be merged into: the
			// batch's replaces it (that estimate restarts from this
			// batch) rather than holding every later batch back.
			continue
		}
		if s := sketches[k]; s != nil {
			if err := stored.Merge(s); err == nil {
				sketches[k] = stored
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read visitor sketches: %w", err)
	}
	args = args[:0]
	for _, k := range keys {
		blob, err := sketches[k].MarshalBinary()
		if err != nil {
			return fmt.Errorf("encode visitor sketch: %w", err)
		}
		args = append(args, k.link, k.period, k.start, blob)
	}
	if err := upsertRows(ctx, tx, "INSERT INTO click_visitors (link_id, period, start, sketch) VALUES ", "(?,?,?,?)",
		" ON DUPLICATE KEY UPDATE sketch = VALUES(sketch)", args); err != nil {
		return fmt.Errorf("write visitor sketches: %w", err)
	}
	return nil
}

// dimStats reads the analytics of the link with ID linkID into st: the
// dimension counts of the whole UTC days [dayFrom, dayTo), and the unique
// visitors of [from, to) by step (an hour or a day), per bucket of
// st.Series and for the whole range (the buckets' sketches merged).
func dimStats(ctx context.Context, q *sql.Tx, linkID int64, dayFrom, dayTo, from, to time.Time, step time.Duration, st *shortener.ClickStats) error {
	st.Dims = make(map[string]map[string]int64, len(shortener.Dimensions))
	for _, d := range shortener.Dimensions {
		st.Dims[d] = map[string]int64{}
	}
	days, err := dayDims(ctx, q, linkID, dayFrom, dayTo)
	if err != nil {
		return err
	}
	for _, d := range days {
		st.Dims[d.Dim][d.Value] += d.Clicks
	}
	st.DayDims = days

	period := "hour"
	if step == 24*time.Hour {
		period = "day"
	}
	// The buckets' sketches: the stored ones, with the visitors of the
	// pending clicks added (a NULL sketch is a pending click's row).
	vrows, err := q.QueryContext(ctx, `SELECT start, sketch, 0 FROM click_visitors WHERE link_id = ? AND period = ? AND start >= ? AND start < ?
		UNION ALL SELECT at, NULL, visitor FROM click_pending WHERE link_id = ? AND at >= ? AND at < ? AND visitor <> 0`,
		linkID, period, from, to, linkID, from, to)
	if err != nil {
		return fmt.Errorf("read visitor sketches: %w", err)
	}
	defer vrows.Close()
	buckets := make([]*analytics.Sketch, len(st.Series))
	for vrows.Next() {
		var (
			start   time.Time
			blob    []byte
			visitor uint64
		)
		if err := vrows.Scan(&start, &blob, &visitor); err != nil {
			return fmt.Errorf("read visitor sketches: %w", err)
		}
		i := int(start.UTC().Sub(from) / step)
		if i < 0 || i >= len(buckets) {
			continue
		}
		if buckets[i] == nil {
			buckets[i] = analytics.NewSketch()
		}
		if blob == nil {
			buckets[i].Add(visitor)
			continue
		}
		s, err := analytics.UnmarshalSketch(blob)
		if err != nil {
			continue // see mergeVisitorChunk: an undecodable sketch counts nothing
		}
		if err := buckets[i].Merge(s); err != nil {
			return fmt.Errorf("merge visitor sketches: %w", err)
		}
	}
	if err := vrows.Err(); err != nil {
		return fmt.Errorf("read visitor sketches: %w", err)
	}
	all := analytics.NewSketch()
	for i, b := range buckets {
		if b == nil {
			continue
		}
		st.Series[i].Visitors = int64(b.Estimate())
		if err := all.Merge(b); err != nil {
			return fmt.Errorf("merge visitor sketches: %w", err)
		}
	}
	st.Visitors = int64(all.Estimate())
	return nil
}

// dayDims reads the link's counts by day, dimension and value over the
// UTC days [dayFrom, dayTo): click_dim_sets' combinations summed into
// each of their four values, plus click_dims' rows of the days counted
// before that table, one per triple, ordered by day, dimension (in
// shortener.Dimensions' order) and value.
func dayDims(ctx context.Context, q *sql.Tx, linkID int64, dayFrom, dayTo time.Time) ([]shortener.DimCount, error) {
	// The dimensions' names are click_dim_sets' column names.
	const where = " WHERE link_id = ? AND day >= ? AND day < ?"
	var parts []string
	var args []any
	for _, d := range shortener.Dimensions {
		parts = append(parts, "SELECT day, '"+d+"' AS dim, "+d+" AS value, clicks FROM click_dim_sets"+where)
		args = append(args, linkID, dayFrom, dayTo)
	}
	for _, d := range shortener.Dimensions {
		parts = append(parts, "SELECT DATE(at), '"+d+"', "+d+", 1 FROM click_pending WHERE link_id = ? AND at >= ? AND at < ?")
		args = append(args, linkID, dayFrom, dayTo)
	}
	parts = append(parts, "SELECT day, dim, value, clicks FROM click_dims"+where)
	args = append(args, linkID, dayFrom, dayTo)
	rows, err := q.QueryContext(ctx, "SELECT day, dim, value, SUM(clicks) FROM ("+strings.Join(parts, " UNION ALL ")+
		") d GROUP BY day, dim, value ORDER BY day, FIELD(dim, '"+strings.Join(shortener.Dimensions, "', '")+"'), value", args...)
	if err != nil {
		return nil, fmt.Errorf("read click dimensions: %w", err)
	}
	defer rows.Close()
	var out []shortener.DimCount
	for rows.Next() {
		var d shortener.DimCount
		if err := rows.Scan(&d.Day, &d.Dim, &d.Value, &d.Clicks); err != nil {
			return nil, fmt.Errorf("read click dimensions: %w", err)
		}
		d.Day = d.Day.UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read click dimensions: %w", err)
	}
	return out, nil
}
