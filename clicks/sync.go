package clicks

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// syncer fsyncs the journal every interval, off the writer's path, so a
// redirect waits for a write to the page cache but never for the disk. It
// also closes the segments the writer has moved past, after a last fsync.
// What a machine crash can lose is the interval's worth of clicks; what
// a process crash can lose is nothing, since the kernel keeps the pages.
type syncer struct {
	mu     sync.Mutex
	cur    *os.File
	sealed []*os.File
	dir    string
	dirty  bool // a segment was created since the directory was synced
	wg     sync.WaitGroup
	rounds atomic.Int64 // periodic syncs done (tests wait on it)
}

// switchTo makes f the segment to sync.
func (s *syncer) switchTo(f *os.File, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur, s.dir, s.dirty = f, dir, true
}

// retire queues f, a sealed segment, to be synced and closed.
func (s *syncer) retire(f *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == f {
		s.cur = nil
	}
	s.sealed = append(s.sealed, f)
}

// start runs the sync loop until stop is closed.
// after runs after each periodic sync.
func (s *syncer) start(stop <-chan struct{}, every time.Duration, log *slog.Logger, after func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := s.sync(false); err != nil {
					log.Error("click journal fsync failed", "err", err)
				}
				after()
				s.rounds.Add(1)
			}
		}
	}()
}

// wait waits for the sync loop to end.
func (s *syncer) wait() { s.wg.Wait() }

// sync fsyncs the current segment and the sealed ones (closing those), and
// the directory if a segment was created; with closing, it closes the
// current segment too.
func (s *syncer) sync(closing bool) error {
	s.mu.Lock()
	cur, sealed, dir, dirty := s.cur, s.sealed, s.dir, s.dirty
	s.sealed, s.dirty = nil, false
	if closing {
		s.cur = nil
	}
	s.mu.Unlock()
	var errs []error
	for _, f := range sealed {
		errs = append(errs, f.Sync(), f.Close())
	}
	if cur != nil {
		errs = append(errs, cur.Sync())
		if closing {
			errs = append(errs, cur.Close())
		}
	}
	if dirty {
		errs = append(errs, syncDir(dir))
	}
	return errors.Join(errs...)
}
