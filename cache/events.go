package cache

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// watchSentinels listens to every sentinel's events until ctx ends. One
// sentinel would do, but any one may be down; acting on an event twice is
// harmless because each handler checks the breaker's state first.
func (c *Cache) watchSentinels(ctx context.Context) {
	done := make(chan struct{})
	for _, addr := range c.cfg.SentinelAddrs {
		go func() {
			defer func() { done <- struct{}{} }()
			c.watchSentinel(ctx, addr)
		}()
	}
	for range c.cfg.SentinelAddrs {
		<-done
	}
}

func (c *Cache) watchSentinel(ctx context.Context, addr string) {
	sc := redis.NewSentinelClient(&redis.Options{
		Addr:        addr,
		Password:    c.cfg.Password,
		DialTimeout: c.cfg.Timeout * 4,
		MaxRetries:  -1,
	})
	defer sc.Close()
	ps := sc.Subscribe(ctx, "+switch-master", "+odown")
	defer ps.Close()
	// The channel reconnects on its own, pinging to notice a dead peer.
	ch := ps.Channel(redis.WithChannelHealthCheckInterval(2*time.Second), redis.WithChannelSize(64))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			c.onSentinelEvent(msg.Channel, msg.Payload)
		}
	}
}

// onSentinelEvent moves the breakers ahead of what timeouts would show:
//
//   - "+switch-master <name> <old ip> <old port> <new ip> <new port>": a
//     replica was promoted; return to Redis now instead of waiting out the
//     breakers' delay. If the new master is not reachable after all, the
//     breakers open again on the failures, and lookups fall back to MySQL.
//   - "+odown master <name> <ip> <port> ...": the sentinels agree the
//     master is down; stop sending writes before their timeouts pile up.
//     Reads stay on the replicas, which still answer.
func (c *Cache) onSentinelEvent(channel, payload string) {
	f := strings.Fields(payload)
	switch {
	case channel == "+switch-master" && len(f) >= 5 && f[0] == c.cfg.MasterName:
		c.m.events.WithLabelValues("switch_master").Inc()
		c.log.Info("sentinel: new master", "old", f[1]+":"+f[2], "new", f[3]+":"+f[4])
		for _, n := range []*node{c.write, c.read} {
			if !n.breaker.IsClosed() {
				n.breaker.Close()
			}
		}
	case channel == "+odown" && len(f) >= 4 && f[0] == "master" && f[1] == c.cfg.MasterName:
		c.m.events.WithLabelValues("odown").Inc()
		c.log.Warn("sentinel: master objectively down", "master", f[2]+":"+f[3])
		if c.write.breaker.IsClosed() {
			c.write.breaker.Open()
		}
	}
}
