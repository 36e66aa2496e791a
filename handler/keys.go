package handler

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"shortener"
	"sync"
	"sync/atomic"
	"time"
)

// Authorizer tells who an API key belongs to.
type Authorizer interface {
	// Identify returns the caller that key identifies. An unknown or
	// revoked key is ErrUnknownKey; shortener.ErrUnavailable means no key
	// list was ever loaded, so no key can be checked.
	Identify(ctx context.Context, key string) (shortener.Caller, error)
	// IdentifyHash is Identify for a key known by its hash (HashKey): the
	// pages' cookie keeps only that.
	IdentifyHash(ctx context.Context, hash string) (shortener.Caller, error)
}

// ErrUnknownKey means an API key is not known or was revoked.
var ErrUnknownKey = errors.New("handler: unknown or revoked API key")

// KeyStore lists the keys not revoked, by hash (HashKey).
type KeyStore interface {
	ActiveKeys(ctx context.Context) ([]shortener.APIKeyHash, error)
}

// HashKey is how an API key is stored: hex SHA-256. Keys are long random
// strings, so a fast hash is enough; nothing is gained from a slow one.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// staleKeys is how many refresh intervals the stored keys are trusted for
// after the last successful load. Everything a stored key may do needs
// MySQL anyway (create, delete, list, stats), so refusing it when MySQL
// has been out that long costs nothing but an earlier 503.
const staleKeys = 6

// keySet is one loaded list of keys and when it was read.
type keySet struct {
	keys   []shortener.APIKeyHash
	loaded time.Time
}

// Keyring identifies API keys against the stored hashes plus keys given in
// the configuration. A check never waits on the database: it uses the
// last list read, and when that is older than the refresh interval it
// starts one reload in the background (so a revoked key stops working
// within about the interval while MySQL answers, and a hung MySQL costs a
// check nothing). Until a list was loaded once, checks fail fast with
// shortener.ErrUnavailable; so do checks of stored keys once the list is
// older than staleKeys (MySQL unreachable for that long): a key revoked
// just before the outage must not go on working through it. Keys from
// the configuration always work. Every comparison runs in constant time
// and every known hash is compared, so timing tells nothing.
type Keyring struct {
	store   KeyStore
	static  []shortener.APIKeyHash
	refresh time.Duration
	now     func() time.Time
	log     *slog.Logger

	set       atomic.Pointer[keySet]
	reloading atomic.Bool
	wg        sync.WaitGroup
}

var _ Authorizer = (*Keyring)(nil)

// NewKeyring returns a Keyring over ks (may be nil: configured keys only),
// the given keys and admin keys.
func NewKeyring(ks KeyStore, keys, adminKeys []string, refresh time.Duration, now func() time.Time, log *slog.Logger) *Keyring {
	k := &Keyring{store: ks, refresh: refresh, now: now, log: log}
	for _, list := range []struct {
		keys  []string
		admin bool
	}{{keys, false}, {adminKeys, true}} {
		for _, s := range list.keys {
			if s != "" {
				k.static = append(k.static, shortener.APIKeyHash{Hash: HashKey(s), Admin: list.admin})
			}
		}
	}
	if ks == nil {
		k.set.Store(&keySet{})
	}
	return k
}

// Load reads the key list now, waiting for the store; start-up calls it
// once so the first requests find a list.
func (k *Keyring) Load(ctx context.Context) error {
	if k.store == nil {
		return nil
	}
	keys, err := k.store.ActiveKeys(ctx)
	if err != nil {
		return fmt.Errorf("load API keys: %w", err)
	}
	k.set.Store(&keySet{keys: keys, loaded: k.now()})
	return nil
}

// Wait waits for a background reload in progress; tests use it.
func (k *Keyring) Wait() { k.wg.Wait() }

// Identify returns the caller key belongs to.
func (k *Keyring) Identify(ctx context.Context, key string) (shortener.Caller, error) {
	hash := "" // no key: unknown
	if key != "" {
		hash = HashKey(key)
	}
	return k.IdentifyHash(ctx, hash)
}

// IdentifyHash returns the caller whose key hashes to hash.
func (k *Keyring) IdentifyHash(ctx context.Context, hash string) (shortener.Caller, error) {
	set := k.reload(ctx)
	if set == nil {
		return shortener.Caller{}, fmt.Errorf("identify API key: %w: key list not loaded yet", shortener.ErrUnavailable)
	}
	if hash == "" {
		return shortener.Caller{}, ErrUnknownKey
	}
	return k.match(set, hash)
}

// reload returns the last list read and, when it is older than the refresh
// interval, starts one reload in the background.
func (k *Keyring) reload(ctx context.Context) *keySet {
	set := k.set.Load()
	if k.store != nil && (set == nil || k.now().Sub(set.loaded) >= k.refresh) && k.reloading.CompareAndSwap(false, true) {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			defer k.reloading.Store(false)
			// Detached from the request: the store's own deadline bounds it.
			if err := k.Load(context.WithoutCancel(ctx)); err != nil && k.log != nil {
				k.log.Warn("API keys not reloaded; keeping the last list", "err", err)
			}
		}()
	}
	return set
}

// match finds hash among the stored keys of set and the configured ones.
func (k *Keyring) match(set *keySet, hash string) (shortener.Caller, error) {
	stored := set.keys
	stale := k.store != nil && k.now().Sub(set.loaded) >= staleKeys*k.refresh
	if stale {
		stored = nil // revocations since the last load are unknown
	}
	got := []byte(hash)
	var match shortener.APIKeyHash
	found := 0
	for _, list := range [][]shortener.APIKeyHash{stored, k.static} {
		for _, h := range list {
			eq := subtle.ConstantTimeCompare(got, []byte(h.Hash))
			if eq == 1 {
				match = h
			}
			found |= eq
		}
	}
	if found != 1 {
		if stale {
			return shortener.Caller{}, fmt.Errorf("identify API key: %w: the key list is %s old, revocations since are unknown",
				shortener.ErrUnavailable, k.now().Sub(set.loaded).Round(time.Second))
		}
		return shortener.Caller{}, ErrUnknownKey
	}
	return shortener.Caller{Owner: match.Hash, Admin: match.Admin}, nil
}
