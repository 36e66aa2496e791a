package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"shortener"
	"time"
)

// ErrNodeLost means the lease on a node ID is no longer this owner's.
var ErrNodeLost = errors.New("store: node ID lease lost")

// NodeHeldError says which live instance holds a node ID.
type NodeHeldError struct {
	NodeID int64
	Owner  string
	Until  time.Time
}

func (e *NodeHeldError) Error() string {
	return fmt.Sprintf("store: node ID %d is held by %s until %s", e.NodeID, e.Owner, e.Until.Format(time.RFC3339Nano))
}

// Lease times are the database's clock (NOW(3)), so instances with skewed
// clocks still agree on when a lease expires.

// ClaimNode gives nodeID to owner for ttl unless another owner's lease is
// still live (*NodeHeldError). It returns the node's reserved time: no ID
// at or below it may be issued.
func (s *Store) ClaimNode(ctx context.Context, nodeID int64, owner string, ttl time.Duration) (reserved time.Time, err error) {
	// Two claims through different Galera nodes both read the lease as
	// free; certification lets one commit and aborts the other, whose
	// next try reads the winner's lease and is refused.
	for try := 1; ; try++ {
		if reserved, err = s.claimNode(ctx, nodeID, owner, ttl); !s.again(ctx, err, try) {
			return reserved, err
		}
	}
}

// claimNode is one try of ClaimNode.
func (s *Store) claimNode(ctx context.Context, nodeID int64, owner string, ttl time.Duration) (reserved time.Time, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("claim node %d: %w: %w", nodeID, shortener.ErrUnavailable, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var (
		holder       string
		until        time.Time
		live         bool
		reservedMs   int64
		microseconds = ttl.Microseconds()
	)
	err = tx.QueryRowContext(ctx,
		"SELECT owner, expires_at, expires_at > NOW(3), reserved_ms FROM node_leases WHERE node_id = ? FOR UPDATE", nodeID).
		Scan(&holder, &until, &live, &reservedMs)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx,
			"INSERT INTO node_leases (node_id, owner, expires_at) VALUES (?, ?, NOW(3) + INTERVAL ? MICROSECOND)",
			nodeID, owner, microseconds)
	case err != nil:
	case live && holder != owner:
		return time.Time{}, &NodeHeldError{NodeID: nodeID, Owner: holder, Until: until}
	default:
		_, err = tx.ExecContext(ctx,
			"UPDATE node_leases SET owner = ?, expires_at = NOW(3) + INTERVAL ? MICROSECOND WHERE node_id = ?",
			owner, microseconds, nodeID)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("claim node %d: %w: %w", nodeID, shortener.ErrUnavailable, err)
	}
	if err := tx.Commit(); err != nil {
		return time.Time{}, fmt.Errorf("claim node %d: commit: %w: %w", nodeID, shortener.ErrUnavailable, err)
	}
	return time.UnixMilli(reservedMs), nil
}

// RenewNode extends owner's lease on nodeID by ttl and raises the node's
// reserved time to at least reserved. ErrNodeLost means another instance
// took the node ID after this lease expired.
func (s *Store) RenewNode(ctx context.Context, nodeID int64, owner string, ttl time.Duration, reserved time.Time) error {
	return s.updateLease(ctx, "renew", nodeID, owner, ttl, reserved)
}

// ReleaseNode ends owner's lease now and sets the node's reserved time to
// horizon, the last issued ID's time: renewals reserve ahead, but an
// instance that stops cleanly knows exactly where it stopped, so the next
// one with this node ID may start at once.
func (s *Store) ReleaseNode(ctx context.Context, nodeID int64, owner string, horizon time.Time) error {
	return s.updateLease(ctx, "release", nodeID, owner, 0, horizon)
}

func (s *Store) updateLease(ctx context.Context, op string, nodeID int64, owner string, ttl time.Duration, reserved time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q := "UPDATE node_leases SET expires_at = NOW(3) + INTERVAL ? MICROSECOND, reserved_ms = GREATEST(reserved_ms, ?) WHERE node_id = ? AND owner = ?"
	if op == "release" {
		q = "UPDATE node_leases SET expires_at = NOW(3) + INTERVAL ? MICROSECOND, reserved_ms = ? WHERE node_id = ? AND owner = ?"
	}
	res, err := s.db.ExecContext(ctx, q, ttl.Microseconds(), reserved.UnixMilli(), nodeID, owner)
	if err != nil {
		return fmt.Errorf("%s node %d: %w: %w", op, nodeID, shortener.ErrUnavailable, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%s node %d: %w: %w", op, nodeID, shortener.ErrUnavailable, err)
	} else if n == 0 {
		return fmt.Errorf("%s node %d: %w", op, nodeID, ErrNodeLost)
	}
	return nil
}

// ErrNoFreeNode means every node ID of a range is leased by a live
// instance.
var ErrNoFreeNode = errors.New("store: no free node ID")

// ClaimFreeNode gives owner, for ttl, a node ID in [lo, hi] that no live
// instance holds, and returns it with the node's reserved time (no ID at
// or below it may be issued). Never-used IDs go first, lowest first, then
// expired leases, the one reserved longest ago first, so a restart seldom
// waits for its clock.
//
// Each claim is one statement that succeeds only while the node ID is
// still free (an INSERT the primary key refuses once another instance
// took the ID, an UPDATE guarded by the lease's expiry), so two instances
// starting together never get the same ID: the loser sees the ID taken
// and tries the next one.
func (s *Store) ClaimFreeNode(ctx context.Context, lo, hi int64, owner string, ttl time.Duration) (nodeID int64, reserved time.Time, err error) {
	if lo < 0 || hi < lo {
		return 0, time.Time{}, fmt.Errorf("claim free node: bad range %d-%d", lo, hi)
	}
	for attempt := 0; attempt < 32; attempt++ {
		id, fresh, err := s.freeNode(ctx, lo, hi)
		if err != nil {
			return 0, time.Time{}, err
		}
		ok, err := s.takeNode(ctx, id, fresh, owner, ttl)
		if err != nil {
			return 0, time.Time{}, err
		}
		if !ok {
			continue // another instance took it first
		}
		r, err := s.nodeReserved(ctx, id, owner)
		if err != nil {
			return 0, time.Time{}, err
		}
		return id, r, nil
	}
	return 0, time.Time{}, fmt.Errorf("claim free node: %d-%d: lost every race: %w", lo, hi, shortener.ErrUnavailable)
}

// freeNode picks a candidate: the lowest node ID of the range without a
// lease row (fresh), else the expired lease reserved longest ago.
func (s *Store) freeNode(ctx context.Context, lo, hi int64) (id int64, fresh bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx,
		"SELECT node_id, expires_at <= NOW(3), reserved_ms FROM node_leases WHERE node_id BETWEEN ? AND ? ORDER BY node_id", lo, hi)
	if err != nil {
		return 0, false, fmt.Errorf("claim free node: %w: %w", shortener.ErrUnavailable, err)
	}
	defer rows.Close()
	var (
		next              = lo // lowest ID not seen yet
		expired     int64 = -1
		expiredAtMs int64
		gap         int64 = -1
	)
	for rows.Next() {
		var (
			n      int64
			free   bool
			rsvdMs int64
		)
		if err := rows.Scan(&n, &free, &rsvdMs); err != nil {
			return 0, false, fmt.Errorf("claim free node: %w: %w", shortener.ErrUnavailable, err)
		}
		if gap < 0 && n > next {
			gap = next
		}
		next = n + 1
		if free && (expired < 0 || rsvdMs < expiredAtMs) {
			expired, expiredAtMs = n, rsvdMs
		}
	}
	if err := rows.Err(); err != nil {
		return 0, false, fmt.Errorf("claim free node: %w: %w", shortener.ErrUnavailable, err)
	}
	switch {
	case gap >= 0:
		return gap, true, nil
	case next <= hi:
		return next, true, nil
	case expired >= 0:
		return expired, false, nil
	}
	return 0, false, fmt.Errorf("claim free node: all of %d-%d are leased by live instances: %w", lo, hi, ErrNoFreeNode)
}

// takeNode leases id to owner if it is still free, reporting whether it
// was.
func (s *Store) takeNode(ctx context.Context, id int64, fresh bool, owner string, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q := "UPDATE node_leases SET owner = ?, expires_at = NOW(3) + INTERVAL ? MICROSECOND WHERE node_id = ? AND expires_at <= NOW(3)"
	args := []any{owner, ttl.Microseconds(), id}
	if fresh {
		q = "INSERT IGNORE INTO node_leases (owner, expires_at, node_id) VALUES (?, NOW(3) + INTERVAL ? MICROSECOND, ?)"
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("claim node %d: %w: %w", id, shortener.ErrUnavailable, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim node %d: %w: %w", id, shortener.ErrUnavailable, err)
	}
	return n == 1, nil
}

// nodeReserved reads the reserved time of a node ID owner holds.
func (s *Store) nodeReserved(ctx context.Context, id int64, owner string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var ms int64
	err := s.db.QueryRowContext(ctx, "SELECT reserved_ms FROM node_leases WHERE node_id = ? AND owner = ?", id, owner).Scan(&ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, fmt.Errorf("claim node %d: %w", id, ErrNodeLost)
	case err != nil:
		return time.Time{}, fmt.Errorf("claim node %d: %w: %w", id, shortener.ErrUnavailable, err)
	}
	return time.UnixMilli(ms), nil
}
