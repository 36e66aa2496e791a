package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"shortener"
	"slices"
	"sort"
	"strings"
	"time"
)

// Clicks are stored as counts, never one row per click: per link and UTC
// hour (with the bots among them) in click_hours, per link, UTC day and
// referrer host in click_referrers. A batch from an instance's journal
// adds to them in one transaction that also moves its journal segment's
// recorded position (click_segments), which is what makes shipping
// exactly once. A click that names its proxied request (nginx's request
// ID, the same on nginx's retries of it on another instance) is counted
// only if no batch counted the request before (click_request_sets), in
// the same transaction:
// a redirect nginx retried elsewhere after the first instance journaled
// it counts once, whichever journal ships first.

// batchTimeout bounds a batch's transaction: a few statements of up to a
// few thousand rows.
const batchTimeoutFactor = 5

// ShippedTo returns the position through which a journal segment is
// counted, 0 if none of it is, or shortener.SegmentForgotten if it was
// counted to its end and forgotten (ForgetSegments).
func (s *Store) ShippedTo(ctx context.Context, journal, segment int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pos, err := segmentPosition(ctx, s.db, journal, segment, "")
	if err != nil {
		return 0, fmt.Errorf("read journal position: %w: %w", shortener.ErrUnavailable, err)
	}
	return pos, nil
}

// segmentPosition reads a segment's recorded position (its row locked
// with lock "FOR UPDATE" inside a transaction): its row in click_segments, else
// shortener.SegmentForgotten if the journal's segments up to it were
// forgotten, else 0.
func segmentPosition(ctx context.Context, q querier, journal, segment int64, lock string) (int64, error) {
	var pos int64
	err := q.QueryRowContext(ctx, "SELECT shipped_to FROM click_segments WHERE journal_id = ? AND segment = ? "+lock, journal, segment).Scan(&pos)
	if !errors.Is(err, sql.ErrNoRows) {
		return pos, err
	}
	// Not locked: only the segment's own shipper, after counting it to
	// its end, writes this row, and a gap lock here would let two
	// shippers' transactions deadlock on their inserts.
	var through int64
	err = q.QueryRowContext(ctx, "SELECT through_segment FROM click_segments_forgotten WHERE journal_id = ?", journal).Scan(&through)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, err
	case segment <= through:
		return shortener.SegmentForgotten, nil
	}
	return 0, nil
}

type hourKey struct {
	link int64
	hour time.Time
}

type refKey struct {
	link int64
	day  time.Time
	host string
}

// ShipClicks adds b's clicks to the counts and records b's segment as
// counted through b.To, in one transaction, if the segment is recorded as
// counted through b.From (0 when it has no row). Otherwise it changes
// nothing and returns applied false with the recorded position: the batch,
// or part of it, was counted before. A click whose request
// (Click.Request) is counted already, from this batch or any other
// journal's, is not counted again; dups says how many such were skipped.
func (s *Store) ShipClicks(ctx context.Context, b shortener.ClickBatch) (applied bool, pos int64, dups int, err error) {
	// A try that a certification conflict aborted changed nothing; the
	// next reads the segment's position again, so a batch that another
	// shipper's transaction counted meanwhile is not counted twice.
	for try := 1; ; try++ {
		if applied, pos, dups, err = s.shipClicks(ctx, b); !s.again(ctx, err, try) {
			return applied, pos, dups, err
		}
	}
}

// shipClicks is one try of ShipClicks.
func (s *Store) shipClicks(ctx context.Context, b shortener.ClickBatch) (applied bool, pos int64, dups int, err error) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeoutFactor*s.timeout)
	defer cancel()
	fail := func(err error) (bool, int64, int, error) {
		return false, 0, 0, fmt.Errorf("ship click batch %d/%d@%d: %w: %w", b.Journal, b.Segment, b.From, shortener.ErrUnavailable, err)
	}
	// REPEATABLE READ, InnoDB's default, on purpose: the segment's
	// locking read below takes a gap lock when the segment has no row
	// yet, which is what keeps two shippers of a new segment from both
	// counting it (READ COMMITTED takes none: TestGalera counted such
	// batches twice).
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// The row lock serialises every shipper of this segment (there is one,
	// but a process restarted while its predecessor's commit is in flight
	// is two for a moment).
	if pos, err = segmentPosition(ctx, tx, b.Journal, b.Segment, "FOR UPDATE"); err != nil {
		return fail(err)
	}
	if pos != b.From {
		return false, pos, 0, nil
	}

	ids, err := linkIDs(ctx, tx, b.Clicks)
	if err != nil {
		return fail(err)
	}
	reqs, err := newRequests(ctx, tx, b)
	if err != nil {
		return fail(err)
	}
	// The batch's clicks, each with its link resolved, and each link's
	// (how many, for the link.clicked events and for this): a link with
	// denseClicks or more is counted into its count rows now, the others'
	// clicks wait in click_pending (clickfold.go).
	kept := make([]keptClick, 0, len(b.Clicks))
	clicked := clickedCounts{}
	for i := range b.Clicks {
		c := &b.Clicks[i]
		if c.Request.Known() && !reqs.first(c.Request) {
			dups++
			continue
		}
		link := c.LinkID
		if link == 0 {
			if link = ids[c.Code]; link == 0 {
				// No link has the code: a click cannot be journaled
				// without one, so this is a corrupt record that passed
				// its checksum. Nothing to count it against.
				s.log.Warn("click for an unknown code skipped", "code", c.Code)
				continue
			}
		}
		kept = append(kept, keptClick{i, link})
		clicked.add(link, c.At.UTC())
	}
	counts := newTally()
	pending := make([]pendingClick, 0, len(kept))
	for _, k := range kept {
		c := &b.Clicks[k.i]
		p := pendingClick{link: k.link, at: c.At.UTC(), bot: c.Agent == shortener.AgentBot, referrer: c.Referrer,
			values: clickValues(*c), visitor: clickVisitor(*c)}
		if clicked[k.link].Clicks >= denseClicks {
			counts.add(p)
			continue
		}
		p.at = p.at.Truncate(time.Second)
		p.journal, p.segment, p.position, p.seq = b.Journal, b.Segment, b.From, k.i
		pending = append(pending, p)
	}
	// Pending rows before count rows: FoldClicks locks pending rows
	// first too, so neither waits for the other holding what it needs.
	if err := insertPending(ctx, tx, pending); err != nil {
		return fail(err)
	}
	if err := counts.write(ctx, tx, s.seen); err != nil {
		return fail(err)
	}
	// link.clicked webhooks, sent only once this transaction has counted
	// the clicks (store/webhooks.go).
	if err := insertClickedEvents(ctx, tx, fmt.Sprintf("%d/%d@%d", b.Journal, b.Segment, b.From), clicked); err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO click_segments (journal_id, segment, node_id, shipped_to, updated_at)
		VALUES (?, ?, ?, ?, NOW(3)) ON DUPLICATE KEY UPDATE shipped_to = VALUES(shipped_to), updated_at = NOW(3)`,
		b.Journal, b.Segment, b.Node, b.To); err != nil {
		return fail(err)
	}
	if !b.CaughtUp.IsZero() {
		if err := caughtUp(ctx, tx, b.Journal, b.Node, b.CaughtUp); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	s.seen.remember(counts.dims)
	return true, b.To, dups, nil
}

// requestSize is one request in a click_request_sets blob: its time
// (Unix ms, big endian) then its ID.
const requestSize = 8 + 16

// batchRequests are a batch's requests, sorted and distinct, and which
// of them are counted: by an earlier batch, or by an earlier click of
// this one. Sorted slices rather than a map: a batch holds up to 10,000
// requests, and building, probing and emptying a map of them was half of
// the shipper's CPU.
type batchRequests struct {
	ids     []shortener.ClickRequest
	counted []bool
}

// first reports whether r is not counted yet, and marks it counted.
func (q *batchRequests) first(r shortener.ClickRequest) bool {
	i, ok := slices.BinarySearchFunc(q.ids, r, compareRequests)
	if !ok || q.counted[i] {
		return false
	}
	q.counted[i] = true
	return true
}

// newRequests returns b's requests, those that an earlier batch of any
// journal counted marked as counted, and records b's as counted
// (click_request_sets), in tx. It holds click_request_lock's row until tx
// ends, so two batches sharing requests see one another: the second waits
// for the first's commit and then reads its set (or, had it rolled back,
// finds none). It changes the row too: on Galera a lock is one node's, and
// only a changed row makes two batches through two nodes conflict. The lock is taken after the batch's segment row and before
// any count row, by every batch in that order, so it adds no deadlock.
func newRequests(ctx context.Context, tx *sql.Tx, b shortener.ClickBatch) (*batchRequests, error) {
	ids := make([]shortener.ClickRequest, 0, len(b.Clicks))
	for _, c := range b.Clicks {
		if c.Request.Known() {
			ids = append(ids, c.Request)
		}
	}
	if len(ids) == 0 {
		return &batchRequests{}, nil
	}
	slices.SortFunc(ids, compareRequests)
	ids = slices.Compact(ids)
	q := &batchRequests{ids: ids, counted: make([]bool, len(ids))}
	from, to := ids[0].At, ids[len(ids)-1].At
	if _, err := tx.ExecContext(ctx, "INSERT INTO click_request_lock (id, turns) VALUES (1, 1) ON DUPLICATE KEY UPDATE turns = turns + 1"); err != nil {
		return nil, fmt.Errorf("lock click requests: %w", err)
	}
	// A locking read, which reads the newest committed sets: a plain
	// one reads the transaction's snapshot, which a link looked up by
	// code before the wait for the lock fixed, and misses the sets of
	// the batches that held the lock meanwhile
	// (TestShipClicksSeesSetsCommittedWhileWaiting). Every batch that
	// reads or writes sets holds click_request_lock first, so these
	// shared locks wait for no other shipper.
	rows, err := tx.QueryContext(ctx, "SELECT ids FROM click_request_sets WHERE requested_to >= ? AND requested_from <= ? LOCK IN SHARE MODE", from, to)
	if err != nil {
		return nil, fmt.Errorf("read counted click requests: %w", err)
	}
	var set sql.RawBytes // the driver's buffer, not a copy of each set
	for rows.Next() {
		if err := rows.Scan(&set); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read counted click requests: %w", err)
		}
		if len(set)%requestSize != 0 {
			rows.Close()
			return nil, fmt.Errorf("read counted click requests: a set of %d bytes", len(set))
		}
		for e := set; len(e) > 0; e = e[requestSize:] {
			var r shortener.ClickRequest
			if r.At = int64(binary.BigEndian.Uint64(e)); r.At < from || r.At > to {
				continue
			}
			copy(r.ID[:], e[8:requestSize])
			if i, ok := slices.BinarySearchFunc(ids, r, compareRequests); ok {
				q.counted[i] = true
			}
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read counted click requests: %w", err)
	}
	// This batch's set: every request it names, counted now or before
	// (a request counted before stays remembered by the earlier set too;
	// either set is enough). The same batch key again (only if its
	// segment's position was forgotten and it shipped anew) adds to the
	// set it already has.
	buf := make([]byte, 0, len(ids)*requestSize)
	for _, r := range ids {
		buf = binary.BigEndian.AppendUint64(buf, uint64(r.At))
		buf = append(buf, r.ID[:]...)
	}
	// Prepared, unlike the store's other statements: interpolated, the
	// driver escaped the set byte by byte into the statement's text.
	st, err := tx.PrepareContext(ctx, `INSERT INTO click_request_sets (requested_to, journal_id, segment, position, requested_from, ids)
		VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE requested_from = LEAST(requested_from, VALUES(requested_from)), ids = CONCAT(ids, VALUES(ids))`)
	if err != nil {
		return nil, fmt.Errorf("record counted click requests: %w", err)
	}
	defer st.Close()
	if _, err := st.ExecContext(ctx, to, b.Journal, b.Segment, b.From, from, buf); err != nil {
		return nil, fmt.Errorf("record counted click requests: %w", err)
	}
	return q, nil
}

func compareRequests(a, b shortener.ClickRequest) int {
	return cmp.Or(cmp.Compare(a.At, b.At), bytes.Compare(a.ID[:], b.ID[:]))
}

// linkIDs looks up the link IDs of the clicks that carry only a code:
// the caches resolve redirects without the ID, so clicks are journaled by
// code and matched to their link here (codes are never reused: a deleted
// link keeps its code).
func linkIDs(ctx context.Context, tx *sql.Tx, clicks []shortener.Click) (map[string]int64, error) {
	ids := map[string]int64{}
	for _, c := range clicks {
		if c.LinkID == 0 {
			ids[c.Code] = 0
		}
	}
	if len(ids) == 0 {
		return ids, nil
	}
	args := make([]any, 0, len(ids))
	for code := range ids {
		args = append(args, code)
	}
	rows, err := tx.QueryContext(ctx, "SELECT code, id FROM links WHERE code IN (?"+strings.Repeat(",?", len(args)-1)+")", args...)
	if err != nil {
		return nil, fmt.Errorf("look up clicked links: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			code string
			id   int64
		)
		if err := rows.Scan(&code, &id); err != nil {
			return nil, fmt.Errorf("look up clicked links: %w", err)
		}
		ids[code] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up clicked links: %w", err)
	}
	return ids, nil
}

// execer is a *sql.Tx or *sql.DB.
// querier is a *sql.DB or *sql.Tx, to read with.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// upsertHours adds to click_hours in primary key order, so two instances
// shipping at once take their row locks in the same order (no deadlock
// between them; InnoDB's rare gap-lock deadlock is retried by the
// shipper, the whole batch with it).
func upsertHours(ctx context.Context, tx *sql.Tx, hours map[hourKey][2]int64) error {
	if len(hours) == 0 {
		return nil
	}
	keys := make([]hourKey, 0, len(hours))
	for k := range hours {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].link != keys[b].link {
			return keys[a].link < keys[b].link
		}
		return keys[a].hour.Before(keys[b].hour)
	})
	args := make([]any, 0, 4*len(keys))
	for _, k := range keys {
		v := hours[k]
		args = append(args, k.link, k.hour, v[0], v[1])
	}
	if err := upsertRows(ctx, tx, "INSERT INTO click_hours (link_id, hour, clicks, bots) VALUES ", "(?,?,?,?)",
		" ON DUPLICATE KEY UPDATE clicks = clicks + VALUES(clicks), bots = bots + VALUES(bots)", args); err != nil {
		return fmt.Errorf("add click hours: %w", err)
	}
	return nil
}

// insertValues runs one multi-row INSERT: head, then row (a tuple of
// placeholders and SQL, e.g. "(?, ?, NOW(3))") once per row, then tail;
// args hold the rows' values back to back, as many per row as row has
// placeholders. Every multi-row insert of the store goes through it or
// upsertRows.
func insertValues(ctx context.Context, x execer, head, row, tail string, args []any) (sql.Result, error) {
	return x.ExecContext(ctx, valuesStatement(head, row, tail, len(args)/strings.Count(row, "?")), args...)
}

// valuesStatement is head, n rows and tail, as insertValues runs them.
func valuesStatement(head, row, tail string, n int) string {
	var q strings.Builder
	q.Grow(len(head) + len(tail) + (len(row)+1)*n)
	q.WriteString(head)
	for i := range n {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString(row)
	}
	q.WriteString(tail)
	return q.String()
}

// preparedRows is how many rows one prepared statement of upsertRows
// carries: at most 7 values a row, 3,500 placeholders, far below
// MySQL's 65,535.
const preparedRows = 500

// upsertRows is insertValues for the counts a batch of clicks adds, in
// tx: while preparedRows rows remain, they go in a statement prepared
// once for the call and executed per preparedRows rows; the rest go as
// one statement of text. A long tail of links makes a row per click in
// each table (its own hour, referrer, dimensions and sketches), and as
// text MariaDB parses every row's values and the driver escapes them
// into the statement; prepared, the values go in binary and the
// statement is parsed once: 9-14% less CPU a tail click, the shipper's
// and MariaDB's together (BenchmarkShipTailClicks, host-cpu-ns/click).
// Rows keep their order, so the lock order upsertHours explains holds.
func upsertRows(ctx context.Context, tx *sql.Tx, head, row, tail string, args []any) error {
	per := strings.Count(row, "?")
	if chunk := preparedRows * per; len(args) >= chunk {
		st, err := tx.PrepareContext(ctx, valuesStatement(head, row, tail, preparedRows))
		if err != nil {
			return err
		}
		defer st.Close()
		for ; len(args) >= chunk; args = args[chunk:] {
			if _, err := st.ExecContext(ctx, args[:chunk]...); err != nil {
				return err
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	_, err := insertValues(ctx, tx, head, row, tail, args)
	return err
}

func upsertReferrers(ctx context.Context, tx *sql.Tx, refs map[refKey]int64) error {
	if len(refs) == 0 {
		return nil
	}
	keys := make([]refKey, 0, len(refs))
	for k := range refs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		ka, kb := keys[a], keys[b]
		if ka.link != kb.link {
			return ka.link < kb.link
		}
		if !ka.day.Equal(kb.day) {
			return ka.day.Before(kb.day)
		}
		return ka.host < kb.host
	})
	args := make([]any, 0, 4*len(keys))
	for _, k := range keys {
		args = append(args, k.link, k.day, k.host, refs[k])
	}
	if err := upsertRows(ctx, tx, "INSERT INTO click_referrers (link_id, day, host, clicks) VALUES ", "(?,?,?,?)",
		" ON DUPLICATE KEY UPDATE clicks = clicks + VALUES(clicks)", args); err != nil {
		return fmt.Errorf("add click referrers: %w", err)
	}
	return nil
}

// caughtUp records a journal's caught-up time, which only grows, and
// never past MySQL's own clock: an instance whose clock jumped ahead and
// back would otherwise pin it in the future, and as_of would claim every
// click up to then counted while its later clicks were not.
func caughtUp(ctx context.Context, x execer, journal, node int64, at time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO click_journals (journal_id, node_id, caught_up_at, updated_at)
		VALUES (?, ?, LEAST(?, UTC_TIMESTAMP(3)), NOW(3)) ON DUPLICATE KEY UPDATE node_id = VALUES(node_id),
		caught_up_at = GREATEST(caught_up_at, VALUES(caught_up_at)), updated_at = NOW(3)`,
		journal, node, at.UTC())
	if err != nil {
		return fmt.Errorf("record journal caught up: %w", err)
	}
	return nil
}

// CaughtUp records that every click journal held before at is counted.
func (s *Store) CaughtUp(ctx context.Context, journal, node int64, at time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := caughtUp(ctx, s.db, journal, node, at); err != nil {
		return fmt.Errorf("%w: %w", shortener.ErrUnavailable, err)
	}
	return nil
}

// ForgetSegments drops the recorded positions of a journal's segments up
// to through, whose files are deleted, and records in the same
// transaction that each of them is counted whole
// (click_segments_forgotten): a restored copy of one counts nothing.
func (s *Store) ForgetSegments(ctx context.Context, journal, through int64) error {
	for try := 1; ; try++ {
		if err := s.forgetSegments(ctx, journal, through); !s.again(ctx, err, try) {
			return err
		}
	}
}

// forgetSegments is one try of ForgetSegments.
func (s *Store) forgetSegments(ctx context.Context, journal, through int64) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) error {
		return fmt.Errorf("forget journal segments: %w: %w", shortener.ErrUnavailable, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO click_segments_forgotten (journal_id, through_segment, updated_at) VALUES (?, ?, NOW(3))
		ON DUPLICATE KEY UPDATE through_segment = GREATEST(through_segment, VALUES(through_segment)), updated_at = NOW(3)`, journal, through); err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM click_segments WHERE journal_id = ? AND segment <= ?", journal, through); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// RetireJournal removes a wholly shipped, closed journal from as_of.
func (s *Store) RetireJournal(ctx context.Context, journal int64) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, "DELETE FROM click_journals WHERE journal_id = ?", journal); err != nil {
		return fmt.Errorf("retire journal: %w: %w", shortener.ErrUnavailable, err)
	}
	return nil
}

// activeJournals is how recently a journal must have reported to hold
// as_of back: one that has been silent longer belongs to an instance that
// is gone (its clicks ship when it, or its volume, returns).
const activeJournals = 10 * time.Minute

// ClickStats returns the clicks of the link with ID linkID (deleted or
// expired included: its counts are kept) in [from, to), in hourly buckets or,
// with daily, daily ones (from and to on their boundaries), with the top referrer hosts (at most top, counted by day:
// from and to are widened to whole days for them).
func (s *Store) ClickStats(ctx context.Context, linkID int64, from, to time.Time, daily bool, top int) (shortener.ClickStats, error) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeoutFactor*s.timeout)
	defer cancel()
	fail := func(err error) (shortener.ClickStats, error) {
		return shortener.ClickStats{}, fmt.Errorf("click stats of link %d: %w: %w", linkID, shortener.ErrUnavailable, err)
	}
	from, to = from.UTC(), to.UTC()
	step := time.Hour
	if daily {
		step = 24 * time.Hour
	}
	var st shortener.ClickStats
	for t := from; t.Before(to); t = t.Add(step) {
		st.Series = append(st.Series, shortener.ClickCount{Start: t})
	}
	// One snapshot for every read below: a fold committing between two
	// of them would otherwise show its clicks twice or not at all.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	rows, err := tx.QueryContext(ctx, `SELECT hour, clicks, bots FROM click_hours WHERE link_id = ? AND hour >= ? AND hour < ?
		UNION ALL SELECT at, 1, bot FROM click_pending WHERE link_id = ? AND at >= ? AND at < ?`, linkID, from, to, linkID, from, to)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			hour        time.Time
			clicks, bot int64
		)
		if err := rows.Scan(&hour, &clicks, &bot); err != nil {
			return fail(err)
		}
		i := int(hour.Sub(from) / step)
		if i >= 0 && i < len(st.Series) {
			st.Series[i].Clicks += clicks
		}
		st.Total += clicks
		st.Bots += bot
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	st.Browsers = st.Total - st.Bots

	dayFrom := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	dayTo := time.Date(to.Year(), to.Month(), to.Day(), 0, 0, 0, 0, time.UTC)
	if dayTo.Before(to) {
		dayTo = dayTo.Add(24 * time.Hour)
	}
	refRows, err := tx.QueryContext(ctx, `SELECT host, SUM(clicks) AS n FROM (
		SELECT host, clicks FROM click_referrers WHERE link_id = ? AND day >= ? AND day < ?
		UNION ALL SELECT referrer, 1 FROM click_pending WHERE link_id = ? AND at >= ? AND at < ?) r
		GROUP BY host ORDER BY n DESC, host LIMIT ?`, linkID, dayFrom, dayTo, linkID, dayFrom, dayTo, top)
	if err != nil {
		return fail(err)
	}
	defer refRows.Close()
	for refRows.Next() {
		var r shortener.ReferrerCount
		if err := refRows.Scan(&r.Host, &r.Clicks); err != nil {
			return fail(err)
		}
		st.Referrers = append(st.Referrers, r)
	}
	if err := refRows.Err(); err != nil {
		return fail(err)
	}
	if err := dimStats(ctx, tx, linkID, dayFrom, dayTo, from, to, step, &st); err != nil {
		return fail(err)
	}

	var asOf sql.NullTime
	var now time.Time
	if err := tx.QueryRowContext(ctx, "SELECT (SELECT MIN(caught_up_at) FROM click_journals WHERE updated_at > NOW(3) - INTERVAL ? SECOND), UTC_TIMESTAMP(3)",
		int(activeJournals/time.Second)).Scan(&asOf, &now); err != nil {
		return fail(err)
	}
	st.AsOf = now
	if asOf.Valid && asOf.Time.Before(now) {
		st.AsOf = asOf.Time
	}
	return st, nil
}

// purgeBatch bounds the sets (batches) one DELETE of PurgeClickRequests
// removes, so it holds its locks briefly.
const purgeBatch = 1000

// PurgeClickRequests deletes the sets of remembered requests
// (click_request_sets: a set's requests are no later than its
// requested_to) no journal can still hold an uncounted copy of, and
// returns how many sets it deleted. maxAge is
// the journals' MaxRequestAge; window and hold are explained below.
//
// Why it is safe. A journal writes a click naming request (t, id) only
// if, by the journal's clock at that moment, t is at most maxAge old
// (clicks.Journal.Record), and it checks that under the same lock its
// shipper reads the journal's end under, after reading its own clock.
// A journal's caught_up_at is either such a shipper reading taken when
// it had shipped everything visible, or the time of a click it has
// shipped, taken before every later click was written. So while a
// journal still holds (or has yet to write) an unshipped copy of (t, id),
// its caught_up_at is at most that copy's write time, which is at most
// t + maxAge: the inequality is between the numbers themselves, so no
// clock agreement between nginx, instances and MySQL is assumed (only
// that an instance's clock does not step back).
// caught_up_at only grows (GREATEST) and a journal's row goes only when
// it is wholly shipped and closed (RetireJournal). Hence no journal with
// a row can ship a copy of a request with t < MIN(caught_up_at) -
// maxAge; its first copy's row can go. This holds for a journal of a
// frozen instance (its caught_up_at stops with it; thawed, it drops
// what is stale), and for one that ships hours late after MySQL was down
// (its caught_up_at is as old as what it has not shipped).
//
// What bounds it, stated: a journal not heard from for hold (an instance
// gone for good, its volume with it) stops holding the purge back; if it
// does return later, a request nginx retried from it to another
// instance can count twice. A journal with no row yet (its instance has
// not reached MySQL since it began) is covered by window: nothing younger
// than window (by MySQL's clock) is purged, whatever the journals say.
// Every instance writes its row within a second of starting while MySQL
// is up.
func (s *Store) PurgeClickRequests(ctx context.Context, maxAge, window, hold time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeoutFactor*s.timeout)
	defer cancel()
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("purge click requests: %w: %w", shortener.ErrUnavailable, err)
	}
	var (
		oldest sql.NullTime
		now    time.Time
	)
	if err := s.db.QueryRowContext(ctx, "SELECT (SELECT MIN(caught_up_at) FROM click_journals WHERE updated_at > NOW(3) - INTERVAL ? SECOND), UTC_TIMESTAMP(3)",
		int64(hold/time.Second)).Scan(&oldest, &now); err != nil {
		return fail(err)
	}
	horizon := now.Add(-window)
	if oldest.Valid && oldest.Time.Before(horizon) {
		horizon = oldest.Time
	}
	before := horizon.Add(-maxAge).UnixMilli()
	// A set claiming requests from the future (a forged or broken proxy
	// clock, before journals clamped such times) would never be purged
	// from the left, and every later batch would read it under the lock:
	// those more than futureSets ahead of MySQL's clock go too.
	after := now.Add(futureSets).UnixMilli()
	var purged int64
	for _, q := range []struct {
		sql  string
		edge int64
	}{
		{"DELETE FROM click_request_sets WHERE requested_to < ? ORDER BY requested_to LIMIT ?", before},
		{"DELETE FROM click_request_sets WHERE requested_to > ? ORDER BY requested_to DESC LIMIT ?", after},
	} {
		for {
			res, err := s.db.ExecContext(ctx, q.sql, q.edge, purgeBatch)
			if err != nil {
				return fail(err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fail(err)
			}
			purged += n
			if n < purgeBatch {
				break
			}
		}
	}
	return purged, nil
}

// futureSets is how far past MySQL's clock a set's requests may claim to
// be before the purge removes it: far more than any clock difference
// between nginx and MySQL.
const futureSets = time.Hour
