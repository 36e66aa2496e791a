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

var testCodec, _ = NewCodec("a test key of enough length")

func TestNewRejectsNodeRange(t *testing.T) {
	for _, id := range []int64{-1, MaxNode + 1, 1 << 20} {
		if _, err := New(id, testCodec); !errors.Is(err, ErrNodeRange) {
			t.Errorf("New(%d) error = %v, want ErrNodeRange", id, err)
		}
	}
	for _, id := range []int64{0, 1, MaxNode} {
		g, err := New(id, testCodec)
		if err != nil {
			t.Fatalf("New(%d): %v", id, err)
		}
		id2, code := g.Next()
		if Node(id2) != id {
			t.Errorf("Node(Next()) = %d, want %d", Node(id2), id)
		}
		if back, err := testCodec.ID(code); back != id2 || err != nil {
			t.Errorf("code %q decodes to %d, %v; want %d", code, back, err, id2)
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
	g1, _ := New(1, testCodec)
	g2, _ := New(2, testCodec)
	if dups := generate(t, []*Generator{g1, g2}, 500_000); dups != 0 {
		t.Fatalf("two generators with node IDs 1 and 2 issued %d duplicate codes in 1,000,000, want 0", dups)
	}
}

// TestSameNodeCollides shows why node IDs must differ: two instances
// sharing a node ID issue the same (time, node, sequence) triples.
func TestSameNodeCollides(t *testing.T) {
	a, _ := New(7, testCodec)
	b, _ := New(7, testCodec)
	if dups := generate(t, []*Generator{a, b}, 500_000); dups == 0 {
		t.Fatal("two generators sharing node ID 7 issued no duplicate in 1,000,000 codes; want collisions")
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, id := range []int64{0, 1, 2, 1 << 40, math.MaxInt64, 1_900_000_000_000_000_000} {
		code := testCodec.Code(id)
		back, err := testCodec.ID(code)
		if err != nil || back != id {
			t.Errorf("ID(Code(%d)) = %d, %v (code %q)", id, back, err, code)
		}
	}
}

// TestCodecHidesOrder shows why codes are permuted: consecutive IDs give
// codes that share no common prefix and do not sort in ID order.
func TestCodecHidesOrder(t *testing.T) {
	g, _ := New(1, testCodec)
	var prev string
	sorted, samePrefix := 0, 0
	const n = 1000
	for i := range n {
		id, code := g.Next()
		if raw := Encode(uint64(id)); code == raw {
			t.Fatalf("code %q is the raw ID's", code)
		}
		if i > 0 {
			if code > prev {
				sorted++
			}
			if len(code) > 3 && len(prev) > 3 && code[:3] == prev[:3] {
				samePrefix++
			}
		}
		prev = code
	}
	// Random order sorts about half the pairs; raw Snowflake codes sort all.
	if sorted > n*6/10 || samePrefix > n/10 {
		t.Errorf("%d of %d consecutive codes sort upwards and %d share a 3-character prefix; want about half and almost none", sorted, n-1, samePrefix)
	}
}

func TestCodecKeys(t *testing.T) {
	if _, err := NewCodec("short"); err == nil {
		t.Error("NewCodec accepted a 5-byte key")
	}
	other, _ := NewCodec("another key of enough length")
	if testCodec.Code(12345) == other.Code(12345) {
		t.Error("two keys gave the same code")
	}
	if _, err := testCodec.ID("zzzz!"); !errors.Is(err, ErrInvalidCode) {
		t.Errorf("ID of a malformed code: %v, want ErrInvalidCode", err)
	}
}

// TestCodecIsBijective checks on a sample that distinct IDs never share a
// code and that some 64-bit codes map to no 63-bit ID (ErrNotACode).
func TestCodecIsBijective(t *testing.T) {
	seen := map[string]int64{}
	for id := int64(1_800_000_000_000_000_000); id < 1_800_000_000_000_200_000; id++ {
		c := testCodec.Code(id)
		if prev, ok := seen[c]; ok {
			t.Fatalf("IDs %d and %d share code %q", prev, id, c)
		}
		seen[c] = id
	}
	notID := 0
	for n := uint64(1); n < 2000; n++ {
		if _, err := testCodec.ID(Encode(n << 52)); errors.Is(err, ErrNotACode) {
			notID++
		}
	}
	if notID == 0 {
		t.Error("every sampled code mapped to an ID; half of all 64-bit numbers should not")
	}
}
