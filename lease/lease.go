// Package lease holds this instance's Snowflake node ID: a lease in the
// database that keeps two live instances from issuing codes with one
// node ID, and that carries the node's reserved time, so that after a
// restart no ID at or below the last one issued is issued again,
// whatever the clock says (docs/design.md, "Snowflake codes").
//
// A Lease claims its node ID once (Claim), renews it until its context
// ends (Keep) and releases it with the time of the last ID issued
// (Release). Its store is an interface (Store), so its state machine is
// tested with a fake as well as against MariaDB.
package lease

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

	"shortener"
	"shortener/store"
)

// Store keeps the leases: store.Store. Times are the database's clock,
// so instances with skewed clocks agree on when a lease expires.
type Store interface {
	// ClaimNode gives nodeID to owner for ttl unless another owner's
	// lease is live (*store.NodeHeldError); it returns the node's
	// reserved time.
	ClaimNode(ctx context.Context, nodeID int64, owner string, ttl time.Duration) (reserved time.Time, err error)
	// ClaimFreeNode claims any node ID in [lo, hi] no live lease holds.
	ClaimFreeNode(ctx context.Context, lo, hi int64, owner string, ttl time.Duration) (nodeID int64, reserved time.Time, err error)
	// RenewNode extends owner's lease and raises the reserved time;
	// store.ErrNodeLost when the lease is another's.
	RenewNode(ctx context.Context, nodeID int64, owner string, ttl time.Duration, reserved time.Time) error
	// ReleaseNode ends owner's lease with the reserved time.
	ReleaseNode(ctx context.Context, nodeID int64, owner string, reserved time.Time) error
}

var _ Store = (*store.Store)(nil)

// Config is what a Lease claims and for how long.
type Config struct {
	NodeID   int64  // the node ID to claim, unless Auto
	Auto     bool   // claim any free node ID in [0, MaxNode] instead
	MaxNode  int64  // the highest node ID (idgen.MaxNode)
	Instance string // names the owner in the lease, with host, pid and a nonce
	TTL      time.Duration
	// MaxClockWait is how far behind the node's reserved time the clock
	// may be at start-up before Claim refuses rather than waits.
	MaxClockWait time.Duration
	// Retry is the wait between claims while the node ID is held.
	Retry time.Duration
}

// Validate reports every setting New cannot work with, all at once,
// each a *shortener.SettingError naming its field.
func (c Config) Validate() error {
	var errs []error
	if c.TTL <= 0 {
		errs = append(errs, shortener.Invalid("TTL", "must be positive, got %s", c.TTL))
	}
	if !c.Auto && (c.NodeID < 0 || c.NodeID > c.MaxNode) {
		errs = append(errs, shortener.Invalid("NodeID", "is out of range 0-%d, got %d", c.MaxNode, c.NodeID))
	}
	return errors.Join(errs...)
}

// Lease is this instance's claim on its node ID.
type Lease struct {
	st     Store
	cfg    Config
	nodeID int64 // set by Claim when Auto
	owner  string
	now    func() time.Time // the clock IDs are issued by
	log    *slog.Logger

	renewals *prometheus.CounterVec // by result: ok, error, lost
	node     prometheus.Gauge       // the node ID held, -1 before the claim
}

// New returns a Lease on st, not yet claimed. now is the clock the
// instance issues IDs by (tests set it behind the real one).
func New(cfg Config, st Store, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) (*Lease, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new lease: %w", err)
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 200 * time.Millisecond
	}
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
	if err := errors.Join(reg.Register(renewals), reg.Register(node)); err != nil {
		return nil, fmt.Errorf("new lease: %w", err)
	}
	return &Lease{
		st: st, cfg: cfg, nodeID: cfg.NodeID, now: now, log: log, renewals: renewals, node: node,
		owner: fmt.Sprintf("%s@%s pid %d %s", cfg.Instance, host, os.Getpid(), hex.EncodeToString(b[:])),
	}, nil
}

// NodeID is the node ID held (with Auto, known once Claim returns).
func (l *Lease) NodeID() int64 { return l.nodeID }

// Owner names this lease's holder in the database.
func (l *Lease) Owner() string { return l.owner }

// Claim takes the node ID, or with Auto any free one, then waits until
// the clock has passed the node's reserved time. A lease left by a
// crashed instance expires within one TTL, so Claim retries that long
// and a half; a lease still being renewed after that belongs to a live
// instance, and Claim refuses. A clock more than MaxClockWait behind the
// reserved time is refused too (the lease is released).
func (l *Lease) Claim(ctx context.Context) error {
	deadline := time.Now().Add(l.cfg.TTL + l.cfg.TTL/2)
	var reserved time.Time
	for {
		var err error
		if l.cfg.Auto {
			l.nodeID, reserved, err = l.st.ClaimFreeNode(ctx, 0, l.cfg.MaxNode, l.owner, l.cfg.TTL)
		} else {
			reserved, err = l.st.ClaimNode(ctx, l.nodeID, l.owner, l.cfg.TTL)
		}
		if err == nil {
			break
		}
		var held *store.NodeHeldError
		switch {
		case time.Now().After(deadline) && l.cfg.Auto:
			return fmt.Errorf("claim a free node ID: %w", err)
		case time.Now().After(deadline) && errors.As(err, &held):
			return fmt.Errorf("node ID %d is in use by %s (its lease is being renewed): another instance is running with this node ID; give every instance its own SHORTENER_NODE_ID", l.nodeID, held.Owner)
		case time.Now().After(deadline):
			return fmt.Errorf("claim node ID %d: %w", l.nodeID, err)
		case l.cfg.Auto:
			l.log.Warn("no free node ID yet; retrying", "err", err)
		case errors.As(err, &held):
			l.log.Warn("node ID held; waiting for its lease to expire", "node_id", l.nodeID, "holder", held.Owner, "until", held.Until)
		default:
			l.log.Warn("claim node ID; retrying", "node_id", l.nodeID, "err", err)
		}
		if err := sleep(ctx, l.cfg.Retry); err != nil {
			return err
		}
	}
	l.log.Info("node ID claimed", "node_id", l.nodeID, "auto", l.cfg.Auto, "owner", l.owner, "reserved", reserved)
	l.node.Set(float64(l.nodeID))

	behind := reserved.Sub(l.now())
	if behind < 0 {
		return nil
	}
	if behind > l.cfg.MaxClockWait {
		l.Release(ctx, reserved)
		return fmt.Errorf("the clock is %s behind the last ID issued with node ID %d; refusing to start, as the codes could repeat", behind.Round(time.Millisecond), l.nodeID)
	}
	l.log.Warn("the clock is behind the last issued ID; waiting until it passes", "behind", behind)
	for !l.now().After(reserved) {
		if err := sleep(ctx, min(behind, 50*time.Millisecond)); err != nil {
			return err
		}
	}
	return nil
}

// Horizon says up to when IDs may have been issued by a time: the
// generator's idgen.Generator.Horizon.
type Horizon func(now time.Time) time.Time

// Keep renews the lease every third of its TTL until ctx ends, reserving
// IDs up to two renewals ahead of horizon. It returns nil when ctx ends,
// and an error only when the lease was lost to another instance: this
// one must then stop issuing codes.
func (l *Lease) Keep(ctx context.Context, horizon Horizon) error {
	every := l.cfg.TTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := l.st.RenewNode(ctx, l.nodeID, l.owner, l.cfg.TTL, horizon(l.now()).Add(2*every))
		switch {
		case err == nil:
			l.renewals.WithLabelValues("ok").Inc()
		case errors.Is(err, store.ErrNodeLost):
			l.renewals.WithLabelValues("lost").Inc()
			return fmt.Errorf("node ID %d: lease lost to another instance; stopping", l.nodeID)
		case ctx.Err() != nil:
			return nil
		default:
			l.renewals.WithLabelValues("error").Inc()
			l.log.Warn("renew node ID lease", "node_id", l.nodeID, "err", err)
		}
	}
}

// Release ends the lease, recording the time of the last ID issued, even
// when ctx has ended (it runs at shutdown).
func (l *Lease) Release(ctx context.Context, last time.Time) {
	if err := l.st.ReleaseNode(context.WithoutCancel(ctx), l.nodeID, l.owner, last); err != nil {
		l.log.Warn("release node ID lease", "node_id", l.nodeID, "err", err)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
