package stack

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestEnsureSecret: a secret is 48 hex digits readable by its owner only,
// made once and kept by later calls, which put its mode right.
func TestEnsureSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), RedisPasswordFile)
	if err := EnsureSecret(path); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{48}\n$`).Match(first) {
		t.Errorf("secret: got %q, want 48 hex digits", first)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode: got %v, want 0600", fi.Mode().Perm())
	}
	os.Chmod(path, 0o644)
	if err := EnsureSecret(path); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, first) {
		t.Errorf("secret changed on the second call: %q, then %q", first, again)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode after the second call: got %v, want 0600", fi.Mode().Perm())
	}
	if got, err := readSecret(path); err != nil || got+"\n" != string(first) {
		t.Errorf("readSecret: got %q, %v, want %q", got, err, bytes.TrimSpace(first))
	}
	if got, err := readSecret(path + ".none"); err != nil || got != "" {
		t.Errorf("readSecret of no file: got %q, %v, want \"\", nil", got, err)
	}
}
