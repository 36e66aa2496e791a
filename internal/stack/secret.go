package stack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The data tier's passwords, one file each in the state directory. The
// first Start there makes them and later Starts reuse them, so that what
// scripts and people have copied (redis-cli's REDISCLI_AUTH) keeps
// working. They never go into stack.json: every Stack reads them from
// these files (Start, Attach).
const (
	// RedisPasswordFile holds the password of every Redis node: their
	// requirepass and masterauth, and the sentinels' auth-pass.
	RedisPasswordFile = "redis-password"
	// SentinelPasswordFile holds the sentinels' own password (their
	// requirepass), which they also use with each other.
	SentinelPasswordFile = "sentinel-password"
)

// EnsureSecret writes a random secret (48 hex digits) to path, readable
// by its owner only, unless one is there already: a key or password
// that scripts and people have copied must survive a restart of the
// stack. A secret already there is kept, and its mode set to 0600.
// Package topology and cmd/stack make the apps' API and code keys with it.
func EnsureSecret(path string) error {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && strings.TrimSpace(string(b)) != "":
		err = os.Chmod(path, 0o600)
	case err == nil || errors.Is(err, fs.ErrNotExist):
		key := make([]byte, 24)
		rand.Read(key) // crypto/rand's Read never fails (it crashes the program instead)
		err = WriteFileAtomic(path, []byte(hex.EncodeToString(key)+"\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("secret %s: %w", filepath.Base(path), err)
	}
	return nil
}

// readSecret returns the secret in path without surrounding space, or ""
// when there is no such file: a stack started before its passwords
// existed can still be attached to and stopped, though no server of it
// can start again (configureRedis, configureSentinel).
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ensurePasswords makes the data tier's password files in dir unless
// they are there.
func ensurePasswords(dir string) error {
	for _, name := range []string{RedisPasswordFile, SentinelPasswordFile} {
		if err := EnsureSecret(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
