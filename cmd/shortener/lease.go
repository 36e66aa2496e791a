package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/idgen"
	"shortener/store"
)

// maxClockWait is how far behind the last issued ID the clock may be at
// start-up before the instance refuses to start rather than wait.
const maxClockWait = 15 * time.Second

// nodeLease is this instance's claim on its Snowflake node ID in MySQL.
// Two live instances with one node ID would issue the same codes; the
// lease makes the second refuse to start. The lease also carries the
// node's reserved time, so that after a restart no ID at or below the last
// one issued can be issued again, whatever the clock says.
type nodeLease struct {
	st     *store.Store
	nodeID int64 // set by claim when auto
	auto   bool  // claim any free node ID rather than nodeID
	owner  string
	ttl    time.Duration
	now    func() time.Time // injectable, for tests of a clock that is behind
	log    *slog.Logger

	renewals *prometheus.CounterVec // by result: ok, error, lost
	node     prometheus.Gauge       // the node ID held, -1 before the claim
}

func newNodeLease(st *store.Store, nodeID int64, auto bool, instance string, ttl time.Duration, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *nodeLease {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:]) //nolint:errcheck // never fails
	renewals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shortener_node_lease_renewals_total",
		Help: "Renewals of this instance's node ID lease in MySQL, by result: ok, error (MySQL unreachable; the lease runs out after its TTL), lost (another instance took it: this one stops).",
	}, []string{"result"})
	for _, r := range []string{"ok", "error", "lost"} {
		renewals.WithLabelValues(r)
	}
	node := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shortener_node_id",
		Help: "The Snowflake node ID this instance holds (-1 before it has claimed one).",
	})
	node.Set(-1)
	reg.MustRegister(renewals, node)
	return &nodeLease{
		st: st, nodeID: nodeID, auto: auto, ttl: ttl, now: now, log: log, renewals: renewals, node: node,
		owner: fmt.Sprintf("%s@%s pid %d %s", instance, host, os.Getpid(), hex.EncodeToString(b[:])),
	}
}

// claim takes the node ID, or with auto any free one (see
// store.ClaimFreeNode), then waits like a fixed ID until the clock has
// passed the node's reserved time. A lease left by a crashed instance expires
// within one TTL, so claim waits that long; a lease still being renewed
// after it belongs to a live instance, and claim refuses. Then claim waits
// until the clock has passed the node's reserved time.
func (l *nodeLease) claim(ctx context.Context) error {
	deadline := time.Now().Add(l.ttl + l.ttl/2)
	var reserved time.Time
	for l.auto {
		id, r, err := l.st.ClaimFreeNode(ctx, 0, idgen.MaxNode, l.owner, l.ttl)
		if err == nil {
			l.nodeID, reserved = id, r
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("claim a free node ID: %w", err)
		}
		l.log.Warn("no free node ID yet; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	for !l.auto {
		r, err := l.st.ClaimNode(ctx, l.nodeID, l.owner, l.ttl)
		if err == nil {
			reserved = r
			break
		}
		var held *store.NodeHeldError
		if time.Now().After(deadline) {
			if errors.As(err, &held) {
				return fmt.Errorf("node ID %d is in use by %s (its lease is being renewed): another instance is running with this node ID; give every instance its own SHORTENER_NODE_ID", l.nodeID, held.Owner)
			}
			return fmt.Errorf("claim node ID %d: %w", l.nodeID, err)
		}
		if errors.As(err, &held) {
			l.log.Warn("node ID held; waiting for its lease to expire", "node_id", l.nodeID, "holder", held.Owner, "until", held.Until)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	l.log.Info("node ID claimed", "node_id", l.nodeID, "auto", l.auto, "owner", l.owner, "reserved", reserved)
	l.node.Set(float64(l.nodeID))

	behind := reserved.Sub(l.now())
	if behind < 0 {
		return nil
	}
	if behind > maxClockWait {
		l.release(ctx, reserved)
		return fmt.Errorf("the clock is %s behind the last ID issued with node ID %d; refusing to start, as the codes could repeat", behind.Round(time.Millisecond), l.nodeID)
	}
	l.log.Warn("the clock is behind the last issued ID; waiting until it passes", "behind", behind)
	for !l.now().After(reserved) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(behind, 50*time.Millisecond)):
		}
	}
	return nil
}

// keep renews the lease every third of its TTL until ctx ends, reserving
// IDs up to two renewals ahead. It returns an error only when the lease
// was lost to another instance: this one must then stop issuing codes.
func (l *nodeLease) keep(ctx context.Context, ids *idgen.Generator) error {
	every := l.ttl / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := l.st.RenewNode(ctx, l.nodeID, l.owner, l.ttl, ids.Horizon(l.now()).Add(2*every))
		switch {
		case err == nil:
			l.renewals.WithLabelValues("ok").Inc()
		case errors.Is(err, store.ErrNodeLost):
			l.renewals.WithLabelValues("lost").Inc()
			return fmt.Errorf("node ID %d: lease lost to another instance; stopping", l.nodeID)
		default:
			l.renewals.WithLabelValues("error").Inc()
			l.log.Warn("renew node ID lease", "node_id", l.nodeID, "err", err)
		}
	}
}

// release ends the lease, recording the last issued time.
func (l *nodeLease) release(ctx context.Context, horizon time.Time) {
	if err := l.st.ReleaseNode(context.WithoutCancel(ctx), l.nodeID, l.owner, horizon); err != nil {
		l.log.Warn("release node ID lease", "node_id", l.nodeID, "err", err)
	}
}
