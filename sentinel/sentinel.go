// Package sentinel owns the way into Redis through Sentinel: the go-redis
// failover clients and their options, the circuit breaker in front of
// each, the breakers' metrics, and the clients of the sentinels
// themselves. The packages that keep data in Redis (cache, trending) build
// what they need from one Config and keep only their own logic.
//
// The rules come from field reports on Redis outages:
//   - Every Redis call carries its own short deadline and go-redis honours
//     it on the socket (ContextTimeoutEnabled). A breaker or a timeout
//     wrapper alone cannot unblock a read on a frozen master's socket.
//   - go-redis does not retry: one call pays at most one deadline.
//   - A miss (redis.Nil) is an answer, not a failure.
//   - Each Client has a breaker of its own, so a sick route (the master,
//     the replicas, one consumer's traffic) never closes another's door.
//
// The go-redis types this package hands out (*redis.Client in a Run
// callback or from Client.Redis) are for the packages that talk to Redis
// and go no further: no handler or main ever holds one.
package sentinel

import (
	"errors"
	"time"

	"shortener"
)

// Config is how to reach the Sentinel group and how the breakers judge
// it. The defaults live with the configuration (cmd/shortener); a zero
// here is a wiring mistake, not a request for a default.
type Config struct {
	MasterName    string
	SentinelAddrs []string
	Password      string // of the Redis nodes (their requirepass)
	// SentinelPassword is the sentinels' own, which may differ.
	SentinelPassword string

	// Timeout is the deadline of each Redis call, dial included. Keep it
	// in tens of milliseconds: it is the most a call pays for a frozen
	// node before the breaker opens.
	Timeout time.Duration
	// PoolSize bounds each client's connections.
	PoolSize int

	// A breaker opens when BreakerFailures of the last BreakerWindow
	// calls failed, stays open for BreakerDelay, then lets
	// BreakerSuccesses trial calls through; all must succeed to close.
	BreakerFailures  uint
	BreakerWindow    uint
	BreakerDelay     time.Duration
	BreakerSuccesses uint
}

// Validate reports every setting the clients and breakers cannot work
// with, all at once, each a *shortener.SettingError naming its field.
func (c Config) Validate() error {
	var errs []error
	if c.MasterName == "" {
		errs = append(errs, shortener.Invalid("MasterName", "is required"))
	}
	if len(c.SentinelAddrs) == 0 {
		errs = append(errs, shortener.Invalid("SentinelAddrs", "are required: at least one sentinel address"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, shortener.Invalid("Timeout", "must be positive, got %s", c.Timeout))
	}
	if c.PoolSize < 1 {
		errs = append(errs, shortener.Invalid("PoolSize", "must be positive, got %d", c.PoolSize))
	}
	if c.BreakerDelay <= 0 {
		errs = append(errs, shortener.Invalid("BreakerDelay", "must be positive, got %s", c.BreakerDelay))
	}
	if c.BreakerFailures < 1 {
		errs = append(errs, shortener.Invalid("BreakerFailures", "must be at least 1, got %d", c.BreakerFailures))
	} else if c.BreakerWindow < c.BreakerFailures {
		errs = append(errs, shortener.Invalid("BreakerWindow", "must be at least the breaker failures (%d), got %d", c.BreakerFailures, c.BreakerWindow))
	}
	if c.BreakerSuccesses < 1 {
		errs = append(errs, shortener.Invalid("BreakerSuccesses", "must be at least 1, got %d", c.BreakerSuccesses))
	}
	return errors.Join(errs...)
}
