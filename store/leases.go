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
