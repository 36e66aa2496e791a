package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"shortener"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The senders' side of webhook_deliveries (package webhook). A delivery
// is due once next_at has passed. A sender claims due ones in a short
// transaction, SELECT ... FOR UPDATE SKIP LOCKED (senders claiming at
// the same moment take different rows, never waiting on each other),
// and marks each claimed for hold: claimed_until, and next_at with it,
// so that no other claim takes it until then. It then sends them
// outside any transaction and settles each under its claim: done
// (delivered or given up: the row goes) or due again later. A sender
// that dies leaves its claims to run out; a claim that ran out is
// anyone's, and its late holder's settle changes nothing.

// ClaimDeliveries claims up to n due deliveries, the longest due first,
// for hold, and returns them with their webhook's URL and secret and
// their attempt counted. Deliveries of a webhook deleted meanwhile are
// dropped. Nothing due: none, after one indexed read.
func (s *Store) ClaimDeliveries(ctx context.Context, n int, hold time.Duration) ([]shortener.Delivery, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) ([]shortener.Delivery, error) {
		return nil, fmt.Errorf("claim webhook deliveries: %w: %w", shortener.ErrUnavailable, err)
	}
	var one int
	switch err := s.db.QueryRowContext(ctx, "SELECT 1 FROM webhook_deliveries WHERE next_at <= NOW(3) LIMIT 1").Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return fail(err)
	}
	for attempt := 0; ; attempt++ {
		out, err := s.claimDeliveries(ctx, n, hold)
		// Claims are in READ COMMITTED, so they take no gap locks and do
		// not deadlock one another; a change inserting deliveries still
		// may, rarely: InnoDB rolls one back, and a claim is safe to run
		// again.
		var me *mysql.MySQLError
		if attempt < 3 && errors.As(err, &me) && me.Number == 1213 {
			continue
		}
		if err != nil {
			return fail(err)
		}
		return out, nil
	}
}

// claimDeliveries is one try of ClaimDeliveries. Its transaction is READ
// COMMITTED: a locking read there locks the rows it returns and no gap,
// so claimers that move next_at (which inserts into its index) take no
// locks that another's insert would wait for: under REPEATABLE READ four
// concurrent claims deadlocked on the index's gaps (TestClaims).
func (s *Store) claimDeliveries(ctx context.Context, n int, hold time.Duration) ([]shortener.Delivery, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	ids, err := dueDeliveries(ctx, tx, n)
	if err != nil || len(ids) == 0 {
		if err != nil {
			return nil, err
		}
		return nil, nil
	}
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // never fails (crypto/rand)
	claim := hex.EncodeToString(b[:])
	in := "(?" + strings.Repeat(",?", len(ids)-1) + ")"
	if _, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET attempts = attempts + 1, claim = ?, "+
		"claimed_until = NOW(3) + INTERVAL ? MICROSECOND, next_at = NOW(3) + INTERVAL ? MICROSECOND WHERE id IN "+in,
		append([]any{claim, hold.Microseconds(), hold.Microseconds()}, ids...)...); err != nil {
		return nil, err
	}
	out, orphans, err := claimed(ctx, tx, in, ids, claim)
	if err != nil {
		return nil, err
	}
	if len(orphans) > 0 {
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE id IN (?"+strings.Repeat(",?", len(orphans)-1)+")", orphans...); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return out, nil
}

// dueDeliveries locks and returns the IDs of up to n due deliveries no
// other transaction has locked.
func dueDeliveries(ctx context.Context, tx *sql.Tx, n int) ([]any, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id FROM webhook_deliveries WHERE next_at <= NOW(3) ORDER BY next_at LIMIT ? FOR UPDATE SKIP LOCKED", n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// claimed reads the deliveries ids, just claimed under claim (in is the
// IN list of their placeholders), with their webhooks; orphans are those
// whose webhook is gone.
func claimed(ctx context.Context, tx *sql.Tx, in string, ids []any, claim string) (out []shortener.Delivery, orphans []any, err error) {
	rows, err := tx.QueryContext(ctx, "SELECT d.id, d.webhook_id, w.url, w.secret, d.event_id, d.type, d.event_at, d.data, d.attempts, "+
		"TIMESTAMPDIFF(MICROSECOND, d.created_at, NOW(3)) FROM webhook_deliveries d LEFT JOIN webhooks w ON w.id = d.webhook_id "+
		"WHERE d.id IN "+in+" ORDER BY d.next_at, d.id", ids...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			d           shortener.Delivery
			url, secret sql.NullString
			data        []byte
			age         int64
		)
		if err := rows.Scan(&d.ID, &d.Webhook, &url, &secret, &d.Event.ID, &d.Event.Type, &d.Event.At, &data, &d.Attempts, &age); err != nil {
			return nil, nil, err
		}
		if !url.Valid {
			orphans = append(orphans, d.ID)
			continue
		}
		d.URL, d.Secret, d.Age, d.Claim = url.String, secret.String, time.Duration(age)*time.Microsecond, claim
		if err := decodeEvent(&d.Event, data); err != nil {
			return nil, nil, fmt.Errorf("delivery %d: %w", d.ID, err)
		}
		out = append(out, d)
	}
	return out, orphans, rows.Err()
}

// decodeEvent reads an event's data column into e, by its type.
func decodeEvent(e *shortener.Event, data []byte) error {
	var v any = &e.Link
	if e.Type == shortener.EventLinkClicked {
		v = &e.Clicks
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s event %s: %w", e.Type, e.ID, err)
	}
	return nil
}

// FinishDelivery removes d, delivered or given up, if its claim still
// holds it.
func (s *Store) FinishDelivery(ctx context.Context, d shortener.Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE id = ? AND claim = ?", d.ID, d.Claim); err != nil {
		return fmt.Errorf("finish webhook delivery %d: %w: %w", d.ID, shortener.ErrUnavailable, err)
	}
	return nil
}

// RetryDelivery makes d due again after wait, if its claim still holds
// it, noting why its attempt failed.
func (s *Store) RetryDelivery(ctx context.Context, d shortener.Delivery, wait time.Duration, reason string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if len(reason) > 255 { // the column's width; cut where a character ends
		reason = strings.ToValidUTF8(reason[:255], "")
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE webhook_deliveries SET next_at = NOW(3) + INTERVAL ? MICROSECOND, claim = NULL, claimed_until = NULL, "+
		"last_error = ? WHERE id = ? AND claim = ?", wait.Microseconds(), reason, d.ID, d.Claim); err != nil {
		return fmt.Errorf("retry webhook delivery %d: %w: %w", d.ID, shortener.ErrUnavailable, err)
	}
	return nil
}

// PendingDeliveries counts the deliveries not yet made or given up.
func (s *Store) PendingDeliveries(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var n int64
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook_deliveries").Scan(&n); err != nil {
		return 0, fmt.Errorf("count webhook deliveries: %w: %w", shortener.ErrUnavailable, err)
	}
	return n, nil
}
