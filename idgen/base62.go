package idgen

import (
	"errors"
	"fmt"
)

// alphabet orders digits, then upper case, then lower case, so that codes
// of equal length sort like the numbers they encode.
const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// maxLen is the length of the largest uint64 in base62.
const maxLen = 11

// ErrInvalidCode is returned by Decode for a string that is not a canonical
// base62 code of a 64-bit number.
var ErrInvalidCode = errors.New("idgen: invalid code")

var decodeMap = func() (m [256]int8) {
	for i := range m {
		m[i] = -1
	}
	for i := 0; i < len(alphabet); i++ {
		m[alphabet[i]] = int8(i)
	}
	return m
}()

// Encode writes n in base62 without padding.
func Encode(n uint64) string {
	if n == 0 {
		return "0"
	}
	var buf [maxLen]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = alphabet[n%62]
		n /= 62
	}
	return string(buf[i:])
}

// Decode parses a code written by Encode. It rejects empty input, foreign
// characters, leading zeros (so every number has exactly one code) and
// values that overflow 64 bits.
func Decode(s string) (uint64, error) {
	if s == "" || len(s) > maxLen || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%w: %q", ErrInvalidCode, s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d := decodeMap[s[i]]
		if d < 0 {
			return 0, fmt.Errorf("%w: %q", ErrInvalidCode, s)
		}
		hi := n * 62
		if hi/62 != n || hi+uint64(d) < hi {
			return 0, fmt.Errorf("%w: %q overflows 64 bits", ErrInvalidCode, s)
		}
		n = hi + uint64(d)
	}
	return n, nil
}
