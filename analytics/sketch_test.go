package analytics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSketchEstimate: the estimate of n distinct visitors is within four
// standard errors (1.04/√2^14, 0.81%) of n; adding them again changes
// nothing, and 0 (unknown) is not a visitor.
func TestSketchEstimate(t *testing.T) {
	for _, n := range []int{10_000, 100_000} {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		s := NewSketch()
		vs := make([]uint64, n)
		for i := range vs {
			vs[i] = r.Uint64() | 1 // as Dims.Visitor
			s.Add(vs[i])
		}
		for _, v := range vs[:n/2] {
			s.Add(v)
		}
		s.Add(0)
		got := s.Estimate()
		e := math.Abs(float64(got)-float64(n)) / float64(n)
		if e > 4*1.04/math.Sqrt(1<<14) {
			t.Errorf("%d visitors: estimate %d, error %.2f%%, want within %.2f%%", n, got, 100*e, 400*1.04/math.Sqrt(1<<14))
		}
		t.Logf("%d visitors: estimate %d (%.2f%% off)", n, got, 100*e)
	}
	if got := NewSketch().Estimate(); got != 0 {
		t.Errorf("empty: got %d, want 0", got)
	}
}

// TestSketchMerge: merging is a union, and merging the same sketch again
// (a batch shipped twice) changes nothing, in the sparse form (a few
// visitors) and the dense one (many).
func TestSketchMerge(t *testing.T) {
	for _, n := range []int{50, 50_000} {
		r := rand.New(rand.NewPCG(uint64(n), 9))
		a, b, all := NewSketch(), NewSketch(), NewSketch()
		for i := range 2 * n {
			v := r.Uint64() | 1
			if i%2 == 0 {
				a.Add(v)
			} else {
				b.Add(v)
			}
			if i%3 == 0 { // a visitor both saw
				a.Add(v)
				b.Add(v)
			}
			all.Add(v)
		}
		if err := a.Merge(b); err != nil {
			t.Fatal(err)
		}
		once := a.Estimate()
		if want := all.Estimate(); once != want {
			t.Errorf("%d: merged estimate %d, want the union's %d", n, once, want)
		}
		for range 2 {
			if err := a.Merge(b); err != nil {
				t.Fatal(err)
			}
		}
		if got := a.Estimate(); got != once {
			t.Errorf("%d: merged again: estimate %d, want %d", n, got, once)
		}
		if err := a.Merge(nil); err != nil || a.Estimate() != once {
			t.Errorf("%d: merging nil: %v, estimate %d, want %d", n, err, a.Estimate(), once)
		}
	}
}

// TestSketchMarshal: a sketch decoded from its encoding estimates the
// same and merges the same; junk does not decode.
func TestSketchMarshal(t *testing.T) {
	for _, n := range []int{0, 3, 20_000} {
		r := rand.New(rand.NewPCG(uint64(n), 11))
		s := NewSketch()
		for range n {
			s.Add(r.Uint64() | 1)
		}
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalSketch(b)
		if err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		if got.Estimate() != s.Estimate() {
			t.Errorf("%d visitors, %d bytes: decoded estimate %d, want %d", n, len(b), got.Estimate(), s.Estimate())
		}
		if err := got.Merge(s); err != nil || got.Estimate() != s.Estimate() {
			t.Errorf("%d: merged with its original: %v, estimate %d, want %d", n, err, got.Estimate(), s.Estimate())
		}
		t.Logf("%d visitors: %d bytes", n, len(b))
	}
	for _, junk := range [][]byte{nil, {1, 2, 3}, {9, 14, 0, 0, 0, 0, 0, 0}} {
		if _, err := UnmarshalSketch(junk); err == nil {
			t.Errorf("%v: decoded, want an error", junk)
		}
	}
}
