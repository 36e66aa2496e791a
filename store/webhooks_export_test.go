package store

import (
	"context"
	"errors"
	"time"
)

// errRolledBack is what RecordClicked returns when told to roll back.
var errRolledBack = errors.New("rolled back")

// RecordClicked runs insertClickedEvents for batch in a transaction of
// its own, as ShipClicks does in its, with counts made of each link's
// click times; it commits unless rollback (then it returns
// errRolledBack), so a test sees what the events of a batch committed
// or rolled back are.
func (s *Store) RecordClicked(ctx context.Context, batch string, clicks map[int64][]time.Time, rollback bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	counts := clickedCounts{}
	for link, ats := range clicks {
		for _, at := range ats {
			counts.add(link, at)
		}
	}
	if err := insertClickedEvents(ctx, tx, batch, counts); err != nil {
		return err
	}
	if rollback {
		return errRolledBack
	}
	return tx.Commit()
}
