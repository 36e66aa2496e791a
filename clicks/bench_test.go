package clicks

import (
	"fmt"
	"shortener"
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

// BenchmarkParse is the shipper decoding a batch of 10,000 clicks on
// 1,000 links (per click).
func BenchmarkParse(b *testing.B) {
	var buf []byte
	at := time.Now()
	for i := range 10_000 {
		c := click(int64(i%1_000), at)
		c.Code = fmt.Sprintf("code%07d", i%1_000)
		buf = appendRecord(buf, c)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var dst []shortener.Click // the shipper's array and interner, kept batch to batch
	in := interner{}
	for b.Loop() {
		s := parse(dst, in, buf, 0, true, 10_000)
		if len(s.clicks) != 10_000 {
			b.Fatalf("parsed %d clicks", len(s.clicks))
		}
		dst = s.clicks
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10_000), "ns/click")
}
