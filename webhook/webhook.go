// Package webhook sends the events of API keys' links to their webhooks:
// each instance runs a Sender, which claims due deliveries from MySQL's
// outbox (recorded by the store in the transaction of each change),
// POSTs them, signed (sign.go), and settles each: delivered on a 2xx,
// else due again after a backoff that grows (backoff.go), until the
// event is MaxAge old, when it is given up (counted and logged).
//
// Its rules:
//   - Nothing is lost to a restart or a crash: a delivery stays in MySQL
//     until it is settled, and a claim of a sender that died runs out.
//   - No two senders attempt one delivery at once: a claim holds it for
//     longer than an attempt may take. A delivery is sent again only
//     after an attempt that failed, timed out or was never settled (its
//     sender stopped or died), so a receiver may see an event twice, and
//     tells the copies by their ID (webhook-id, the body's id).
//   - Receivers are at public addresses only, checked on every
//     connection (dial.go), unless Config.AllowPrivate.
//   - Attempts in flight are bounded (Workers), and each by Timeout.
//   - Events are not ordered: retries and concurrency reorder them;
//     a receiver orders by their timestamp.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
)

// Store keeps the deliveries (store.Store). Its times are the database's
// clock, the same for every instance.
type Store interface {
	// ClaimDeliveries claims up to n due deliveries for hold, counting
	// their attempt: until hold has passed, or the claim is settled, no
	// other claim takes them.
	ClaimDeliveries(ctx context.Context, n int, hold time.Duration) ([]shortener.Delivery, error)
	// FinishDelivery removes d (delivered or given up) if its claim
	// still holds it.
	FinishDelivery(ctx context.Context, d shortener.Delivery) error
	// RetryDelivery makes d due again after wait if its claim still
	// holds it.
	RetryDelivery(ctx context.Context, d shortener.Delivery, wait time.Duration, reason string) error
	// PendingDeliveries counts the deliveries owed.
	PendingDeliveries(ctx context.Context) (int64, error)
}

// Config tunes a Sender; cmd/shortener holds the defaults.
type Config struct {
	Workers int           // attempts in flight at once, per instance
	Timeout time.Duration // of one attempt: connect, send, answer
	Poll    time.Duration // how often an idle sender looks for due deliveries
	// RetryMin is the wait after a first failed attempt, doubled after
	// each further one up to RetryMax (each drawn from its upper half).
	RetryMin, RetryMax time.Duration
	// MaxAge is how long after its event a delivery is tried: the first
	// failure past it gives the delivery up.
	MaxAge time.Duration
	// AllowPrivate lets webhooks go to loopback, private and link-local
	// receivers (Targets.AllowPrivate).
	AllowPrivate bool
}

// Validate reports every setting New cannot work with, all at once,
// each a *shortener.SettingError naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) { errs = append(errs, shortener.Invalid(field, format, a...)) }
	if c.Workers < 1 {
		bad("Workers", "must be at least 1, got %d", c.Workers)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"Timeout", c.Timeout}, {"Poll", c.Poll}, {"RetryMin", c.RetryMin}, {"MaxAge", c.MaxAge}} {
		if d.d <= 0 {
			bad(d.name, "must be positive, got %s", d.d)
		}
	}
	if c.RetryMax < c.RetryMin {
		bad("RetryMax", "must be at least the minimum retry wait (%s), got %s", c.RetryMin, c.RetryMax)
	}
	return errors.Join(errs...)
}

// holdMargin is what a claim holds a delivery beyond its attempt's
// timeout: time to settle it in MySQL (a query's deadline) and for the
// process to be scheduled. A sender frozen longer than that may see its
// delivery sent by another; only then are two attempts in flight at once.
const holdMargin = 5 * time.Second

// pendingEvery is how often the pending gauge is read from MySQL: a
// count of the whole table, too dear for every poll.
const pendingEvery = 10 * time.Second

// Sender delivers webhooks.
type Sender struct {
	cfg    Config
	st     Store
	view   LinkView
	client *http.Client
	hold   time.Duration
	rnd    func(n int64) int64
	now    func() time.Time
	log    *slog.Logger
	m      *metrics
}

// New returns a Sender over st, which renders links with view.
func New(cfg Config, st Store, view LinkView, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new webhook sender: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new webhook sender: %w", err)
	}
	return &Sender{
		cfg: cfg, st: st, view: view, now: now, log: log, m: m,
		client: Targets{AllowPrivate: cfg.AllowPrivate}.client(cfg.Timeout, cfg.Workers),
		hold:   cfg.Timeout + holdMargin,
		rnd:    rand.Int64N,
	}, nil
}

// Run sends deliveries until ctx ends. Attempts in flight then are
// cancelled and their deliveries made due at once, for this or another
// instance to send again: a receiver may get them twice, never none.
func (s *Sender) Run(ctx context.Context) error {
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, s.cfg.Workers) // one per attempt in flight
		freed = make(chan struct{}, 1)             // an attempt ended
	)
	defer wg.Wait()
	s.countPending(ctx)
	lastCount := time.Now()
	failing := false // claims fail (MySQL unreachable): said once, not every poll
	for {
		// Stopping: claim nothing more. An attempt that ended as the
		// run was cancelled may have made its delivery due again, and
		// select picks among ready cases at random, so the freed case
		// can win over ctx.Done.
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(lastCount) >= pendingEvery {
			s.countPending(ctx)
			lastCount = time.Now()
		}
		free := cap(slots) - len(slots)
		var ds []shortener.Delivery
		if free > 0 {
			var err error
			ds, err = s.st.ClaimDeliveries(ctx, free, s.hold)
			switch {
			case err != nil && !failing && ctx.Err() == nil:
				s.log.Warn("webhook deliveries not claimed; trying again every poll", "err", err)
				failing = true
			case err == nil && failing:
				s.log.Info("webhook deliveries claimed again")
				failing = false
			}
		}
		for _, d := range ds {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.attempt(ctx, d)
				<-slots
				select {
				case freed <- struct{}{}:
				default:
				}
			}()
		}
		// Claimed as many as there were slots: there may be more due, as
		// soon as one ends. Else nothing more is due before the next poll.
		wait := s.cfg.Poll
		if len(ds) > 0 && len(ds) == free {
			wait = time.Hour // until an attempt ends
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-freed:
		case <-t.C:
		}
		t.Stop()
	}
}

// countPending sets the pending gauge from MySQL.
func (s *Sender) countPending(ctx context.Context) {
	n, err := s.st.PendingDeliveries(ctx)
	if err != nil {
		s.log.Debug("webhook deliveries not counted", "err", err)
		return
	}
	s.m.pending.Set(float64(n))
}

// settleTimeout bounds the settle of an attempt, which runs even once
// the sender is stopping (its context is not the run's).
const settleTimeout = 5 * time.Second

// attempt sends d once and settles it.
func (s *Sender) attempt(ctx context.Context, d shortener.Delivery) {
	start := time.Now()
	err := s.send(ctx, d)
	took := time.Since(start)
	s.m.attempt.Observe(took.Seconds())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	log := s.log.With("event", d.Event.ID, "type", d.Event.Type, "webhook", d.Webhook, "attempt", d.Attempts)
	var serr error
	switch {
	case err == nil:
		s.m.delivered.Inc()
		s.m.delay.Observe((d.Age + took).Seconds())
		serr = s.st.FinishDelivery(sctx, d)
	case ctx.Err() != nil: // stopping: someone sends it again, now
		serr = s.st.RetryDelivery(sctx, d, 0, "sender stopped")
	default:
		reason := failure(err)
		s.m.failed.WithLabelValues(reason).Inc()
		wait := Backoff(d.Attempts, s.cfg.RetryMin, s.cfg.RetryMax, s.rnd)
		if d.Age+took+wait > s.cfg.MaxAge {
			s.m.givenUp.Inc()
			log.Warn("webhook delivery given up", "age", d.Age+took, "err", err)
			serr = s.st.FinishDelivery(sctx, d)
			break
		}
		log.Info("webhook attempt failed; retrying", "reason", reason, "retry_in", wait, "err", err)
		serr = s.st.RetryDelivery(sctx, d, wait, err.Error())
	}
	if serr != nil {
		// The claim runs out and the delivery is due again: sent twice
		// if this attempt succeeded, which its ID tells the receiver.
		log.Warn("webhook delivery not settled; it is retried when its claim runs out", "err", serr)
	}
}

// statusError is an answer that is not 2xx.
type statusError int

func (e statusError) Error() string { return "receiver answered " + strconv.Itoa(int(e)) }

// failure is the reason label of err, an attempt's failure.
func failure(err error) string {
	var se statusError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return reasonStatus
	case errors.Is(err, errBlocked):
		return reasonRefused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return reasonTimeout
	}
	return reasonError
}
