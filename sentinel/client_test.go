package sentinel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
)

// newTestClient is a client of route for cfg whose breaker opens on the
// first failure and stays open for the test.
func newTestClient(tb testing.TB, cfg Config, route Route) *Client {
	tb.Helper()
	m, err := NewMetrics(prometheus.NewRegistry(), "test_breaker", "the test's breaker", "b")
	if err != nil {
		tb.Fatal(err)
	}
	cfg.BreakerFailures, cfg.BreakerWindow, cfg.BreakerSuccesses, cfg.BreakerDelay = 1, 1, 1, time.Hour
	c := NewClient(cfg, route, NewBreaker(cfg, "b", m, quietLog()))
	tb.Cleanup(func() { c.Close() })
	return c
}

// get runs a GET of key through c, which must let it through.
func get(tb testing.TB, c *Client, key string) (string, error) {
	tb.Helper()
	if !c.Breaker().Allow() {
		tb.Fatalf("breaker %s refused a call", c.Breaker().State())
	}
	return Run(context.Background(), c, func(ctx context.Context, r *redis.Client) (string, error) {
		return r.Get(ctx, key).Result()
	})
}

// TestRunFailureOpensBreaker: with no Sentinel to ask, a call fails at
// once and counts against the breaker.
func TestRunFailureOpensBreaker(t *testing.T) {
	c := newTestClient(t, testConfig(), Master)
	if _, err := get(t, c, "k"); err == nil {
		t.Fatal("GET through a closed port: got no error")
	}
	if got := c.Breaker().State(); got != "open" {
		t.Errorf("after a failure: got %s, want open", got)
	}
}

// TestRunNCountsEachCaller: a failed call that stands for n lookups counts
// n failures while the breaker is closed, so a breaker that opens after 5
// failed lookups opens after one failed call of 5 (and not after one of
// 4); a successful one counts n successes.
func TestRunNCountsEachCaller(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry(), "test_breaker", "the test's breaker", "b")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.BreakerFailures, cfg.BreakerWindow, cfg.BreakerSuccesses, cfg.BreakerDelay = 5, 10, 1, time.Hour
	c := NewClient(cfg, Master, NewBreaker(cfg, "b", m, quietLog()))
	t.Cleanup(func() { c.Close() })
	fail := errors.New("down")
	call := func(n int, err error) {
		t.Helper()
		if !c.Breaker().Allow() {
			t.Fatalf("breaker %s refused a call", c.Breaker().State())
		}
		RunN(context.Background(), c, n, time.Time{}, func(context.Context, *redis.Client) (int, error) { return 0, err }) //nolint:errcheck // the breaker is what is tested
	}
	call(4, fail)
	if got := c.Breaker().State(); got != "closed" {
		t.Fatalf("after one failed call of 4: %s, want closed", got)
	}
	call(6, nil) // 4 failures and 6 successes: the window of 10 is full, 40% failed
	if got := c.Breaker().State(); got != "closed" {
		t.Fatalf("after a successful call of 6: %s, want closed", got)
	}
	call(5, fail) // the last 10: 5 failures
	if got := c.Breaker().State(); got != "open" {
		t.Errorf("after a failed call of 5: %s, want open", got)
	}
}

// TestRunDetachesCancellation: a caller that hangs up does not cut the
// call short (it would count against Redis), and the call still has its
// own deadline.
func TestRunDetachesCancellation(t *testing.T) {
	c := newTestClient(t, testConfig(), Master)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Breaker().Allow()
	_, err := Run(ctx, c, func(ctx context.Context, _ *redis.Client) (time.Duration, error) {
		d, ok := ctx.Deadline()
		if ctx.Err() != nil || !ok {
			return 0, fmt.Errorf("ctx err %v, deadline %v", ctx.Err(), ok)
		}
		return time.Until(d), nil
	})
	if err != nil {
		t.Errorf("Run with a cancelled caller: %v", err)
	}
}

// TestOnStack runs the clients against real servers: a master, two
// replicas and three sentinels, every one with a password. The failover
// comes last: it moves the master.
func TestOnStack(t *testing.T) {
	s := stacktest.StartRedis(t) // a stack of its own: it fails the master over
	cfg := testConfig(func(c *Config) {
		c.MasterName, c.SentinelAddrs = s.MasterName(), s.SentinelAddrs()
		c.Password, c.SentinelPassword = s.RedisPassword(), s.SentinelPassword()
		// Generous: this checks what reaches Redis, not how fast.
		c.Timeout = 2 * time.Second
	})
	ctx := context.Background()

	t.Run("write on the master, read on a replica", func(t *testing.T) {
		master, replicas := newTestClient(t, cfg, Master), newTestClient(t, cfg, Replicas)
		if !master.Breaker().Allow() {
			t.Fatal("master breaker refused the first call")
		}
		if _, err := Run(ctx, master, func(ctx context.Context, r *redis.Client) (string, error) {
			return r.Set(ctx, "k", "v", time.Minute).Result()
		}); err != nil {
			t.Fatalf("SET on the master: %v", err)
		}
		// Replication is asynchronous: poll until a replica has it.
		poll.Until(t, "the SET on a replica", func() error {
			v, err := get(t, replicas, "k")
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("GET on a replica: %v", err)
			}
			if v != "v" {
				return fmt.Errorf("GET: got %q, %v; want v", v, err)
			}
			return nil
		})
		info, err := replicas.Redis().Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "role:slave") {
			t.Errorf("the Replicas route reached a node that is not a replica (%v): %q", err, info)
		}
	})

	t.Run("a miss is an answer", func(t *testing.T) {
		c := newTestClient(t, cfg, Master)
		// The breaker opens on one failure: a miss counted as one would
		// open it.
		for range 3 {
			if _, err := get(t, c, "no-such-key"); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET of a missing key: got %v, want redis.Nil", err)
			}
		}
		if got := c.Breaker().State(); got != "closed" {
			t.Errorf("after misses: got %s, want closed", got)
		}
	})

	t.Run("passwords", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			mod  func(*Config)
		}{
			{"wrong Redis password", func(c *Config) { c.Password = "wrong" }},
			{"no Sentinel password", func(c *Config) { c.SentinelPassword = "" }},
		} {
			bad := cfg
			tt.mod(&bad)
			c := newTestClient(t, bad, Master)
			if _, err := get(t, c, "k"); err == nil || errors.Is(err, redis.Nil) {
				t.Errorf("%s: GET got %v, want a refusal", tt.name, err)
			}
			if got := c.Breaker().State(); got != "open" {
				t.Errorf("%s: breaker %s, want open", tt.name, got)
			}
		}
	})

	t.Run("sentinels and nodes", func(t *testing.T) {
		ss := NewSentinels(cfg)
		defer ss.Close()
		if n, err := ss.KnownReplicas(ctx); err != nil || n != 2 {
			t.Errorf("KnownReplicas: got %d, %v; want 2", n, err)
		}
		m, err := s.Master(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Ping(ctx, m.Addr()); err != nil {
			t.Errorf("Ping of the master: %v", err)
		}
		if err := testConfig().Ping(ctx, m.Addr()); err == nil {
			t.Error("Ping of the master without its password: got no error")
		}
		if err := cfg.Ping(ctx, "127.0.0.1:1"); err == nil {
			t.Error("Ping of a closed port: got no error")
		}
	})

	t.Run("subscribe, and resubscribe after the connection dies", func(t *testing.T) {
		subscribe(t, newTestClient(t, cfg, Master))
	})

	t.Run("watch hears a failover", func(t *testing.T) {
		watchFailover(t, cfg)
	})
}

// watchFailover watches every sentinel for +switch-master, asks one for a
// failover, and waits for the event.
func watchFailover(t *testing.T, cfg Config) {
	ss := NewSentinels(cfg)
	defer ss.Close()
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss.Watch(ctx, func(_ context.Context, channel, payload string) {
			select {
			case heard <- channel + " " + payload:
			default:
			}
		}, "+switch-master")
	}()
	defer func() { cancel(); <-done }()

	// The subscriptions are made in the background: ask again until the
	// event is heard. A failover already under way is refused with
	// INPROG, which is fine.
	sc := redis.NewSentinelClient(&redis.Options{Addr: cfg.SentinelAddrs[0], Password: cfg.SentinelPassword})
	defer sc.Close()
	// Asked every 2 s at most, so that a failover that has just ended
	// is heard before another is asked for.
	var (
		asked   time.Time
		refused error // the last SENTINEL FAILOVER's answer
	)
	poll.Until(t, "+switch-master after asking for a failover", func() error {
		select {
		case ev := <-heard:
			if !strings.Contains(ev, "+switch-master "+cfg.MasterName+" ") {
				t.Errorf("heard %q, want a +switch-master of %s", ev, cfg.MasterName)
			}
			return nil
		default:
		}
		if time.Since(asked) >= 2*time.Second {
			asked = time.Now()
			if refused = sc.Failover(context.Background(), cfg.MasterName).Err(); refused != nil && !strings.Contains(refused.Error(), "INPROG") {
				t.Logf("SENTINEL FAILOVER: %v", refused)
			}
		}
		return fmt.Errorf("nothing heard (SENTINEL FAILOVER answered %v)", refused)
	})
}

// subscribe subscribes through c, publishes until a message arrives,
// kills the subscription's connection and waits for the resubscription
// to be reported and to carry messages again.
func subscribe(t *testing.T, c *Client) {
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 64)
	resubscribed := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Subscribe(ctx, "test-channel", func(payload string) {
			select {
			case got <- payload:
			default:
			}
		}, func() { resubscribed <- struct{}{} })
	}()
	defer func() { cancel(); <-done }()

	// publish sends payload until a message arrives, since the
	// subscription is made in the background.
	publish := func(payload string) {
		t.Helper()
		poll.Until(t, fmt.Sprintf("%q through the subscription", payload), func() error {
			select {
			case p := <-got:
				if p != payload {
					t.Fatalf("received %q, want %q", p, payload)
				}
				return nil
			default:
			}
			if err := c.Redis().Publish(ctx, "test-channel", payload).Err(); err != nil {
				return fmt.Errorf("PUBLISH: %w", err)
			}
			return errors.New("nothing received")
		})
	}
	publish("one")
	select {
	case <-resubscribed:
		t.Fatal("resubscribed reported for the first subscription")
	default:
	}
	if err := c.Redis().ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE pubsub: %v", err)
	}
	poll.Until(t, "the resubscription reported after its connection was killed", func() error {
		select {
		case <-resubscribed:
			return nil
		default:
			return errors.New("not reported")
		}
	})
	// Drain what was published before the kill and arrived late.
	for len(got) > 0 {
		<-got
	}
	publish("two")
}
