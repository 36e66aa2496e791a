package trending

import "hash/maphash"

// Trending counts people, not requests: one client following one link
// over and over in a minute is one click of that minute, so a single
// script, however fast, cannot outrank a crowd. A click counts if its
// (client, link) pair is new in its minute on this instance (Click.Client
// stands for the client's address and agent); a client that nginx
// spreads over n instances counts at most n times a minute. The pairs
// are remembered for the current and the previous minute only, in sets
// bounded by maxPairs: past that, in a flood of distinct clients, every
// click counts (as before this check), and the overflow is counted.

// maxPairs bounds the (client, link) pairs remembered for one minute: 8
// bytes each in a map, some 20 MB at most for the two minutes kept.
const maxPairs = 1 << 19

// distinct remembers the pairs seen in the last two minutes. It is not
// safe for concurrent use (Observe holds inMu).
type distinct struct {
	seed     maphash.Seed
	minute   int64 // of cur
	cur, old map[uint64]struct{}
	overflow uint64 // clicks counted unchecked because a set was full
}

func newDistinct() *distinct {
	return &distinct{seed: maphash.MakeSeed(), cur: map[uint64]struct{}{}, old: map[uint64]struct{}{}}
}

// first reports whether client's click on code in minute m is the first
// of that pair in that minute; a click without a client always counts.
func (d *distinct) first(client uint64, code string, m int64) bool {
	if client == 0 {
		return true
	}
	var set map[uint64]struct{}
	switch {
	case m > d.minute:
		if m == d.minute+1 {
			d.old, d.cur = d.cur, d.old
			clear(d.cur)
		} else {
			clear(d.old)
			clear(d.cur)
		}
		d.minute = m
		set = d.cur
	case m == d.minute:
		set = d.cur
	case m == d.minute-1:
		set = d.old
	default:
		return true // older than what is remembered: counted (rare, late)
	}
	k := maphash.String(d.seed, code) ^ client*0x9e3779b97f4a7c15
	if _, seen := set[k]; seen {
		return false
	}
	if len(set) >= maxPairs {
		d.overflow++
		return true
	}
	set[k] = struct{}{}
	return true
}
