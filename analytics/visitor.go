package analytics

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// KeySource supplies the daily visitor key: random, the same on every
// instance for a UTC day, and deleted a couple of days after the day
// ends, so that a stored visitor hash cannot be reversed (the hash of
// every IPv4 address with a common User-Agent is a few billion hashes:
// without the key, there is nothing to try them against).
type KeySource interface {
	// VisitorKey returns the key of the UTC day starting at day (at
	// least 16 bytes), creating it if no instance has yet: every call
	// for the same day, from any instance, returns the same key. It is
	// called in the background, never on a redirect, under a deadline.
	VisitorKey(ctx context.Context, day time.Time) ([]byte, error)
}

// Key fetching. A fetch has a deadline (it is a MySQL query); a failed
// one is retried after retryMin, doubling to retryMax, with a local key
// in use meanwhile. With both keys in hand the loop wakes at the next
// UTC midnight, or within idleMax if the clock has moved oddly.
const (
	fetchTimeout = 5 * time.Second
	retryMin     = 5 * time.Second
	retryMax     = 5 * time.Minute
	idleMax      = time.Hour
	// maxKeys bounds the keys held. The loop keeps yesterday's (a click
	// stamped just before midnight may be enriched just after), today's
	// and tomorrow's (fetched a day ahead, so midnight needs no fetch);
	// a click stamped on another day (a clock jump) gets a local key of
	// its own, and the oldest beyond maxKeys are dropped.
	maxKeys = 8
)

// dayKey is the visitor key of one UTC day.
type dayKey struct {
	day    int64 // days since 1970-01-01, UTC
	key    [32]byte
	shared bool // from the KeySource; false: this instance's own random key
}

// keyring is the keys held, never changed once published (Enricher.ring):
// a redirect reads it without a lock.
type keyring struct{ keys []dayKey }

func (r *keyring) find(day int64) *dayKey {
	for i := range r.keys {
		if r.keys[i].day == day {
			return &r.keys[i]
		}
	}
	return nil
}

// dayOf returns t's UTC day as days since 1970-01-01.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	d := s / 86400
	if s%86400 < 0 {
		d--
	}
	return d
}

// dayStart returns the start of day d.
func dayStart(d int64) time.Time { return time.Unix(d*86400, 0).UTC() }

// visitorHash is the first 64 bits of SHA-256 over a fixed-length
// message: the day's key, the address (16 bytes: an IPv4 address in its
// IPv6-mapped form), and a digest of the User-Agent string, with the low
// bit set so that no visitor is 0 (unknown). A secret-prefix hash of a
// fixed-length message is a pseudo-random function (the length extension
// that breaks it for MACs needs longer messages), at 64 bytes and no
// allocation: about 160 ns here, against HMAC's two hashes and its
// allocations.
func visitorHash(key *[32]byte, addr netip.Addr, agent *[16]byte) uint64 {
	var msg [64]byte
	copy(msg[:32], key[:])
	a := addr.As16()
	copy(msg[32:48], a[:])
	copy(msg[48:], agent[:])
	sum := sha256.Sum256(msg[:])
	return binary.BigEndian.Uint64(sum[:8]) | 1
}

// keyFor returns the key of day: the one held, or, when none is (the
// loop has not fetched it, or the click is stamped on another day), a
// new local key, held from then on and replaced by the shared key when
// the loop fetches it. Only that miss takes the lock.
func (e *Enricher) keyFor(day int64) *dayKey {
	if k := e.ring.Load().find(day); k != nil {
		return k
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if k := e.ring.Load().find(day); k != nil {
		return k
	}
	k := dayKey{day: day}
	rand.Read(k.key[:]) // never fails (crypto/rand's contract)
	return e.installLocked(k, dayOf(e.now()))
}

// installLocked publishes a ring with k (replacing the day's key, if
// any), dropping keys before yesterday and, past maxKeys, the farthest
// from today. e.mu must be held. It returns k's place in the new ring.
func (e *Enricher) installLocked(k dayKey, today int64) *dayKey {
	old := e.ring.Load().keys
	keys := make([]dayKey, 0, len(old)+1)
	for _, o := range old {
		if o.day != k.day && o.day >= today-1 {
			keys = append(keys, o)
		}
	}
	keys = append(keys, k)
	for len(keys) > maxKeys {
		far := 0
		for i := range keys {
			if dist(keys[i].day, today) > dist(keys[far].day, today) {
				far = i
			}
		}
		keys = append(keys[:far], keys[far+1:]...)
	}
	e.ring.Store(&keyring{keys: keys})
	return e.ring.Load().find(k.day)
}

func dist(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// fetchKeys runs until ctx ends: it fetches today's and tomorrow's keys
// now, then whenever a day turns or a fetch has failed.
func (e *Enricher) fetchKeys(ctx context.Context) {
	defer close(e.done)
	retry := retryMin
	for {
		wait := e.refresh(ctx)
		if wait == 0 {
			wait = retry
			retry = min(2*retry, retryMax)
		} else {
			retry = retryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refresh fetches the keys of today and tomorrow that are not held as
// shared ones; a day whose fetch fails gets a local key until one
// succeeds. It returns how long the keys are good for: until the next
// UTC midnight (at most idleMax), or 0 if a fetch failed.
func (e *Enricher) refresh(ctx context.Context) time.Duration {
	now := e.now()
	today := dayOf(now)
	failed := false
	for _, d := range []int64{today, today + 1} {
		if k := e.ring.Load().find(d); k != nil && k.shared {
			continue
		}
		k, err := e.fetch(ctx, d)
		if err != nil {
			e.fetchErrors.Add(1)
			failed = true
			e.keyFor(d)
			continue
		}
		e.mu.Lock()
		e.installLocked(k, today)
		e.mu.Unlock()
	}
	if failed {
		return 0
	}
	return min(dayStart(today+1).Sub(now)+time.Second, idleMax)
}

// fetch asks the KeySource for day's key, under fetchTimeout. The key is
// hashed to 32 bytes, whatever its length.
func (e *Enricher) fetch(ctx context.Context, day int64) (dayKey, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	raw, err := e.keys.VisitorKey(ctx, dayStart(day))
	if err != nil {
		return dayKey{}, fmt.Errorf("fetch the visitor key of %s: %w", dayStart(day).Format(time.DateOnly), err)
	}
	if len(raw) < 16 {
		return dayKey{}, fmt.Errorf("fetch the visitor key of %s: %d bytes, want at least 16", dayStart(day).Format(time.DateOnly), len(raw))
	}
	return dayKey{day: day, key: sha256.Sum256(raw), shared: true}, nil
}

// localKey reports whether the key in use for the current UTC day is
// this instance's own (the KeySource has not answered yet).
func (e *Enricher) localKey() bool {
	k := e.ring.Load().find(dayOf(e.now()))
	return k != nil && !k.shared
}
