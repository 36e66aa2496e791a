package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// A node that may hold data older than a delete must never answer a read
// of the deleted code unchecked. The case that bit: a delete made while
// the master was black-holed reaches the new master after a failover; the
// old master is healed and rejoins as a replica, and until its resync
// completes it answers reads from its old dataset, deleted links included.
// So an invalidation record stays in the outbox, and its code bypasses
// Redis on every instance, until every replica Sentinel knows of (down
// ones included, which is where a partitioned old master is listed) has
// acknowledged the DEL (WAIT on the connection that sent it). A node that
// is down keeps its deletes pending until it is back and synced; one
// removed for good must be forgotten by Sentinel (SENTINEL RESET).

// sendAndWait deletes codes from Redis and announces them, like send, and
// then waits (briefly) for the replicas to acknowledge: it reports whether
// Redis took them and whether all want replicas applied them.
//
// Only the transaction counts for the write breaker. A WAIT that times out
// is an answer (a replica has not applied the DELs yet: a frozen or
// partitioned node, which is what it is there to notice), not a failure of
// the master; counting it, with the WAIT eating half the deadline, made
// every replay fail on a busy machine while a replica was away, which
// opened the write breaker for fills and deletes too.
func (c *Cache) sendAndWait(ctx context.Context, codes []string, want int) (sent, applied bool) {
	// One connection for both: WAIT counts the writes of its own
	// connection.
	conn := c.write.Redis().Conn()
	defer conn.Close()
	if !c.deliver(ctx, codes, func(ctx context.Context, _ *redis.Client) ([]redis.Cmder, error) {
		return conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
			c.queueInvalidations(ctx, p, codes)
			return nil
		})
	}) {
		return false, false
	}
	if want == 0 {
		return true, true
	}
	// The replicas get half a deadline (on a healthy link they answer
	// within a millisecond or two); the call gets a whole one on top.
	wait := max(time.Millisecond, c.cfg.Redis.Timeout/2)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+c.cfg.Redis.Timeout)
	defer cancel()
	acked, err := conn.Do(wctx, "WAIT", want, wait.Milliseconds()).Int64()
	if err != nil {
		c.log.Debug("wait for replicas", "err", err)
		return true, false
	}
	return true, acked >= int64(want)
}
