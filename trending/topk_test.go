package trending

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// zipfStream draws n keys "l0".."l{links-1}" with Zipf exponent s (key
// "l0" the most frequent), from a fixed seed so a run can be repeated.
func zipfStream(seed uint64, s float64, links, n int) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	z := rand.NewZipf(r, s, 1, uint64(links-1))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("l%d", z.Uint64())
	}
	return out
}

// exactTop ranks exact counts in the package's order.
func exactTop(counts map[string]uint64, k int) []string {
	cs := make([]Count, 0, len(counts))
	for key, n := range counts {
		cs = append(cs, Count{Key: key, Count: n})
	}
	sortCounts(cs)
	return keys(cs[:min(k, len(cs))])
}

func keys(cs []Count) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}

// TestTopKZipf checks Space-Saving's guarantees on Zipf streams like the
// quality test's, with 10x fewer counters than links: the heavy keys are
// all held, no counter overestimates by more than its Err or N/m, and the
// top 10 is exactly the true top 10.
func TestTopKZipf(t *testing.T) {
	for _, tc := range []struct {
		s        float64
		links, m int
	}{
		{1.1, 1_000, 100}, {1.2, 1_000, 100}, {1.1, 10_000, 1_000}, {1.2, 10_000, 1_000},
	} {
		t.Run(fmt.Sprintf("s=%.1f/links=%d/m=%d", tc.s, tc.links, tc.m), func(t *testing.T) {
			const n = 300_000
			tk := NewTopK(tc.m)
			exact := map[string]uint64{}
			for _, k := range zipfStream(uint64(tc.links), tc.s, tc.links, n) {
				tk.Add(k, 1)
				exact[k]++
			}
			if tk.Len() > tc.m {
				t.Fatalf("Len() = %d, want <= %d", tk.Len(), tc.m)
			}
			bound := uint64(n / tc.m)
			if tk.Bound() > bound {
				t.Errorf("Bound() = %d, want <= N/m = %d", tk.Bound(), bound)
			}
			for key, truth := range exact {
				c, ok := tk.Estimate(key)
				switch {
				case !ok && truth > bound:
					t.Errorf("%s (true count %d > N/m = %d) holds no counter", key, truth, bound)
				case ok && (c.Count < truth || c.Count-c.Err > truth || c.Err > bound):
					t.Errorf("%s: counter %d err %d, true count %d, N/m %d", key, c.Count, c.Err, truth, bound)
				}
			}
			for _, k := range []int{5, 10} {
				if j := Jaccard(keys(tk.Top(k)), exactTop(exact, k)); j != 1 {
					t.Errorf("Jaccard@%d = %.3f, want 1", k, j)
				}
			}
			for _, c := range tk.Top(10) {
				if c.Err != 0 {
					t.Logf("top key %s carries an overestimate of %d", c.Key, c.Err)
				}
			}
		})
	}
}

// TestTopKMemoryBound feeds a million distinct keys into 1,000 counters:
// the structure must not grow, and the counts must still add up.
func TestTopKMemoryBound(t *testing.T) {
	const m, n = 1_000, 1_000_000
	tk := NewTopK(m)
	for i := range n {
		tk.Add(fmt.Sprintf("k%d", i), 1)
		if tk.Len() > m || len(tk.idx) > m {
			t.Fatalf("after %d keys: Len() = %d, index %d, want <= %d", i+1, tk.Len(), len(tk.idx), m)
		}
	}
	if cap(tk.h) != m {
		t.Errorf("heap capacity %d, want %d (it must never reallocate)", cap(tk.h), m)
	}
	var sum uint64
	for _, c := range tk.h {
		sum += c.Count
	}
	if sum != n || tk.Total() != n {
		t.Errorf("counters sum to %d, Total() = %d, want %d", sum, tk.Total(), n)
	}
}

func TestTopKOrder(t *testing.T) {
	tk := NewTopK(3)
	for _, a := range []struct {
		key string
		n   uint64
	}{{"b", 5}, {"a", 5}, {"c", 1}, {"d", 2}, {"c", 0}} {
		tk.Add(a.key, a.n)
	}
	got := tk.Top(10)
	// d evicted c (count 1): d = 1 + 2 with Err 1.
	want := []Count{{"a", 5, 0}, {"b", 5, 0}, {"d", 3, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Top = %v, want %v", got, want)
	}
}

func BenchmarkTopKAdd(b *testing.B) {
	stream := zipfStream(1, 1.1, 10_000, 1<<16)
	tk := NewTopK(1_000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tk.Add(stream[i&(1<<16-1)], 1)
	}
}
