package clicks

import (
	"testing"
	"time"
)

// BenchmarkRecord is one click journaled, as a redirect does it.
func BenchmarkRecord(b *testing.B) {
	j := openJournal(b, Config{SegmentBytes: 16 << 20}, nil)
	c := click(42, time.Now())
	b.ReportAllocs()
	for b.Loop() {
		j.Record(c)
	}
}
