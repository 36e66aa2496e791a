// Package tick runs a function on a ticker until its context ends: the
// loop the app's background tasks and the chaos engine's probes share.
package tick

import (
	"context"
	"time"
)

// Every calls f every d until ctx ends, first after d. A call that
// outlasts d delays the next rather than overlapping it.
func Every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}
