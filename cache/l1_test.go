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
	want := maxBytes / l1Bytes("c000000", l1Found(l1Link(0, 2000)))
	if n := long.c.EstimatedSize(); n < 1 || int64(n) > want {
		t.Errorf("2,000-byte URLs: %d entries, want 1 to %d (the byte bound)", n, want)
	}
	if w := long.c.WeightedSize(); w > maxBytes {
		t.Errorf("2,000-byte URLs: weight %d, over the bound %d", w, maxBytes)
	}
}

func TestL1Bytes(t *testing.T) {
	l := l1Link(0, 40)
	base := l1Bytes(l.Code, l1Found(l))
	if want := int64(l1EntryOverhead + len(l.Code) + len(l.URL)); base != want {
		t.Errorf("a link without a password: %d bytes, want %d", base, want)
	}
	l.Tags, l.PasswordHash = []string{"a", "bcd"}, strings.Repeat("h", 60)
	if got, want := l1Bytes(l.Code, l1Found(l)), base+60; got != want {
		t.Errorf("with a password (tags are not kept): %d bytes, want %d", got, want)
	}
	if got, want := l1Bytes("nolink", l1Entry{}), int64(l1EntryOverhead+len("nolink")); got != want {
		t.Errorf("a negative entry: %d bytes, want %d", got, want)
	}
}

// TestL1EntryKeepsTheRedirect: an entry gives back every field a
// redirect decides by, as Redis does (encode), times to the millisecond.
func TestL1EntryKeepsTheRedirect(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123).UTC()
	for _, l := range []shortener.Link{
		{ID: 7, Code: "a", URL: "https://example.com/a b", Redirect: 302},
		{ID: 8, Code: "b", URL: "https://example.com/b", Redirect: 308, ExpiresAt: at, DeletedAt: at.Add(time.Second),
			Disabled: true, MaxVisits: 3, PasswordHash: "$2a$10$abc"},
	} {
		want := l
		full := l
		full.Owner, full.Tags, full.CreatedAt, full.UpdatedAt = "owner", []string{"t"}, at, at
		if got := l1Found(full).link(l.Code); got.ID != want.ID || got.Code != want.Code || got.URL != want.URL ||
			got.Redirect != want.Redirect || !got.ExpiresAt.Equal(want.ExpiresAt) || !got.DeletedAt.Equal(want.DeletedAt) ||
			got.Disabled != want.Disabled || got.MaxVisits != want.MaxVisits || got.PasswordHash != want.PasswordHash {
			t.Errorf("%s: got %+v, want %+v", l.Code, got, want)
		}
		if enc, dec := encode(full), l1Found(full).link(l.Code); encode(dec) != enc {
			t.Errorf("%s: Redis keeps %q, the L1 entry %q", l.Code, enc, encode(dec))
		}
	}
}

// BenchmarkL1Memory fills an L1 of the default bounds (50,000 entries,
// 24 MiB) and reports the heap it holds, per entry and in all, for the
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
				c := newL1(50_000, 24<<20, time.Hour, time.Second, time.Now, func() time.Duration { return 0 })
				fillL1(c, 50_000, urlLen)
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
