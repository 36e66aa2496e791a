package analytics

import (
	"fmt"

	"github.com/axiomhq/hyperloglog"
)

// Sketch estimates how many distinct visitors it was given: a
// HyperLogLog of 2^14 registers (precision 14, standard error about
// 0.81%), sparse while small, so a link-hour with a few visitors costs
// bytes rather than the dense 16 KiB. Its state only grows by maxima:
// adding a visitor twice, or merging the same sketch twice, changes
// nothing, so a batch shipped again after a crash cannot over-count.
// A Sketch is not safe for concurrent use (Estimate compacts it too).
type Sketch struct{ s *hyperloglog.Sketch }

// NewSketch returns an empty Sketch.
func NewSketch() *Sketch { return &Sketch{s: hyperloglog.New14()} }

// Add counts visitor, a Dims.Visitor: already a uniform 64-bit hash, it
// is used as is rather than hashed again. 0 (unknown) is not counted.
func (s *Sketch) Add(visitor uint64) {
	if visitor != 0 {
		s.s.InsertHash(visitor)
	}
}

// Merge adds o's visitors to s. Merging is idempotent, commutative and
// associative: sketches may be merged in any order, any number of times.
func (s *Sketch) Merge(o *Sketch) error {
	if o == nil {
		return nil
	}
	if err := s.s.Merge(o.s); err != nil {
		return fmt.Errorf("merge sketch: %w", err)
	}
	return nil
}

// Estimate returns the estimated number of distinct visitors.
func (s *Sketch) Estimate() uint64 { return s.s.Estimate() }

// MarshalBinary encodes s (hyperloglog's own format, versioned by its
// first byte; tens of bytes for a few visitors, at most about 16 KiB).
// Two sketches with the same visitors may encode differently: compare
// estimates, never encodings.
func (s *Sketch) MarshalBinary() ([]byte, error) { return s.s.MarshalBinary() }

// UnmarshalSketch decodes a Sketch MarshalBinary encoded.
func UnmarshalSketch(b []byte) (*Sketch, error) {
	s := &Sketch{s: new(hyperloglog.Sketch)}
	if err := s.s.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("unmarshal sketch: %w", err)
	}
	return s, nil
}
