package store_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"shortener"
	"shortener/internal/poll"
)

// TestShipClicksSeesSetsCommittedWhileWaiting: a batch that waits for
// click_request_lock while another batch holding it counts a request
// both carry (a request nginx sent to two instances) must see that
// batch's set once it commits. The waiting batch looked up a link by
// code before it waited, a consistent read: under REPEATABLE READ that
// fixed its snapshot before the other's commit, the set stayed
// invisible to it, and the request was counted twice (chaos
// mysql-node-freeze on the Galera stack, run 20261205T153840: 6 clicks
// counted twice, each of whose requests is in the sets of both
// instances' journals). The sets are read with a locking read, which
// reads the newest committed rows.
func TestShipClicksSeesSetsCommittedWhileWaiting(t *testing.T) {
	dsn := database(t)
	st := openStore(t, dsn)
	ctx := context.Background()
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	l := shortener.Link{ID: 420, Code: "snap420", URL: "https://example.com/s", Redirect: 302, CreatedAt: at}
	if err := st.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	req := shortener.ClickRequest{At: at.UnixMilli(), ID: [16]byte{0xab, 1}}

	// The other batch, holding the lock with its set written, not yet
	// committed.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback() //nolint:errcheck // committed below
	set := binary.BigEndian.AppendUint64(nil, uint64(req.At))
	set = append(set, req.ID[:]...)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO click_request_lock (id, turns) VALUES (1, 1) ON DUPLICATE KEY UPDATE turns = turns + 1", nil},
		{"INSERT INTO click_request_sets (requested_to, journal_id, segment, position, requested_from, ids) VALUES (?, 99, 1, 0, ?, ?)", []any{req.At, req.At, set}},
	} {
		if _, err := other.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}

	// This batch: the same request, and a click by code (looked up
	// first), so that it reads before it waits.
	b := shortener.ClickBatch{Journal: 7, Node: 1, Segment: 1, From: 0, To: 10, Clicks: []shortener.Click{
		{Code: l.Code, At: at},
		{Code: l.Code, At: at, Request: req},
	}}
	done := make(chan error, 1)
	go func() {
		_, _, _, err := st.ShipClicks(ctx, b)
		done <- err
	}()
	poll.Until(t, "the batch waiting for click_request_lock", func() error {
		var n int
		// The user's own sessions are visible to it without PROCESS.
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'INSERT INTO click_request_lock%' AND id <> CONNECTION_ID()").Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no transaction waits for a lock yet")
		}
		return nil
	})
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stats, err := st.ClickStats(ctx, l.ID, at.Add(-time.Hour), at.Add(time.Hour), false, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 1 {
		t.Errorf("%d clicks counted, want 1: the request the other batch counted while this one waited was counted again", stats.Total)
	}
}

// TestShipNewSegmentRaced: four shippers race with the first batch of a
// new segment, 20 times: each batch is applied once. The segment has no
// row yet, so only the gap lock of the shipping transaction's locking
// read (REPEATABLE READ) keeps a second shipper from counting it too;
// under READ COMMITTED, which takes none, batches were counted twice.
func TestShipNewSegmentRaced(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	l := shortener.Link{ID: 421, Code: "race421", URL: "https://example.com/r", Redirect: 302, CreatedAt: at}
	if err := st.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	const segments, racers = 20, 4
	for seg := int64(1); seg <= segments; seg++ {
		b := shortener.ClickBatch{Journal: 8, Node: 1, Segment: seg, From: 0, To: 10,
			Clicks: []shortener.Click{{LinkID: l.ID, At: at}}}
		applied := make([]bool, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				for try := 0; ; try++ {
					ok, _, _, err := st.ShipClicks(ctx, b)
					if err == nil {
						applied[i] = ok
						return
					}
					if try == 20 {
						t.Errorf("segment %d: still failing: %v", seg, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if n := countTrue(applied); n != 1 {
			t.Errorf("segment %d applied by %d of %d racing shippers, want 1", seg, n, racers)
		}
	}
	stats, err := st.ClickStats(ctx, l.ID, at.Add(-time.Hour), at.Add(time.Hour), false, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != segments {
		t.Errorf("%d clicks counted, want %d", stats.Total, segments)
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
