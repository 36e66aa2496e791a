package handler

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// Authorizer decides whether an API key may make management calls.
type Authorizer interface {
	Allow(ctx context.Context, key string) (bool, error)
}

// KeyStore lists the hashes (HashKey) of the keys not revoked.
type KeyStore interface {
	ActiveKeyHashes(ctx context.Context) ([]string, error)
}

// HashKey is how an API key is stored: hex SHA-256. Keys are long random
// strings, so a fast hash is enough; nothing is gained from a slow one.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Keyring authorises API keys against the stored hashes, reloaded at most
// once per refresh interval (so a revoked key stops working within it),
// plus keys given in the configuration. Every comparison runs in constant
// time and every known hash is compared, so timing tells nothing.
type Keyring struct {
	store   KeyStore
	static  []string
	refresh time.Duration
	now     func() time.Time

	mu     sync.Mutex
	hashes []string
	loaded time.Time
}

var _ Authorizer = (*Keyring)(nil)

// NewKeyring returns a Keyring over ks (may be nil) and the given keys.
func NewKeyring(ks KeyStore, staticKeys []string, refresh time.Duration, now func() time.Time) *Keyring {
	k := &Keyring{store: ks, refresh: refresh, now: now}
	for _, s := range staticKeys {
		if s != "" {
			k.static = append(k.static, HashKey(s))
		}
	}
	return k
}

// Allow reports whether key is a known, unrevoked key. An error means the
// stored keys could not be read and none were read before.
func (k *Keyring) Allow(ctx context.Context, key string) (bool, error) {
	if key == "" {
		return false, nil
	}
	hashes, err := k.current(ctx)
	if err != nil {
		return false, err
	}
	got := []byte(HashKey(key))
	ok := 0
	for _, list := range [][]string{hashes, k.static} {
		for _, h := range list {
			ok |= subtle.ConstantTimeCompare(got, []byte(h))
		}
	}
	return ok == 1, nil
}

func (k *Keyring) current(ctx context.Context) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.store == nil || (!k.loaded.IsZero() && k.now().Sub(k.loaded) < k.refresh) {
		return k.hashes, nil
	}
	hashes, err := k.store.ActiveKeyHashes(ctx)
	if err != nil {
		if k.loaded.IsZero() {
			return nil, err
		}
		return k.hashes, nil // keep the last good list while MySQL is away
	}
	k.hashes, k.loaded = hashes, k.now()
	return k.hashes, nil
}
