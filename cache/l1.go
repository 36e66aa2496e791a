package cache

import (
	"math"
	"math/rand/v2"
	"shortener"
	"time"

	"github.com/maypok86/otter/v2"
)

// l1Entry is what the in-process cache keeps for a code: what a redirect
// decides by (as Redis keeps it: encode), or the fact that no link has
// the code (a negative entry), how long to keep it and when it was put.
// It is about a third the size of a shortener.Link (no owner, tags or
// creation time, times as Unix milliseconds), so the same memory holds
// more entries.
type l1Entry struct {
	url, passwordHash string
	id, maxVisits     int64
	expires, deleted  int64 // Unix milliseconds; 0: none
	ttl               time.Duration
	at                time.Duration // when it was put, on the cache's clock (since)
	redirect          int32
	found, disabled   bool
}

// l1Found is the entry of a link.
func l1Found(l shortener.Link) l1Entry {
	return l1Entry{url: l.URL, passwordHash: l.PasswordHash, id: l.ID, maxVisits: l.MaxVisits,
		expires: unixMilli(l.ExpiresAt), deleted: unixMilli(l.DeletedAt),
		redirect: int32(l.Redirect), found: true, disabled: l.Disabled}
}

// link is the link the entry keeps, with what a redirect decides by: a
// lookup answered from Redis has no more.
func (e l1Entry) link(code string) shortener.Link {
	return shortener.Link{ID: e.id, Code: code, URL: e.url, Redirect: int(e.redirect),
		ExpiresAt: fromUnixMilli(e.expires), DeletedAt: fromUnixMilli(e.deleted),
		Disabled: e.disabled, MaxVisits: e.maxVisits, PasswordHash: e.passwordHash}
}

// unixMilli is t in Unix milliseconds, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromUnixMilli is unixMilli's inverse, in UTC.
func fromUnixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// l1 is an in-process cache (W-TinyLFU, via otter) in front of Redis,
// bounded both in entries and in bytes (l1Weigher). Other instances'
// deletes and edits reach it by message, and a message can be lost; what
// bounds how long such a loss can matter is the outbox, which every
// instance reads (sync.go), not the TTL: an entry older than the
// unsynced TTL is trusted only while this instance keeps reading the
// outbox in time. Negative entries are short: no outbox records
// creates, and they only exist so that scanners probing random codes
// cannot drive MySQL.
type l1 struct {
	c      *otter.Cache[string, l1Entry]
	ttl    time.Duration
	negTTL time.Duration
	now    func() time.Time
	since  func() time.Duration // the cache's clock, for an entry's age
}

// l1EntryOverhead is what an L1 entry costs besides the bytes of its
// strings: the l1Entry, otter's node, its slot in otter's map and its
// share of the frequency sketch. Measured with BenchmarkL1Memory: 258
// bytes of heap an entry for a 40-byte URL and a 7-byte code, and 2,266
// for a 2,000-byte URL (the allocator rounds a long string up to its size
// class, 2,048 here); rounded up.
const l1EntryOverhead = 260

// l1Bytes estimates the memory an entry for code holds.
func l1Bytes(code string, e l1Entry) int64 {
	return int64(l1EntryOverhead + len(code) + len(e.url) + len(e.passwordHash))
}

// l1Weigher weighs an entry by its bytes, but at least maxBytes/size, so
// that a total weight within maxBytes is both at most size entries and at
// most maxBytes of memory. A count alone is no memory bound: a URL may be
// up to 2 KiB, and 100,000 entries of such URLs held 248 MB
// (BenchmarkL1Memory) against 46 MiB for 40-byte URLs.
func l1Weigher(size int, maxBytes int64) func(string, l1Entry) uint32 {
	least := (maxBytes + int64(size) - 1) / int64(size)
	return func(code string, e l1Entry) uint32 {
		return uint32(min(max(l1Bytes(code, e), least), math.MaxUint32))
	}
}

func newL1(size int, maxBytes int64, ttl, negTTL time.Duration, now func() time.Time, since func() time.Duration) *l1 {
	return &l1{
		c: otter.Must(&otter.Options[string, l1Entry]{
			MaximumWeight: uint64(maxBytes),
			Weigher:       l1Weigher(size, maxBytes),
			ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[string, l1Entry]) time.Duration {
				return e.Value.ttl
			}),
		}),
		ttl:    ttl,
		negTTL: negTTL,
		now:    now,
		since:  since,
	}
}

func (c *l1) get(code string) (l1Entry, bool) { return c.c.GetIfPresent(code) }

// jittered returns ttl shortened by up to a fifth, at random. Links filled
// together (a warm-up, a hot set after a restart) would otherwise expire
// together every TTL, and each time every instance would send the whole
// hot set to Redis at once: the chaos runs showed 30-80 ms stalls of
// redirects every 5 s, in phase with the load's first second.
func jittered(ttl time.Duration) time.Duration {
	if span := ttl - MinL1TTL(ttl); span > 0 {
		return ttl - rand.N(span)
	}
	return ttl
}

// MinL1TTL is the shortest an L1 entry lives with the TTL ttl: what
// bounds how often one instance can refill a code.
func MinL1TTL(ttl time.Duration) time.Duration { return ttl - ttl/5 }

// put keeps a found link until the L1 TTL (less a jitter) or its own
// expiry, whichever is sooner; an expired link is kept for the TTL, since
// it stays gone.
func (c *l1) put(l shortener.Link) {
	ttl := jittered(c.ttl)
	if !l.ExpiresAt.IsZero() {
		if until := l.ExpiresAt.Sub(c.now()); until > 0 && until < ttl {
			ttl = until
		}
	}
	e := l1Found(l)
	e.ttl, e.at = ttl, c.since()
	c.c.Set(l.Code, e)
}

func (c *l1) putMissing(code string) {
	c.c.Set(code, l1Entry{ttl: jittered(c.negTTL), at: c.since()})
}

func (c *l1) drop(code string) { c.c.Invalidate(code) }

func (c *l1) dropAll() { c.c.InvalidateAll() }
