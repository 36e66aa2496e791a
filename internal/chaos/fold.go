package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"shortener/internal/stack"
	"shortener/store"
)

// foldRetryFor bounds fold-mysql-killed's fold after MariaDB's restart,
// tried again each second as long as it fails.
const foldRetryFor = time.Minute

// Marks of fold-mysql-killed.
const (
	markFoldKilled = "fold_killed" // MariaDB SIGKILLed with a fold under way, a chunk of it committed
	markFoldDone   = "fold_done"   // a fold after MariaDB's restart folded every pending click
)

// foldMySQLKilled is the fold-mysql-killed row: the long tail's pending
// clicks (store/clickfold.go) are folded into the counts chunk by chunk,
// each chunk a transaction; MariaDB dies in the middle. The clicks
// ledger then finds every click served counted once, pending or folded.
func foldMySQLKilled() Scenario {
	var st *store.Store
	return Scenario{
		Name:  "fold-mysql-killed",
		Fault: "MySQL killed while an instance folds the long tail's pending clicks",
		Expect: "redirects of cached links 0 failed; clicks 0 lost, 0 double: each chunk of a fold is all or nothing, " +
			"and the next fold finishes the rest",
		Does: "fold every pending click (store.FoldPending, what an instance runs after each hour's end) and SIGKILL MariaDB as soon as " +
			"a chunk of it has committed and while it runs; at the end of the fault phase restart MariaDB and fold again",
		Inject: func(ctx context.Context, s *Scene) (err error) {
			if st, err = store.Open(store.Config{DSN: s.Stack.MySQLDSN(), MaxOpen: 4, MaxIdle: 4, MaxLifetime: time.Minute,
				DialTimeout: 2 * time.Second, QueryTimeout: 5 * time.Second}, slog.New(slog.DiscardHandler)); err != nil {
				return err
			}
			return foldThenKill(ctx, s, st)
		},
		Heal: func(ctx context.Context, s *Scene) error {
			if st == nil {
				return errors.New("no store: the fault was not injected")
			}
			defer st.Close()
			if err := s.Stack.MySQL().Restart(ctx); err != nil {
				return err
			}
			s.Note(markMySQLBack, "restarted mysql; it answers")
			// As an instance's folder: a fold that fails is tried again.
			var n int64
			pctx, cancel := context.WithTimeout(ctx, foldRetryFor)
			defer cancel()
			err := stack.Poll(pctx, time.Second, func(ctx context.Context) (err error) {
				n, err = st.FoldPending(ctx, time.Now())
				return err
			})
			if err != nil {
				return fmt.Errorf("fold after mysql's restart: %w", err)
			}
			s.Note(markFoldDone, "folded the %d clicks pending (those of the interrupted fold's uncommitted chunk among them)", n)
			return nil
		},
		Checks: []Measure{MySQLOutage, FoldResumed},
		// As mysql-down: creates and unknown codes get fast 503s.
		Waive: []string{"creates", "misses"},
		Needs: NeedsSingle,
	}
}

// foldThenKill starts a fold of every pending click and SIGKILLs MariaDB
// once the pending count has dropped (a chunk committed) while the fold
// still runs. Too few pending clicks for more than one chunk is an
// error: the row would test nothing.
func foldThenKill(ctx context.Context, s *Scene, st *store.Store) error {
	db, err := sql.Open("mysql", s.Stack.MySQLDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	pending := func(ctx context.Context) (n int64, err error) {
		err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM click_pending").Scan(&n)
		return n, err
	}
	before, err := pending(ctx)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, err := st.FoldPending(fctx, time.Now())
		done <- err
	}()
	s.Note("", "folding the %d pending clicks", before)
	for {
		select {
		case err := <-done:
			return fmt.Errorf("the fold of %d pending clicks ended (%v) before a chunk was seen committed: too few to interrupt", before, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond): // polls the pending count
		}
		n, err := pending(ctx)
		if err != nil {
			return err
		}
		if n < before {
			if err := s.Stack.MySQL().Kill(); err != nil {
				return err
			}
			s.Note(markFoldKilled, "SIGKILL mysql: %d of %d pending clicks folded, the fold under way", before-n, before)
			break
		}
	}
	if err := <-done; err == nil {
		return errors.New("the fold finished though mysql was killed under it")
	}
	return nil
}

// FoldResumed checks fold-mysql-killed's own steps: MariaDB was killed
// with a fold under way and a chunk of it committed, and once MariaDB was
// back a fold folded every pending click. The clicks ledger checks that
// none was lost or counted twice.
func FoldResumed(r *Run) []Check {
	killed, k := r.Marks[markFoldKilled]
	done, d := r.Marks[markFoldDone]
	return []Check{{ID: "fold", What: "MySQL killed under a fold a chunk into it, and a fold after its restart folded every pending click",
		Want: "both, in that order", Got: fmt.Sprintf("killed under the fold: %v; folded after the restart: %v", k, d),
		OK: k && d && done > killed, Required: true}}
}
