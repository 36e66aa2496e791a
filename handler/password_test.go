package handler

import (
	"strings"
	"testing"
)

// TestPassword hashes passwords of every length allowed, bcrypt's 72-byte
// limit and a NUL included, and checks that only the same password
// matches.
func TestPassword(t *testing.T) {
	long := strings.Repeat("p", maxPassword)
	for _, tt := range []struct {
		name, pw string
		others   []string
	}{
		{"short", "a", []string{"A", "", "a "}},
		{"differs past byte 72", long, []string{long[:72], long[:127] + "q"}},
		{"with a NUL", "ab\x00cd", []string{"ab", "ab\x00ce"}},
		{"not ASCII", "pässwörd", []string{"passwort"}},
	} {
		if err := validatePassword(tt.pw); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		hash, err := hashPassword(tt.pw)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !strings.HasPrefix(hash, "$2a$10$") {
			t.Errorf("%s: hash %q is not bcrypt at cost 10", tt.name, hash)
		}
		if !passwordMatches(hash, tt.pw) {
			t.Errorf("%s: the password does not match its hash", tt.name)
		}
		for _, o := range tt.others {
			if passwordMatches(hash, o) {
				t.Errorf("%s: %q matches too", tt.name, o)
			}
		}
	}
	for _, pw := range []string{"", long + "x"} {
		if err := validatePassword(pw); err == nil || toHTTP(err).Field != "password" {
			t.Errorf("a password of %d bytes: got %v, want an error about password", len(pw), err)
		}
	}
	if passwordMatches("", "") || passwordMatches("not a hash", "x") {
		t.Error("no hash matches nothing")
	}
}
