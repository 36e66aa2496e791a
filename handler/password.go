package handler

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// A link's password is kept as a slow, salted hash: bcrypt at cost 10
// (about 70 ms of one core on the machines this runs on), from
// golang.org/x/crypto, already in the module graph. bcrypt rather than
// argon2id because every check of a password link's form costs its
// parameters on the redirect instance: argon2id's memory cost (tens of
// MiB per check, to be worth having) would let a flood of wrong guesses
// take an instance's memory, where bcrypt's 4 KiB cannot.
const (
	passwordCost = 10
	maxPassword  = 128 // bytes
)

// passwordInput is what bcrypt is given for a password: its SHA-256 in
// base64 (44 bytes). bcrypt reads at most 72 bytes (x/crypto refuses
// more) and stops at a NUL, so a 128-byte password, or one that differs
// only past byte 72, would otherwise be refused or confused.
func passwordInput(pw string) []byte {
	sum := sha256.Sum256([]byte(pw))
	out := make([]byte, base64.StdEncoding.EncodedLen(len(sum)))
	base64.StdEncoding.Encode(out, sum[:])
	return out
}

// validatePassword checks a password to set: 1 to 128 bytes.
func validatePassword(pw string) error {
	if pw == "" || len(pw) > maxPassword {
		return fieldErrorf(CodeInvalidRequest, "password", "password must be 1 to %d bytes, got %d", maxPassword, len(pw))
	}
	return nil
}

// hashPassword returns the stored form of pw, which must be valid
// (validatePassword).
func hashPassword(pw string) (string, error) {
	hash, err := bcrypt.GenerateFromPassword(passwordInput(pw), passwordCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(hash), nil
}

// passwordMatches reports whether pw is the password whose stored form
// (hashPassword) is hash. Every check of a link's password must go
// through it: bcrypt.CompareHashAndPassword on the raw password never
// matches.
func passwordMatches(hash, pw string) bool {
	if hash == "" || len(pw) > maxPassword {
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), passwordInput(pw)) == nil
}

// passwordFingerprint stands for pw in an Idempotency-Key's request hash:
// a retry must be told from a request with another password, but the
// idempotency table must not hold a fast, unsalted hash of a password.
// An HMAC under the server secret is neither guessable offline nor
// different between instances.
func (h *Handler) passwordFingerprint(pw string) string {
	m := hmac.New(sha256.New, append([]byte("shortener: password fingerprint\x00"), h.cookieSecret...))
	m.Write([]byte(pw))
	return hex.EncodeToString(m.Sum(nil))
}
