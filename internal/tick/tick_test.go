package tick

import (
	"context"
	"testing"
	"time"
)

// TestEveryStopsWithItsContext: f runs until ctx ends, and Every returns
// then.
func TestEveryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan struct{})
	go func() {
		Every(ctx, time.Millisecond, func() {
			calls++
			if calls == 3 {
				cancel()
			}
		})
		close(done)
	}()
	<-done
	if calls != 3 {
		t.Errorf("%d calls, want 3: Every went on after its context ended", calls)
	}
}
