package clicks

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FoldSink folds pending clicks (store.Store.FoldClicks): the clicks of
// rarely clicked links wait, one row each, until their hour has ended,
// and are then added to their links' count rows all at once.
type FoldSink interface {
	// FoldClicks folds every pending click made before now's hour and
	// returns how many it folded; it does nothing once a fold has
	// reached that hour.
	FoldClicks(ctx context.Context, now time.Time) (int64, error)
}

// Folder calls FoldClicks every so often. Every instance runs one: a
// fold that finds its hour folded costs one read, and one that overlaps
// another's waits for it chunk by chunk and finds the chunk done.
type Folder struct {
	db     FoldSink
	every  time.Duration
	log    *slog.Logger
	now    func() time.Time
	folded prometheus.Counter
	errs   prometheus.Counter
}

// NewFolder returns a Folder that folds every every.
func NewFolder(db FoldSink, every time.Duration, log *slog.Logger, reg prometheus.Registerer) *Folder {
	f := &Folder{db: db, every: every, log: log, now: time.Now,
		folded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_clicks_folded_total", Help: "Pending clicks of rarely clicked links this instance folded into their count rows."}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_click_fold_errors_total", Help: "Folds of pending clicks that failed (tried again at the next turn)."}),
	}
	if reg != nil {
		reg.MustRegister(f.folded, f.errs)
	}
	return f
}

// Run folds until ctx ends. A fold that fails is tried again at the next
// turn; what it committed before failing stays folded (each chunk is its
// own transaction) and nothing is lost either way: the clicks stay
// pending, and readers count pending clicks.
func (f *Folder) Run(ctx context.Context) {
	for sleep(ctx, f.every) {
		n, err := f.db.FoldClicks(ctx, f.now())
		f.folded.Add(float64(n))
		if err != nil && ctx.Err() == nil {
			f.errs.Inc()
			f.log.Warn("folding pending clicks", "err", err, "folded", n)
		} else if n > 0 {
			f.log.Info("pending clicks folded", "clicks", n)
		}
	}
}
