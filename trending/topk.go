package trending

import (
	"cmp"
	"slices"
)

// TopK counts the heaviest keys of a stream in bounded memory with the
// Space-Saving algorithm (Metwally, Agrawal, El Abbadi 2005): it keeps at
// most capacity counters; an unseen key takes over the smallest counter
// and inherits its count as its possible overestimate.
//
// Its guarantees, for a stream of total weight N and capacity m, are what
// the outage answer relies on:
//   - memory: never more than m counters, whatever the number of keys;
//   - every key whose true count exceeds N/m holds a counter;
//   - a counter overestimates its key's true count by at most its Err,
//     and Err <= N/m.
//
// Under a Zipf load the heavy keys arrive early and often, so they are
// almost never evicted and their Err stays 0 (TestTopKZipf measures it).
// A TopK is not safe for concurrent use.
type TopK struct {
	capacity int
	total    uint64
	idx      map[string]int // key -> position in h
	h        []Count        // min-heap on Count
}

// Count is one key's estimated count. The true count lies in
// [Count-Err, Count].
type Count struct {
	Key   string
	Count uint64
	Err   uint64
}

// NewTopK returns an empty TopK keeping at most capacity counters
// (at least 1).
func NewTopK(capacity int) *TopK {
	capacity = max(capacity, 1)
	return &TopK{capacity: capacity, idx: make(map[string]int, capacity), h: make([]Count, 0, capacity)}
}

// Add counts n more occurrences of key.
func (t *TopK) Add(key string, n uint64) {
	if n == 0 {
		return
	}
	t.total += n
	if i, ok := t.idx[key]; ok {
		t.h[i].Count += n
		t.down(i)
		return
	}
	if len(t.h) < t.capacity {
		t.h = append(t.h, Count{Key: key, Count: n})
		t.idx[key] = len(t.h) - 1
		t.up(len(t.h) - 1)
		return
	}
	// Evict the smallest counter: its count becomes the newcomer's
	// possible overestimate.
	least := t.h[0]
	delete(t.idx, least.Key)
	t.h[0] = Count{Key: key, Count: least.Count + n, Err: least.Count}
	t.idx[key] = 0
	t.down(0)
}

// Estimate returns key's counter, and false when key holds none (its true
// count is then at most Bound()).
func (t *TopK) Estimate(key string) (Count, bool) {
	i, ok := t.idx[key]
	if !ok {
		return Count{}, false
	}
	return t.h[i], true
}

// Top returns up to k counters, the largest first; ties go to the smaller
// key, the same order every ranking of this package uses.
func (t *TopK) Top(k int) []Count {
	out := slices.Clone(t.h)
	sortCounts(out)
	return out[:min(k, len(out))]
}

// Len is the number of counters held; it never exceeds the capacity.
func (t *TopK) Len() int { return len(t.h) }

// Total is the weight of everything added.
func (t *TopK) Total() uint64 { return t.total }

// Bound is the largest possible overestimate of any counter, and the
// largest true count a key without a counter can have: the smallest
// counter once the TopK is full, else 0.
func (t *TopK) Bound() uint64 {
	if len(t.h) < t.capacity {
		return 0
	}
	return t.h[0].Count
}

// sortCounts orders counts by count, largest first, then by key.
func sortCounts(cs []Count) {
	slices.SortFunc(cs, func(a, b Count) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
}

func (t *TopK) less(i, j int) bool { return t.h[i].Count < t.h[j].Count }

func (t *TopK) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.idx[t.h[i].Key] = i
	t.idx[t.h[j].Key] = j
}

func (t *TopK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(i, p) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *TopK) down(i int) {
	n := len(t.h)
	for {
		l, small := 2*i+1, i
		if l < n && t.less(l, small) {
			small = l
		}
		if r := l + 1; r < n && t.less(r, small) {
			small = r
		}
		if small == i {
			return
		}
		t.swap(i, small)
		i = small
	}
}

// Jaccard is |a ∩ b| / |a ∪ b| of two lists of codes, 1 for two empty
// lists: how trending's quality is measured, a served top K against the
// true one (the chaos ledger and the quality tests use it).
func Jaccard(a, b []string) float64 {
	set := map[string]int{}
	for _, k := range a {
		set[k] |= 1
	}
	for _, k := range b {
		set[k] |= 2
	}
	if len(set) == 0 {
		return 1
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both) / float64(len(set))
}
