package store

import (
	"context"
	"time"
)

// CaughtUpAt reads a journal's recorded caught-up time, for the tests.
func (s *Store) CaughtUpAt(ctx context.Context, journal int64, at any) error {
	return s.db.QueryRowContext(ctx, "SELECT caught_up_at FROM click_journals WHERE journal_id = ?", journal).Scan(at)
}

// HoldCreates takes every create statement slot, so that the creates
// that follow queue, and returns release, which waits until n creates are
// queued and lets them go, as many to a statement as maxCreateRows
// allows. No create may be running when it is called.
func (s *Store) HoldCreates() (release func(n int)) {
	g := s.creates
	g.mu.Lock()
	g.running = g.limit
	g.mu.Unlock()
	return func(n int) {
		for {
			g.mu.Lock()
			queued := len(g.queue)
			if queued >= n {
				g.running -= g.limit - 1 // one slot left, for next to run them in
				g.mu.Unlock()
				g.next()
				return
			}
			g.mu.Unlock()
			time.Sleep(time.Millisecond) // polls for the callers' goroutines to queue
		}
	}
}

// MultiRowCreates is how many create statements of more than one row ran.
func (s *Store) MultiRowCreates() uint64 { return s.creates.multi.Load() }

// QueuedCreates is how many creates wait for a statement.
func (s *Store) QueuedCreates() int {
	s.creates.mu.Lock()
	defer s.creates.mu.Unlock()
	return len(s.creates.queue)
}
