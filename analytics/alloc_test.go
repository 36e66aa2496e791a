//go:build !race

package analytics_test

import (
	"net/netip"
	"testing"
	"time"
)

// TestEnrichAllocatesNothing once the agent and the country record are
// cached: it runs on every redirect. The race detector's instrumentation
// allocates, so this file is left out under -race, and make test runs it
// again without (its "alloc" step).
func TestEnrichAllocatesNothing(t *testing.T) {
	now := time.Now()
	e := enricher(t, now)
	a := netip.MustParseAddr("8.8.8.8")
	const ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	e.Enrich(a, ua, false, now)
	if n := testing.AllocsPerRun(1000, func() { e.Enrich(a, ua, false, now) }); n != 0 {
		t.Errorf("got %v allocations per Enrich, want 0", n)
	}
}
