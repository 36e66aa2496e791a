package analytics

import "time"

// HoldsSharedKey reports whether e holds the shared visitor key of t's
// day, for the external tests: a test that counts allocations waits for
// it, since installing a key allocates (on the key loop's goroutine).
func (e *Enricher) HoldsSharedKey(t time.Time) bool {
	k := e.ring.Load().find(dayOf(t))
	return k != nil && k.shared
}
