package idgen

import (
	"errors"
	"math"
	"sync"
	"testing"
)

func TestEncodeRoundTrip(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{61, "z"},
		{62, "10"},
		{3843, "zz"},
		{3844, "100"},
		{math.MaxInt64, "AzL8n0Y58m7"},
		{math.MaxUint64, "LygHa16AHYF"},
	}
	for _, tt := range tests {
		got := Encode(tt.n)
		if got != tt.want {
			t.Errorf("Encode(%d) = %q, want %q", tt.n, got, tt.want)
		}
		back, err := Decode(got)
		if err != nil || back != tt.n {
			t.Errorf("Decode(%q) = %d, %v; want %d, nil", got, back, err, tt.n)
		}
	}
}

func TestEncodeOrder(t *testing.T) {
	// Codes of equal length must sort like their numbers.
	prev := Encode(3844)
	for n := uint64(3845); n < 3844+5000; n++ {
		c := Encode(n)
		if c <= prev {
			t.Fatalf("Encode(%d) = %q sorts before Encode(%d) = %q", n, c, n-1, prev)
		}
		prev = c
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, s := range []string{
		"",             // empty
		"00",           // leading zero: two codes for one number
		"01",           //
		"abc-",         // foreign character
		"ab c",         //
		"é",            // non-ASCII
		"LygHa16AHYG",  // MaxUint64 + 1
		"zzzzzzzzzzz",  // overflow
		"100000000000", // too long
	} {
		if n, err := Decode(s); !errors.Is(err, ErrInvalidCode) {
			t.Errorf("Decode(%q) = %d, %v; want ErrInvalidCode", s, n, err)
		}
	}
}

func TestNewRejectsNodeRange(t *testing.T) {
	for _, id := range []int64{-1, MaxNode + 1, 1 << 20} {
		if _, err := New(id); !errors.Is(err, ErrNodeRange) {
			t.Errorf("New(%d) error = %v, want ErrNodeRange", id, err)
		}
	}
	for _, id := range []int64{0, 1, MaxNode} {
		g, err := New(id)
		if err != nil {
			t.Fatalf("New(%d): %v", id, err)
		}
		id2, code := g.Next()
		if Node(id2) != id {
			t.Errorf("Node(Next()) = %d, want %d", Node(id2), id)
		}
		if back, _ := Decode(code); int64(back) != id2 {
			t.Errorf("code %q decodes to %d, want %d", code, back, id2)
		}
	}
}

// generate runs one goroutine per generator, each issuing n codes, and
// returns how many codes were issued more than once.
func generate(t *testing.T, gens []*Generator, n int) (dups int) {
	t.Helper()
	out := make([][]string, len(gens))
	var wg sync.WaitGroup
	for i, g := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes := make([]string, n)
			for j := range codes {
				_, codes[j] = g.Next()
			}
			out[i] = codes
		}()
	}
	wg.Wait()
	seen := make(map[string]struct{}, n*len(gens))
	for _, codes := range out {
		for _, c := range codes {
			if _, ok := seen[c]; ok {
				dups++
			}
			seen[c] = struct{}{}
		}
	}
	return dups
}

func TestDistinctNodesNeverCollide(t *testing.T) {
	g1, _ := New(1)
	g2, _ := New(2)
	if dups := generate(t, []*Generator{g1, g2}, 500_000); dups != 0 {
		t.Fatalf("two generators with node IDs 1 and 2 issued %d duplicate codes in 1,000,000, want 0", dups)
	}
}

// TestSameNodeCollides shows why node IDs must differ: two instances
// sharing a node ID issue the same (time, node, sequence) triples.
func TestSameNodeCollides(t *testing.T) {
	a, _ := New(7)
	b, _ := New(7)
	if dups := generate(t, []*Generator{a, b}, 500_000); dups == 0 {
		t.Fatal("two generators sharing node ID 7 issued no duplicate in 1,000,000 codes; want collisions")
	}
}
