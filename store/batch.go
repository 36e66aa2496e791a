package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"shortener"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// insertBatch is how many links one statement of InsertLinks carries:
// 500 rows of 11 columns stay far below MySQL's 65,535 placeholders and,
// at most 2 KiB of URL each, below max_allowed_packet's default 16 MiB.
const insertBatch = 500

// InsertLinks inserts links whose code and ID are both free, many per
// statement, and returns, for each of links in order, the link its code
// holds once the statement ran: itself if it was inserted (same ID),
// another link if the code was taken before (by anyone, deleted links
// included: a code is never reused), or the zero Link if neither (its ID
// was taken, which a fresh Snowflake ID never is). Rows that repeat a
// code within links meet the same fate as a code taken before. Each
// statement commits on its own, under the query timeout; links is what
// the caller holds in memory, so a caller streaming a large import gives
// it a batch at a time.
//
// It is an import's insert: no idempotency key, no cache warming (the
// caller decides).
func (s *Store) InsertLinks(ctx context.Context, links []shortener.Link) ([]shortener.Link, error) {
	out := make([]shortener.Link, 0, len(links))
	for start := 0; start < len(links); start += insertBatch {
		batch := links[start:min(start+insertBatch, len(links))]
		stored, err := s.insertBatch(ctx, batch)
		if err != nil {
			return out, fmt.Errorf("insert links %d-%d: %w: %w", start, start+len(batch)-1, shortener.ErrUnavailable, err)
		}
		out = append(out, stored...)
	}
	return out, nil
}

func (s *Store) insertBatch(ctx context.Context, batch []shortener.Link) ([]shortener.Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	switch hooked, err := s.createsHooked(ctx, owners(batch)...); {
	case err != nil:
		return nil, err
	case hooked: // the rows with their events, in one transaction (webhooks.go)
		return s.insertBatchWithEvents(ctx, batch)
	}
	return insertRows(ctx, s.db, batch)
}

// insertRows is insertBatch's statements, on a pool or in a transaction.
func insertRows(ctx context.Context, db dbtx, batch []shortener.Link) ([]shortener.Link, error) {
	args := make([]any, 0, 11*len(batch))
	codes := make([]any, len(batch))
	for i, l := range batch {
		args = append(args, l.ID, l.Code, l.URL, l.Redirect, l.CreatedAt.UTC(), nullTime(l.ExpiresAt), nullString(l.Owner),
			l.Disabled, nullString(joinTags(l.Tags)), nullInt(l.MaxVisits), nullString(l.PasswordHash))
		codes[i] = l.Code
	}
	// A taken code or ID leaves its row as it is (id = id changes
	// nothing); unlike INSERT IGNORE, every other error is still one.
	if _, err := insertValues(ctx, db, "INSERT INTO links (id, code, url, redirect, created_at, expires_at, owner, disabled, tags, max_visits, password_hash) VALUES ",
		"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", " ON DUPLICATE KEY UPDATE id = id", args); err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SELECT "+linkColumns+" FROM links WHERE code IN (?"+strings.Repeat(", ?", len(codes)-1)+")", codes...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byCode := make(map[string]shortener.Link, len(batch))
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, err
		}
		byCode[l.Code] = l
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]shortener.Link, len(batch))
	for i, l := range batch {
		out[i] = byCode[l.Code]
	}
	return out, nil
}

// ClaimBatchKey records that an Idempotency-Key covers a batch of
// creates, each of which the caller then makes under a key of its own.
// The first claim of a key (or of one expired) returns replay false; a
// claim of a live key with the same request hash returns replay true (the
// batch is a retry: its creates replay theirs), and with another hash
// shortener.ErrKeyReused. The record names no link (code ”): a batch is
// many.
func (s *Store) ClaimBatchKey(ctx context.Context, idem shortener.Idempotency, now time.Time) (replay bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("claim batch key: %w: %w", shortener.ErrUnavailable, err)
	}
	now = now.UTC()
	_, err = s.db.ExecContext(ctx,
		"INSERT INTO idempotency_keys (scope, idem_key, request_hash, code, created_at, expires_at) VALUES (?, ?, ?, '', ?, ?)",
		idem.Scope, idem.Key, idem.RequestHash, now, idem.ExpiresAt.UTC())
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return false, nil
	case !errors.As(err, &me) || me.Number != 1062: // not "the key is taken"
		return fail(err)
	}
	// Expired: the key is free again; claim it in place.
	res, err := s.db.ExecContext(ctx,
		"UPDATE idempotency_keys SET request_hash = ?, code = '', created_at = ?, expires_at = ? WHERE scope = ? AND idem_key = ? AND expires_at <= ?",
		idem.RequestHash, now, idem.ExpiresAt.UTC(), idem.Scope, idem.Key, now)
	if err != nil {
		return fail(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return false, nil
	}
	var hash string
	switch err := s.db.QueryRowContext(ctx, "SELECT request_hash FROM idempotency_keys WHERE scope = ? AND idem_key = ?",
		idem.Scope, idem.Key).Scan(&hash); {
	case errors.Is(err, sql.ErrNoRows): // purged in between: rare; the client's retry claims it afresh
		return fail(errors.New("key vanished"))
	case err != nil:
		return fail(err)
	case hash != idem.RequestHash:
		return false, fmt.Errorf("claim batch key: %w", shortener.ErrKeyReused)
	}
	return true, nil
}
