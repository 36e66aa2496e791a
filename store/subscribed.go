package store

import (
	"sync"
	"time"
)

// A create reads whether its owner has a webhook subscribed to creates
// before it chooses between a plain insert and a transaction with the
// event (Create, insertBatch). That read was a second round trip and a
// second statement for MySQL on every create, for an answer that changes
// only when a webhook is made. subscribedCache keeps the answer for ttl.
//
// What keeps the promise "a webhook gets the events of changes that
// begin after its 201" (docs/api.md) is that CreateWebhook answers only
// ttl after its commit. An answer cached at t0, timed before its read
// began, is used until t0+ttl. A create that begins after the 201 began
// after commit+ttl; if it used an answer cached at t0, then t0+ttl is
// later still, so t0 is after the commit: the read behind that answer
// saw the webhook. Every instance must use the same ttl (the default).
// An answer that is stale the other way (a webhook deleted) costs only
// the transaction, which reads the webhooks again (recordLinkEvents).
type subscribedCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]subscribedEntry // by owner
}

type subscribedEntry struct {
	yes bool
	at  time.Time // when the read behind it began
}

// DefaultSubscribedTTL is how long a create trusts a cached "does this
// owner have a webhook subscribed to creates", and so how long after its
// commit CreateWebhook answers.
const DefaultSubscribedTTL = time.Second

// subscribedMax bounds the owners remembered; when full, all are
// forgotten (each costs one read again).
const subscribedMax = 10000

func newSubscribedCache(ttl time.Duration) *subscribedCache {
	return &subscribedCache{ttl: ttl, m: map[string]subscribedEntry{}}
}

// get returns owner's answer if one was read within ttl of now.
func (c *subscribedCache) get(owner string, now time.Time) (yes, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, found := c.m[owner]
	if !found || now.Sub(e.at) >= c.ttl {
		return false, false
	}
	return e.yes, true
}

// put records owner's answer, read by a query that began at at.
func (c *subscribedCache) put(owner string, yes bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= subscribedMax {
		clear(c.m)
	}
	c.m[owner] = subscribedEntry{yes: yes, at: at}
}
