package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"shortener"
	"strconv"
	"strings"
	"time"
)

// Webhooks (tables webhooks and webhook_deliveries) are an outbox: each
// event is inserted in the transaction of the change it tells of, one
// row per webhook of the link's owner subscribed to its type, and only
// then (package webhook) sent. A change whose owner has no such webhook
// writes nothing, so the cost of the feature to a create is one indexed
// read of a small table; fanning out later instead would write an event
// for every change of every keyed link, most of them for nobody.
//
// Which webhooks an event goes to is read in the change's transaction by
// a plain (consistent) read: a webhook whose creation was answered before
// the change began is seen, and one deleted since is dropped when a
// sender claims its delivery (DeleteWebhook deletes its rows anyway).

// dbtx is a pool or a transaction.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// CreateWebhook stores w, unless its owner has limit webhooks already
// (shortener.ErrWebhookLimit). Concurrent creates of one owner queue on
// its rows, so the limit holds.
//
// It returns ttl after the commit (subscribedCache), ignoring ctx: by
// then no instance trusts an answer read before the webhook was made,
// so every create that begins after the answer records its event.
func (s *Store) CreateWebhook(ctx context.Context, w shortener.Webhook, limit int) error {
	for try := 1; ; try++ {
		err := s.createWebhook(ctx, w, limit)
		if err == nil {
			time.Sleep(s.subscribed.ttl) // see above; this instance's own answers expire alike
			return nil
		}
		if !s.again(ctx, err, try) {
			return err
		}
	}
}

// createWebhook is one try of CreateWebhook.
func (s *Store) createWebhook(ctx context.Context, w shortener.Webhook, limit int) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) error {
		return fmt.Errorf("create webhook: %w: %w", shortener.ErrUnavailable, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT id FROM webhooks WHERE owner = ? FOR UPDATE) AS mine", w.Owner).Scan(&n); err != nil {
		return fail(err)
	}
	if n >= limit {
		return fmt.Errorf("create webhook: %w: the key has %d", shortener.ErrWebhookLimit, n)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO webhooks (id, owner, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		w.ID, w.Owner, w.URL, joinEvents(w.Events), w.Secret, w.CreatedAt.UTC()); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// Webhooks returns owner's webhooks, oldest first, secrets included (the
// caller decides who sees them).
func (s *Store) Webhooks(ctx context.Context, owner string) ([]shortener.Webhook, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) ([]shortener.Webhook, error) {
		return nil, fmt.Errorf("list webhooks: %w: %w", shortener.ErrUnavailable, err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT id, owner, url, events, secret, created_at FROM webhooks WHERE owner = ? ORDER BY created_at, id", owner)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	out := []shortener.Webhook{}
	for rows.Next() {
		var (
			w      shortener.Webhook
			events string
		)
		if err := rows.Scan(&w.ID, &w.Owner, &w.URL, &events, &w.Secret, &w.CreatedAt); err != nil {
			return fail(err)
		}
		w.Events = splitEvents(events)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}

// DeleteWebhook deletes owner's webhook id and every delivery still owed
// to it, in one transaction: nothing more is sent to it (an attempt in
// flight finishes). Another owner's webhook is shortener.ErrWebhookNotFound,
// as a missing one is.
func (s *Store) DeleteWebhook(ctx context.Context, owner, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) error {
		return fmt.Errorf("delete webhook %s: %w: %w", id, shortener.ErrUnavailable, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// The webhook's row first, then its deliveries: a change's
	// transaction reads webhooks without locks and inserts deliveries,
	// so this order waits on no lock one of those holds.
	res, err := tx.ExecContext(ctx, "DELETE FROM webhooks WHERE id = ? AND owner = ?", id, owner)
	if err != nil {
		return fail(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete webhook %s: %w", id, shortener.ErrWebhookNotFound)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE webhook_id = ?", id); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// joinEvents is the SET column's form of events.
func joinEvents(events []shortener.EventType) string {
	s := make([]string, len(events))
	for i, e := range events {
		s[i] = string(e)
	}
	return strings.Join(s, ",")
}

// splitEvents reads the SET column, in shortener.EventTypes' order.
func splitEvents(col string) []shortener.EventType {
	out := []shortener.EventType{}
	for _, e := range shortener.EventTypes {
		for _, c := range strings.Split(col, ",") {
			if c == string(e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// subscribers returns the IDs of owner's webhooks subscribed to typ.
func subscribers(ctx context.Context, q dbtx, owner string, typ shortener.EventType) ([]string, error) {
	if owner == "" { // an anonymous link: nobody's webhook
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT id FROM webhooks WHERE owner = ? AND FIND_IN_SET(?, events)", owner, string(typ))
	if err != nil {
		return nil, fmt.Errorf("read webhooks: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read webhooks: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhooks: %w", err)
	}
	return ids, nil
}

// newEventID is a random event ID.
func newEventID() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // never fails (crypto/rand)
	return "evt_" + hex.EncodeToString(b[:])
}

// passwordSet stands for a password's hash in an event's link: the
// event says that the link has a password, as the API does, and no copy
// of the hash is made.
const passwordSet = "(set)"

// recordLinkEvents records an event of type typ at at (zero: the
// database's clock now) for each of links that has webhooks subscribed
// to it, in tx (the change's transaction). Each link's event has an ID
// of its own.
func recordLinkEvents(ctx context.Context, tx dbtx, typ shortener.EventType, at time.Time, links ...shortener.Link) error {
	hooks := map[string][]string{} // by owner
	var pending []deliveryRow
	for _, l := range links {
		ids, ok := hooks[l.Owner]
		if !ok {
			var err error
			if ids, err = subscribers(ctx, tx, l.Owner, typ); err != nil {
				return fmt.Errorf("record %s event: %w", typ, err)
			}
			hooks[l.Owner] = ids
		}
		if len(ids) == 0 {
			continue
		}
		if l.PasswordHash != "" {
			l.PasswordHash = passwordSet
		}
		data, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("record %s event: %w", typ, err)
		}
		id := newEventID()
		for _, hook := range ids {
			pending = append(pending, deliveryRow{hook, id, typ, at, data})
		}
	}
	return insertDeliveries(ctx, tx, pending)
}

// createsHooked reports whether any of owners has a webhook subscribed
// to creates, read before a create's transaction so that a create whose
// owner has none needs none. The answers are cached (subscribedCache):
// a webhook such a read does not see was not acknowledged before the
// create began, so the create owes it no event. One that is seen is read
// again in the transaction (recordLinkEvents).
func (s *Store) createsHooked(ctx context.Context, owners ...string) (bool, error) {
	for _, o := range owners {
		if o == "" { // an anonymous link: nobody's webhook
			continue
		}
		began := time.Now()
		yes, ok := s.subscribed.get(o, began)
		if !ok {
			ids, err := subscribers(ctx, s.db, o, shortener.EventLinkCreated)
			if err != nil {
				return false, err
			}
			yes = len(ids) > 0
			s.subscribed.put(o, yes, began)
		}
		if yes {
			return true, nil
		}
	}
	return false, nil
}

// createWithEvent is Create for a link whose owner has a webhook
// subscribed to creates: the link and its event in one transaction.
func (s *Store) createWithEvent(ctx context.Context, l shortener.Link) error {
	for try := 1; ; try++ {
		if err := s.createWithEventOnce(ctx, l); !s.again(ctx, err, try) {
			return err
		}
	}
}

// createWithEventOnce is one try of createWithEvent.
func (s *Store) createWithEventOnce(ctx context.Context, l shortener.Link) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create link %s: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := insertLink(ctx, tx, l); err != nil {
		return err
	}
	if err := recordLinkEvents(ctx, tx, shortener.EventLinkCreated, l.CreatedAt, l); err != nil {
		return fmt.Errorf("create link %s: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create link %s: commit: %w: %w", l.Code, shortener.ErrUnavailable, err)
	}
	return nil
}

// insertBatchWithEvents is insertBatch for links some of whose owners
// have webhooks subscribed to creates: the rows and the events of those
// it created (the same ID back) in one transaction, the events at the
// database's time (an import keeps the links' own created_at).
func (s *Store) insertBatchWithEvents(ctx context.Context, batch []shortener.Link) ([]shortener.Link, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	stored, err := insertRows(ctx, tx, batch)
	if err != nil {
		return nil, err
	}
	var made []shortener.Link
	for i, l := range batch {
		if stored[i].ID == l.ID {
			made = append(made, stored[i])
		}
	}
	if err := recordLinkEvents(ctx, tx, shortener.EventLinkCreated, time.Time{}, made...); err != nil {
		return nil, err
	}
	return stored, tx.Commit()
}

// owners are the distinct owners of links.
func owners(links []shortener.Link) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range links {
		if !seen[l.Owner] {
			seen[l.Owner] = true
			out = append(out, l.Owner)
		}
	}
	return out
}

// recordDeleteEvent records the delete of the link with code, at now, in
// tx, which has just marked it deleted.
func recordDeleteEvent(ctx context.Context, tx *sql.Tx, code string, now time.Time) error {
	l, err := scanLink(tx.QueryRowContext(ctx, "SELECT "+linkColumns+" FROM links WHERE code = ?", code))
	if err != nil {
		return fmt.Errorf("record %s event: %w", shortener.EventLinkDeleted, err)
	}
	return recordLinkEvents(ctx, tx, shortener.EventLinkDeleted, now, l)
}

// deliveryRow is one row of webhook_deliveries to insert.
type deliveryRow struct {
	webhook, event string
	typ            shortener.EventType
	at             time.Time
	data           []byte
}

// deliveriesPerInsert is how many rows one INSERT of insertDeliveries
// carries: 6 placeholders each, a few KiB of data at most.
const deliveriesPerInsert = 500

// insertDeliveries inserts rows, due at once. An event inserted for a
// webhook before (the same ID) is left as it is.
func insertDeliveries(ctx context.Context, tx dbtx, rows []deliveryRow) error {
	for start := 0; start < len(rows); start += deliveriesPerInsert {
		part := rows[start:min(start+deliveriesPerInsert, len(rows))]
		args := make([]any, 0, 5*len(part))
		for _, r := range part {
			args = append(args, r.webhook, r.event, string(r.typ), nullTime(r.at), r.data)
		}
		if _, err := insertValues(ctx, tx, "INSERT INTO webhook_deliveries (webhook_id, event_id, type, event_at, data, created_at, next_at) VALUES ",
			"(?, ?, ?, COALESCE(?, NOW(3)), ?, NOW(3), NOW(3))", " ON DUPLICATE KEY UPDATE id = id", args); err != nil {
			return fmt.Errorf("record webhook deliveries: %w", err)
		}
	}
	return nil
}

// clickedCounts are a click batch's counted clicks per link ID, with when
// the first and last of them happened: what insertClickedEvents tells.
type clickedCounts map[int64]shortener.LinkClicks

// add counts one click of link at at.
func (c clickedCounts) add(link int64, at time.Time) {
	lc, ok := c[link]
	if !ok || at.Before(lc.From) {
		lc.From = at
	}
	if !ok || at.After(lc.To) {
		lc.To = at
	}
	lc.Clicks++
	c[link] = lc
}

// clickedLinksPerQuery bounds the link IDs one query of
// insertClickedEvents names.
const clickedLinksPerQuery = 1000

// insertClickedEvents records a link.clicked event for each link of
// counts whose owner has a webhook subscribed to it, in tx: the click
// batch's own transaction, so an event is sent only for clicks counted,
// and exactly when they are. batch names the batch, uniquely for all
// time (its journal, segment and starting position): an event's ID is
// derived from it and the link, so that the same batch counted again
// (which shipping never does) could not send an event twice.
//
// It costs a batch one read of webhooks unless some webhook is
// subscribed to clicks; then one more query per 1,000 links and the
// inserts.
func insertClickedEvents(ctx context.Context, tx *sql.Tx, batch string, counts clickedCounts) error {
	if len(counts) == 0 {
		return nil
	}
	var one int
	switch err := tx.QueryRowContext(ctx, "SELECT 1 FROM webhooks WHERE FIND_IN_SET(?, events) LIMIT 1", string(shortener.EventLinkClicked)).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("record clicked events: %w", err)
	}
	ids := make([]any, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	var pending []deliveryRow
	for start := 0; start < len(ids); start += clickedLinksPerQuery {
		part := ids[start:min(start+clickedLinksPerQuery, len(ids))]
		args := append([]any{string(shortener.EventLinkClicked)}, part...)
		rows, err := tx.QueryContext(ctx, "SELECT l.id, l.code, w.id FROM links l JOIN webhooks w ON w.owner = l.owner "+
			"WHERE FIND_IN_SET(?, w.events) AND l.id IN (?"+strings.Repeat(",?", len(part)-1)+")", args...)
		if err != nil {
			return fmt.Errorf("record clicked events: %w", err)
		}
		for rows.Next() {
			var (
				link       int64
				code, hook string
			)
			if err := rows.Scan(&link, &code, &hook); err != nil {
				rows.Close()
				return fmt.Errorf("record clicked events: %w", err)
			}
			lc := counts[link]
			lc.Code = code
			data, err := json.Marshal(lc)
			if err != nil {
				rows.Close()
				return fmt.Errorf("record clicked events: %w", err)
			}
			pending = append(pending, deliveryRow{hook, clickedEventID(batch, link), shortener.EventLinkClicked, lc.To, data})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("record clicked events: %w", err)
		}
	}
	return insertDeliveries(ctx, tx, pending)
}

// clickedEventID is the ID of the clicked event of link counted by batch.
func clickedEventID(batch string, link int64) string {
	sum := sha256.Sum256([]byte(string(shortener.EventLinkClicked) + "\x00" + batch + "\x00" + strconv.FormatInt(link, 10)))
	return "evt_" + hex.EncodeToString(sum[:16])
}
