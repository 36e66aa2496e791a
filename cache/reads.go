package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"shortener/sentinel"
)

// Lookups that reach Redis at the same time share round trips. A round
// trip over TCP costs the app and Redis a write and a read system call
// each and a wake-up on both sides, whatever it carries; on a loaded host
// that is most of a Redis hit's CPU (BenchmarkLookupRedis), and a long
// tail of links makes nearly every redirect a Redis hit.
//
// So a lookup sends its key itself, as a GET, when fewer than readLanes
// round trips are in flight; otherwise it queues. A lookup whose answer
// comes back hands the queue, up to maxReadKeys keys, to the first
// lookup in it, which sends them as one MGET, and then wakes the lookups
// it answered. No goroutine of its own and no hand-off when lookups do
// not overlap (a hand-off to lane goroutines tripled the CPU of a lone
// lookup: BenchmarkLookupRedis/serial). A queued lookup waits for the
// round trips ahead of it (one, unless more than maxReadKeys lookups
// queued before it), and within its own deadline: an
// MGET is due by the earliest deadline of the lookups it carries. An
// MGET takes one permit of the read breaker, and its outcome counts once
// per key while the breaker is closed (sentinel.RunN): a dead replica
// opens it after as many failed lookups as before.

const (
	// readLanes is how many round trips of lookups may be in flight at
	// once. Two rather than four: a uniform tail redirect cost 207-220 µs
	// of CPU against 228-239 in interleaved bench rows, its p99 lower too
	// (docs/bench/findings.md).
	readLanes = 2
	// maxReadKeys bounds the keys of one MGET.
	maxReadKeys = 64
)

// readCall is one lookup: its key and, once done is signalled, either its
// answer or, with lead set, the batch it is to send.
type readCall struct {
	key  string
	val  string
	res  string    // resultHit, resultMiss, resultError or resultSkipped
	err  error     // why, with resultError
	due  time.Time // the lookup's deadline
	lead []*readCall
	done chan struct{}
}

var readCalls = sync.Pool{New: func() any { return &readCall{done: make(chan struct{}, 1)} }}

// errShortReply is an MGET that answered fewer values than it was asked.
var errShortReply = errors.New("redis: MGET answered fewer values than keys")

// errQueueTimeout answers a lookup whose deadline passed while it queued
// behind MGETs that hung: it is not sent.
var errQueueTimeout = errors.New("redis: lookup deadline passed while queued")

// reads batches lookups into MGETs on the replicas' client.
type reads struct {
	client  *sentinel.Client
	timeout time.Duration // each lookup's deadline, its wait in the queue included
	keys    func(n int)   // observes each MGET's key count (metrics)

	mu       sync.Mutex
	inflight int         // MGETs sent and not yet handed on
	queue    []*readCall // lookups waiting for an MGET
}

func newReads(client *sentinel.Client, timeout time.Duration, keys func(n int)) *reads {
	return &reads{client: client, timeout: timeout, keys: keys}
}

// get reads key from a replica for a lookup that began at began, which
// its deadline counts from. res is resultHit (val is the value),
// resultMiss, resultError (err says why) or resultSkipped (the read
// breaker refused).
func (r *reads) get(key string, began time.Time) (val, res string, err error) {
	c := readCalls.Get().(*readCall)
	c.key, c.due = key, began.Add(r.timeout)
	r.mu.Lock()
	if r.inflight < readLanes {
		// The queue is empty: a lookup queues only while every lane is
		// in flight, and a lane is given back only with the queue empty.
		r.inflight++
		r.mu.Unlock()
		r.send([]*readCall{c})
	} else {
		r.queue = append(r.queue, c)
		r.mu.Unlock()
		<-c.done
		if c.lead != nil {
			r.send(c.lead)
		}
	}
	val, res, err = c.val, c.res, c.err
	*c = readCall{done: c.done}
	readCalls.Put(c)
	return val, res, err
}

// take removes up to maxReadKeys lookups from the queue (r.mu held).
func (r *reads) take() []*readCall {
	n := min(len(r.queue), maxReadKeys)
	batch := make([]*readCall, n)
	copy(batch, r.queue)
	r.queue = append(r.queue[:0], r.queue[n:]...)
	return batch
}

// send sends batch as one MGET, hands the queue on (or gives back the
// in-flight slot) and wakes the lookups of batch but the caller, which
// is batch's last.
func (r *reads) send(batch []*readCall) {
	r.mget(batch)
	r.mu.Lock()
	if len(r.queue) > 0 {
		next := r.take()
		r.mu.Unlock()
		leader := next[len(next)-1]
		leader.lead = next
		leader.done <- struct{}{}
	} else {
		r.inflight--
		r.mu.Unlock()
	}
	for _, c := range batch[:len(batch)-1] {
		c.done <- struct{}{}
	}
}

// mget answers batch's lookups with one MGET of their keys, due by the
// earliest of their deadlines: a lookup waits one deadline in all, its
// time in the queue included. Those whose deadline passed in the queue
// are answered with an error and not sent.
func (r *reads) mget(batch []*readCall) {
	now := time.Now()
	var due time.Time
	expired := 0
	for _, c := range batch {
		switch {
		case !now.Before(c.due):
			c.res, c.err = resultError, errQueueTimeout
			expired++
		case due.IsZero() || c.due.Before(due):
			due = c.due
		}
	}
	if expired > 0 {
		live := make([]*readCall, 0, len(batch)-expired)
		for _, c := range batch {
			if c.err == nil {
				live = append(live, c)
			}
		}
		if batch = live; len(batch) == 0 {
			return
		}
	}
	if !r.client.Breaker().Allow() {
		for _, c := range batch {
			c.res = resultSkipped
		}
		return
	}
	r.keys(len(batch))
	if len(batch) == 1 {
		// A lone key: GET, whose reply is cheaper to read than an
		// MGET's array.
		c := batch[0]
		val, err := sentinel.RunN(context.Background(), r.client, 1, due, func(ctx context.Context, rdb *redis.Client) (string, error) {
			return rdb.Get(ctx, c.key).Result()
		})
		switch {
		case errors.Is(err, redis.Nil):
			c.res = resultMiss
		case err != nil:
			c.res, c.err = resultError, err
		default:
			c.res, c.val = resultHit, val
		}
		return
	}
	keys := make([]string, len(batch))
	for i, c := range batch {
		keys[i] = c.key
	}
	vals, err := sentinel.RunN(context.Background(), r.client, len(batch), due, func(ctx context.Context, rdb *redis.Client) ([]any, error) {
		return rdb.MGet(ctx, keys...).Result()
	})
	for i, c := range batch {
		switch {
		case err != nil:
			c.res, c.err = resultError, err
		case i >= len(vals):
			c.res, c.err = resultError, errShortReply
		default:
			if s, ok := vals[i].(string); ok {
				c.res, c.val = resultHit, s
			} else {
				c.res = resultMiss
			}
		}
	}
}
