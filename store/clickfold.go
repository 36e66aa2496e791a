package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"shortener"
)

// Pending clicks (migration 0028). A shipped batch counts the clicks of
// a link it holds denseClicks or more of into the link's count rows, as
// it always did: they share those rows, so each costs a fraction of a
// row. A link with fewer clicks in the batch, the long tail, would make
// five rows of its own for each: its hour, its referrer, its dimension
// set and two visitor sketches, each an upsert at a random place in a
// large table (58-70 µs of the host's CPU a click, against 13 µs
// pending: BenchmarkShipTailClicks on either build, docs/bench/findings.md).
// Its clicks go to click_pending instead, one
// inserted row each, in the same transaction, so they are as exactly
// once as the counts. FoldClicks later moves the pending clicks of
// ended hours into the count rows, all of a link's at once, and deletes
// them in the same transaction: a link clicked 36 times in an hour,
// once a batch, makes its rows once instead of 36 times. Every reader of
// the counts adds what is pending (ClickStats, ClickTotal, clickTotals).

// denseClicks is how many clicks of one link a batch must hold for them
// to go to the count rows at once rather than to click_pending. Pending,
// a click costs about 13 µs in the batch's transaction
// (BenchmarkShipTailClicks) and its share of the fold later, 14 µs for
// a link clicked dozens of times in its hour (BenchmarkFoldClicks);
// counted at once with n-1 others of its link, about 50 µs / n, all in
// the batch's transaction, which one database runs one at a time
// (docs/scaling.md). From 4 on, counting at once costs no more than the
// pending insert alone.
const denseClicks = 4

// keptClick is a click of a batch that counts: its index in the batch
// and its link.
type keptClick struct {
	i    int
	link int64
}

// pendingClick is a click as click_pending keeps it, and as a tally
// counts it.
type pendingClick struct {
	link     int64
	at       time.Time // UTC; whole seconds once pending
	journal  int64
	segment  int64
	position int64
	seq      int
	bot      bool
	referrer string
	values   [4]string // clickValues
	visitor  uint64    // 0: none
}

// tally is what a set of clicks adds to the count rows.
type tally struct {
	hours map[hourKey][2]int64
	refs  map[refKey]int64
	dims  *clickAnalytics
}

func newTally() *tally {
	return &tally{hours: map[hourKey][2]int64{}, refs: map[refKey]int64{}, dims: newClickAnalytics()}
}

func (t *tally) add(c pendingClick) {
	hk := hourKey{c.link, c.at.Truncate(time.Hour)}
	v := t.hours[hk]
	v[0]++
	if c.bot {
		v[1]++
	}
	t.hours[hk] = v
	day := time.Date(c.at.Year(), c.at.Month(), c.at.Day(), 0, 0, 0, 0, time.UTC)
	t.refs[refKey{c.link, day, c.referrer}]++
	t.dims.add(c.link, c.at, c.values, c.visitor)
}

// write adds the tally to the count rows, each table in primary key
// order (the lock order every writer shares: upsertHours).
func (t *tally) write(ctx context.Context, tx *sql.Tx, seen *seenVisitors) error {
	if err := upsertHours(ctx, tx, t.hours); err != nil {
		return err
	}
	if err := upsertReferrers(ctx, tx, t.refs); err != nil {
		return err
	}
	return t.dims.write(ctx, tx, seen)
}

// insertPending adds clicks to click_pending in primary key order, which
// is the order FoldClicks locks them in.
func insertPending(ctx context.Context, tx *sql.Tx, clicks []pendingClick) error {
	if len(clicks) == 0 {
		return nil
	}
	slices.SortFunc(clicks, func(a, b pendingClick) int {
		return cmp.Or(cmp.Compare(a.link, b.link), a.at.Compare(b.at), cmp.Compare(a.journal, b.journal),
			cmp.Compare(a.segment, b.segment), cmp.Compare(a.position, b.position), cmp.Compare(a.seq, b.seq))
	})
	args := make([]any, 0, 13*len(clicks))
	for _, c := range clicks {
		args = append(args, c.link, c.at, c.journal, c.segment, c.position, c.seq, c.bot, c.referrer,
			c.values[0], c.values[1], c.values[2], c.values[3], c.visitor)
	}
	// A duplicate is this very click from a batch applied twice: it
	// stays counted once.
	if err := upsertRows(ctx, tx, `INSERT INTO click_pending (link_id, at, journal_id, segment, position, seq, bot, referrer,
		country, browser, os, device, visitor) VALUES `, "(?,?,?,?,?,?,?,?,?,?,?,?,?)", " ON DUPLICATE KEY UPDATE link_id = link_id", args); err != nil {
		return fmt.Errorf("add pending clicks: %w", err)
	}
	return nil
}

// foldChunk is about how many pending clicks one fold transaction moves:
// it takes whole links, so it may move more.
const foldChunk = 5000

// FoldClicks moves every pending click made before the hour now is in
// into the count rows and returns how many it moved. It does nothing if
// an earlier fold already reached that hour (click_folds). It holds no
// lock between chunks, so instances may fold at once: a chunk's
// transaction locks its links' pending rows, so the second to reach a
// chunk finds it folded.
func (s *Store) FoldClicks(ctx context.Context, now time.Time) (int64, error) {
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("fold pending clicks: %w: %w", shortener.ErrUnavailable, err)
	}
	cutoff := now.UTC().Truncate(time.Hour)
	var to time.Time
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	err := s.db.QueryRowContext(cctx, "SELECT folded_to FROM click_folds WHERE id = 1").Scan(&to)
	cancel()
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fail(err)
	case !to.Before(cutoff):
		return 0, nil
	}
	folded, err := s.FoldPending(ctx, cutoff)
	if err != nil {
		return folded, err
	}
	// Two instances that folded at once both move it (on Galera their
	// writes conflict, and one runs again).
	for try := 1; ; try++ {
		cctx, cancel = context.WithTimeout(ctx, s.timeout)
		_, err = s.db.ExecContext(cctx, `INSERT INTO click_folds (id, folded_to) VALUES (1, ?)
			ON DUPLICATE KEY UPDATE folded_to = GREATEST(folded_to, VALUES(folded_to))`, cutoff)
		cancel()
		if !s.again(ctx, err, try) {
			break
		}
	}
	if err != nil {
		return folded, fmt.Errorf("fold pending clicks: %w: %w", shortener.ErrUnavailable, err)
	}
	return folded, nil
}

// FoldPending folds every pending click made before before, whatever its
// hour, and returns how many it folded; click_folds is neither read nor
// moved. FoldClicks folds with it; make bench folds each row's clicks
// with it right after the row, to read what folding them costs.
func (s *Store) FoldPending(ctx context.Context, before time.Time) (int64, error) {
	cutoff := before.UTC()
	var folded int64
	from := int64(math.MinInt64)
	for {
		first, next, ok, err := s.foldRange(ctx, from, cutoff)
		if err != nil {
			return folded, fmt.Errorf("fold pending clicks: %w: %w", shortener.ErrUnavailable, err)
		}
		if !ok {
			break
		}
		var n int64
		for try := 1; ; try++ {
			if n, err = s.foldLinks(ctx, first, next, cutoff); !s.again(ctx, err, try) {
				break
			}
		}
		if err != nil {
			return folded, fmt.Errorf("fold pending clicks: %w: %w", shortener.ErrUnavailable, err)
		}
		folded += n
		if next == math.MaxInt64 {
			break
		}
		from = next
	}
	return folded, nil
}

// foldRange finds the next chunk to fold from link from on: the links
// [first, next) (next math.MaxInt64: all the rest), first being the
// first link from on with a click pending from before cutoff. ok is
// false when there is none. Plain reads: the fold's own transaction
// locks what it reads.
func (s *Store) foldRange(ctx context.Context, from int64, cutoff time.Time) (first, next int64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeoutFactor*s.timeout)
	defer cancel()
	err = s.db.QueryRowContext(ctx, "SELECT link_id FROM click_pending WHERE link_id >= ? AND at < ? ORDER BY link_id LIMIT 1", from, cutoff).Scan(&first)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	err = s.db.QueryRowContext(ctx, "SELECT link_id FROM click_pending WHERE link_id >= ? ORDER BY link_id LIMIT 1 OFFSET ?", first, foldChunk).Scan(&next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		next = math.MaxInt64
	case err != nil:
		return 0, 0, false, err
	case next == first:
		next = first + 1 // one link has more than a chunk: it is the chunk
	}
	return first, next, true, nil
}

// foldLinks is one try of folding the clicks of links [first, next)
// made before cutoff: in one transaction it locks them (REPEATABLE
// READ: the range's gaps too, so no click joins it meanwhile), adds
// them to the count rows and deletes them.
func (s *Store) foldLinks(ctx context.Context, first, next int64, cutoff time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeoutFactor*s.timeout)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	const where = " FROM click_pending WHERE link_id >= ? AND link_id < ? AND at < ?"
	rows, err := tx.QueryContext(ctx, "SELECT link_id, at, bot, referrer, country, browser, os, device, visitor"+where+" FOR UPDATE", first, next, cutoff)
	if err != nil {
		return 0, fmt.Errorf("read pending clicks: %w", err)
	}
	t := newTally()
	var n int64
	for rows.Next() {
		var c pendingClick
		if err := rows.Scan(&c.link, &c.at, &c.bot, &c.referrer, &c.values[0], &c.values[1], &c.values[2], &c.values[3], &c.visitor); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read pending clicks: %w", err)
		}
		c.at = c.at.UTC()
		t.add(c)
		n++
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("read pending clicks: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	if err := t.write(ctx, tx, s.seen); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, "DELETE"+where, first, next, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delete folded clicks: %w", err)
	}
	if d, err := res.RowsAffected(); err != nil || d != n {
		// The range is locked: what was read is what is deleted. Were it
		// not, the counts would be off; nothing is committed.
		return 0, fmt.Errorf("delete folded clicks: deleted %d of the %d read (%v)", d, n, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	s.seen.remember(t.dims)
	return n, nil
}
