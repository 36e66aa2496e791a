package store_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
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
// instances' journals). The shipping transaction reads committed data.
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
