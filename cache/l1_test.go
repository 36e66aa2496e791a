package cache

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"shortener"
)

// l1Link is a link with a URL of urlLen bytes and an owner, as a keyed
// create stores it.
func l1Link(i, urlLen int) shortener.Link {
	code := fmt.Sprintf("c%06d", i)
	url := "https://example.com/" + code
	url += strings.Repeat("x", max(urlLen-len(url), 0))
	return shortener.Link{ID: int64(i + 1), Code: code, URL: url, Redirect: 302,
		CreatedAt: time.Now(), Owner: strings.Repeat("a", 64)}
}

// fillL1 puts n links with URLs of urlLen bytes into c and lets otter
// finish its evictions.
func fillL1(c *l1, n, urlLen int) {
	for i := range n {
		c.put(l1Link(i, urlLen))
	}
	c.c.CleanUp()
}

// TestL1BoundedInEntriesAndBytes: links with short URLs fill the L1 to
// its entry bound; links with 2 KiB URLs stop at its byte bound, far
// fewer. With the entry bound alone the second case held as many entries
// as the first, five times the memory.
func TestL1BoundedInEntriesAndBytes(t *testing.T) {
	const size, maxBytes = 1000, 1000 * 600
	short := newL1(size, maxBytes, time.Hour, time.Second, time.Now, func() time.Duration { return 0 })
	fillL1(short, 2*size, 40)
	if n := short.c.EstimatedSize(); n < size-1 || n > size {
		t.Errorf("40-byte URLs: %d entries, want %d (the entry bound)", n, size)
	}
	long := newL1(size, maxBytes, time.Hour, time.Second, time.Now, func() time.Duration { return 0 })
	fillL1(long, 2*size, 2000)
	want := maxBytes / l1Bytes("c000000", l1Entry{link: l1Link(0, 2000), found: true})
	if n := long.c.EstimatedSize(); n < 1 || int64(n) > want {
		t.Errorf("2,000-byte URLs: %d entries, want 1 to %d (the byte bound)", n, want)
	}
	if w := long.c.WeightedSize(); w > maxBytes {
		t.Errorf("2,000-byte URLs: weight %d, over the bound %d", w, maxBytes)
	}
}

func TestL1Bytes(t *testing.T) {
	l := l1Link(0, 40)
	base := l1Bytes(l.Code, l1Entry{link: l, found: true})
	if want := int64(l1EntryOverhead + len(l.Code) + len(l.URL) + len(l.Owner)); base != want {
		t.Errorf("a link without tags or password: %d bytes, want %d", base, want)
	}
	l.Tags, l.PasswordHash = []string{"a", "bcd"}, strings.Repeat("h", 60)
	if got, want := l1Bytes(l.Code, l1Entry{link: l, found: true}), base+16+1+16+3+60; got != want {
		t.Errorf("with two tags and a password: %d bytes, want %d", got, want)
	}
	if got, want := l1Bytes("nolink", l1Entry{}), int64(l1EntryOverhead+len("nolink")); got != want {
		t.Errorf("a negative entry: %d bytes, want %d", got, want)
	}
}

// BenchmarkL1Memory fills an L1 of the default bounds (100,000 entries,
// 48 MiB) and reports the heap it holds, per entry and in all, for the
// bench's short URLs and for URLs of 2,000 bytes: what l1EntryOverhead
// and the default byte bound come from. -benchtime=1x is enough: it
// measures memory, not time.
func BenchmarkL1Memory(b *testing.B) {
	for _, urlLen := range []int{40, 2000} {
		b.Run(fmt.Sprintf("url=%d", urlLen), func(b *testing.B) {
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c := newL1(100_000, 48<<20, time.Hour, time.Second, time.Now, func() time.Duration { return 0 })
				fillL1(c, 100_000, urlLen)
				runtime.GC()
				runtime.ReadMemStats(&after)
				held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
				b.ReportMetric(float64(c.c.EstimatedSize()), "entries")
				b.ReportMetric(held/float64(c.c.EstimatedSize()), "heap-B/entry")
				b.ReportMetric(held/(1<<20), "heap-MiB")
				runtime.KeepAlive(c)
			}
		})
	}
}
