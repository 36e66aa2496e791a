package idgen

import (
	"errors"
	"testing"
)

// FuzzDecode checks that Decode accepts exactly the canonical codes:
// whatever it accepts, Encode writes back identically; what it rejects is
// ErrInvalidCode. The codec must then round-trip or say ErrNotACode.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"0", "z", "10", "AzL8n0Y58m7", "LygHa16AHYF", "LygHa16AHYG", "00", "", "a-b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Decode(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidCode) {
				t.Fatalf("Decode(%q) error %v is not ErrInvalidCode", s, err)
			}
			return
		}
		if back := Encode(n); back != s {
			t.Fatalf("Decode(%q) = %d, which encodes as %q", s, n, back)
		}
		id, err := testCodec.ID(s)
		switch {
		case errors.Is(err, ErrNotACode):
		case err != nil:
			t.Fatalf("codec ID(%q): %v", s, err)
		case id < 0 || testCodec.Code(id) != s:
			t.Fatalf("codec ID(%q) = %d, whose code is %q", s, id, testCodec.Code(id))
		}
	})
}
