package sentinel

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Subscriptions hold a connection of their own, which go-redis
// re-establishes after a failure (or, through Sentinel, on the new
// master), pinging every pubSubHealthCheck to notice a dead peer.
const pubSubHealthCheck = 2 * time.Second

// subscribeBuffer is how many messages a Client's subscription holds for
// a slow receiver: a burst of announcements (creates, deletes) must not
// stall the connection.
const subscribeBuffer = 1024

// Subscribe hands the payload of every message published on channel
// through the client's node to fn, until ctx ends. Messages published
// while the subscription was down are lost: resubscribed, if not nil, is
// called each time it is re-established after the first, so the caller
// can drop what it may have missed.
func (c *Client) Subscribe(ctx context.Context, channel string, fn func(payload string), resubscribed func()) {
	ps := c.rdb.Subscribe(ctx, channel)
	defer ps.Close()
	receive(ctx, ps, subscribeBuffer, func(_, payload string) { fn(payload) }, resubscribed)
}

// receive hands ps's messages to fn, and calls resubscribed (if not nil)
// on every subscription after the first, until ctx ends.
func receive(ctx context.Context, ps *redis.PubSub, size int, fn func(channel, payload string), resubscribed func()) {
	ch := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(pubSubHealthCheck), redis.WithChannelSize(size))
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					if !first && resubscribed != nil {
						resubscribed()
					}
					first = false
				}
			case *redis.Message:
				fn(m.Channel, m.Payload)
			}
		}
	}
}
