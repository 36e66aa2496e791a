package idgen

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// rounds of the Feistel network. Four rounds of a pseudo-random function
// make a strong pseudo-random permutation (Luby-Rackoff), but only up to
// about 2^16 known pairs for 32-bit halves; more rounds push that toward
// 2^32 (Patarin), at a SHA-256 per round per create. Codes issued under
// the earlier 4 rounds stay valid: a link is stored and found by its
// code, and nothing turns a code back into its ID; a new code that
// happens to equal an old one is refused by the database as taken, and
// the create draws another ID.
const rounds = 8

// DefaultKey is the code key used when none is configured. It hides the
// order of codes from a casual look, but anyone with the source can undo
// it: deployments set their own key.
const DefaultKey = "shortener-default-code-key-change-me"

// MinKeyLen is the shortest key accepted.
const MinKeyLen = 16

// Codec turns IDs into codes and back. A raw Snowflake code reveals when it
// was made and which codes were made next to it; the codec first passes
// the ID through a keyed bijective permutation of 64-bit numbers (a
// balanced Feistel network), so codes look random yet stay unique, then
// writes it in base62. Every instance must use the same key.
type Codec struct {
	key []byte
}

// NewCodec returns a Codec for key.
func NewCodec(key string) (Codec, error) {
	if len(key) < MinKeyLen {
		return Codec{}, fmt.Errorf("idgen: code key must be at least %d bytes, got %d", MinKeyLen, len(key))
	}
	return Codec{key: []byte(key)}, nil
}

// Code returns the code of id.
func (c Codec) Code(id int64) string { return Encode(c.permute(uint64(id))) }

// ErrNotACode is returned by ID for a well-formed code that no ID maps to.
var ErrNotACode = errors.New("idgen: code does not belong to an ID")

// ID returns the ID whose code is code.
func (c Codec) ID(code string) (int64, error) {
	n, err := Decode(code)
	if err != nil {
		return 0, err
	}
	id := c.unpermute(n)
	if id > 1<<63-1 {
		return 0, fmt.Errorf("%w: %q", ErrNotACode, code)
	}
	return int64(id), nil
}

// round is the Feistel round function: the first 32 bits of
// SHA-256(key || round || half).
func (c Codec) round(i int, half uint32) uint32 {
	var tail [5]byte
	tail[0] = byte(i)
	binary.BigEndian.PutUint32(tail[1:], half)
	h := sha256.New()
	h.Write(c.key)
	h.Write(tail[:])
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint32(h.Sum(sum[:0]))
}

func (c Codec) permute(x uint64) uint64 {
	l, r := uint32(x>>32), uint32(x)
	for i := range rounds {
		l, r = r, l^c.round(i, r)
	}
	return uint64(l)<<32 | uint64(r)
}

func (c Codec) unpermute(y uint64) uint64 {
	l, r := uint32(y>>32), uint32(y)
	for i := rounds - 1; i >= 0; i-- {
		l, r = r^c.round(i, l), l
	}
	return uint64(l)<<32 | uint64(r)
}
