package cache

import (
	"context"
	"net"
	"strings"
	"time"
)

// watchSentinels acts on every sentinel's failover events until ctx
// ends. Acting on an event twice (once per sentinel that saw it) is
// harmless because each handler checks the breaker's state first.
func (c *Cache) watchSentinels(ctx context.Context) {
	c.sentinels.Watch(ctx, c.onSentinelEvent, "+switch-master", "+odown")
}

// onSentinelEvent moves the breakers ahead of what timeouts would show:
//
//   - "+switch-master <name> <old ip> <old port> <new ip> <new port>": a
//     replica was promoted. Reads go back to the replicas at once. Writes
//     go back once the write client reaches a master (followMaster): the
//     event can reach this instance from one sentinel while go-redis still
//     asks another that has not heard of it yet, and a write breaker closed
//     then would reopen on the old master's failures and wait out its
//     whole delay again.
//   - "+odown master <name> <ip> <port> ...": the sentinels agree the
//     master is down; stop sending writes before their timeouts pile up.
//     Reads stay on the replicas, which still answer. The exception is a
//     master promoted moments ago that answers a PING of its own: freshly
//     reset sentinel links sometimes judge a new master down for a moment
//     (a ping period after the switch), and a write breaker opened on that
//     would send fills to MySQL's fallback for a whole delay for nothing.
func (c *Cache) onSentinelEvent(ctx context.Context, channel, payload string) {
	f := strings.Fields(payload)
	switch {
	case channel == "+switch-master" && len(f) >= 5 && f[0] == c.cfg.Redis.MasterName:
		c.m.events.WithLabelValues("switch_master").Inc()
		addr := net.JoinHostPort(f[3], f[4])
		c.log.Info("sentinel: new master", "old", net.JoinHostPort(f[1], f[2]), "new", addr)
		c.promoted.Store(&promotion{addr: addr, at: c.now()})
		if !c.read.Breaker().IsClosed() {
			c.read.Breaker().Close()
		}
		if !c.write.Breaker().IsClosed() && c.following.CompareAndSwap(false, true) {
			go func() {
				defer c.following.Store(false)
				c.followMaster(ctx)
			}()
		}
	case channel == "+odown" && len(f) >= 4 && f[0] == "master" && f[1] == c.cfg.Redis.MasterName:
		c.m.events.WithLabelValues("odown").Inc()
		addr := net.JoinHostPort(f[2], f[3])
		if c.justPromoted(addr) && c.cfg.Redis.Ping(ctx, addr) == nil {
			c.log.Info("sentinel: a master promoted moments ago announced down, but it answers; writes go on", "master", addr)
			return
		}
		c.log.Warn("sentinel: master objectively down", "master", addr)
		if c.write.Breaker().IsClosed() {
			c.write.Breaker().Open()
		}
	}
}

// promotion is the last +switch-master this instance heard.
type promotion struct {
	addr string
	at   time.Time
}

// promotionGrace is how long after a +switch-master an +odown of the new
// master is checked with a PING before it stops writes. Sentinel's false
// alarms come within about one ping period (1 s) of the switch; a real
// death later than this is acted on at once, as any other.
const promotionGrace = 5 * time.Second

func (c *Cache) justPromoted(addr string) bool {
	p := c.promoted.Load()
	return p != nil && p.addr == addr && c.now().Sub(p.at) < promotionGrace
}

// followMaster closes the write breaker once a ROLE through the write
// client comes back "master": go-redis has then switched to the new
// master (an old one that is back answers "slave" once Sentinel
// reconfigures it). It tries every Redis deadline until the breaker is
// closed (by this or by its own probes) or ctx ends.
func (c *Cache) followMaster(ctx context.Context) {
	t := time.NewTicker(c.cfg.Redis.Timeout)
	defer t.Stop()
	for !c.write.Breaker().IsClosed() {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.Redis.Timeout)
		role, err := c.write.Redis().Do(rctx, "ROLE").Slice()
		cancel()
		if err == nil && len(role) > 0 && role[0] == "master" {
			c.write.Breaker().Close()
			c.log.Info("write client reached the new master; writes go on")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
