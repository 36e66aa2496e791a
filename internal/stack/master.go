package stack

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelAskTimeout bounds each sentinel's answer in Master, so that a
// frozen sentinel costs a poll this long rather than the caller's deadline.
const sentinelAskTimeout = 500 * time.Millisecond

// Master returns the Redis node that the sentinels name as master. It asks
// every sentinel at once and returns the answer of a majority of those that
// answered; during a failover the sentinels disagree for a moment, and the
// majority is what a Sentinel-aware client would most likely be told. It
// returns an error wrapping ErrNoMaster when none answers or no majority
// agrees.
func (s *Stack) Master(ctx context.Context) (*Proc, error) {
	ports := make([]int, len(s.byKind[KindSentinel]))
	errs := make([]error, len(s.byKind[KindSentinel]))
	var wg sync.WaitGroup
	for i, sp := range s.byKind[KindSentinel] {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, sentinelAskTimeout)
			defer cancel()
			ports[i], errs[i] = sentinelMasterPort(ctx, sp, s.st.MasterName)
		})
	}
	wg.Wait()

	votes := map[int]int{}
	answered := 0
	for i, port := range ports {
		if errs[i] == nil {
			votes[port]++
			answered++
		}
	}
	if answered == 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		return nil, fmt.Errorf("master: %w: no sentinel answered: %s", ErrNoMaster, strings.Join(msgs, "; "))
	}
	for port, n := range votes {
		if 2*n <= answered {
			continue
		}
		for _, p := range s.byKind[KindRedis] {
			if p.Port == port {
				return p, nil
			}
		}
		return nil, fmt.Errorf("master: sentinels name 127.0.0.1:%d, which is not a node of this stack", port)
	}
	return nil, fmt.Errorf("master: %w: %d sentinels answered and disagree (votes by port: %v)", ErrNoMaster, answered, votes)
}

// sentinelMasterPort asks one sentinel for the master's address.
func sentinelMasterPort(ctx context.Context, sentinel *Proc, name string) (int, error) {
	var addr []string
	err := ask(ctx, sentinel, redis.NewSentinelClient, func(ctx context.Context, c *redis.SentinelClient) (err error) {
		addr, err = c.GetMasterAddrByName(ctx, name).Result()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ask %s for master %q: %w", sentinel.Name, name, err)
	}
	if len(addr) == 2 {
		if port, err := strconv.Atoi(addr[1]); err == nil {
			return port, nil
		}
	}
	return 0, fmt.Errorf("ask %s: bad master address %v", sentinel.Name, addr)
}

// WaitMaster polls until the sentinels name a master other than not (any
// master when not is nil) and that node itself reports role master, and
// returns it. Chaos tests time failovers with it. Without a deadline on ctx
// it gives up after a minute.
func (s *Stack) WaitMaster(ctx context.Context, not *Proc) (*Proc, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	var master *Proc
	err := Poll(ctx, readyPoll, func(ctx context.Context) error {
		m, err := s.Master(ctx)
		if err != nil {
			return err
		}
		// By name, so that a Proc from another Stack value (Attach) works.
		if not != nil && m.Name == not.Name {
			return fmt.Errorf("sentinels still name %s", m.Name)
		}
		r, err := m.Replication(ctx)
		if err != nil {
			return err
		}
		if r.Role != "master" {
			return fmt.Errorf("sentinels name %s, which reports role %s", m.Name, r.Role)
		}
		master = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait master: %w", err)
	}
	return master, nil
}

// WaitSettled polls until the sentinels name a master other than not,
// ready(master) holds, and every sentinel has ended its failover to that
// master, and returns it. The master may not be the first one promoted:
// with down-after at a second, a sentinel can take a fresh master's first
// late PONG for a failure and fail it over once more on its own
// (redis/redis#8607), so a caller that needs a settled topology follows
// the master the sentinels settle on rather than the one it saw first.
// Without a deadline on ctx it gives up after a minute.
func (s *Stack) WaitSettled(ctx context.Context, not *Proc, ready func(ctx context.Context, master *Proc) error) (*Proc, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	var settled *Proc
	err := Poll(ctx, readyPoll, func(ctx context.Context) error {
		m, err := s.WaitMaster(ctx, not)
		if err != nil {
			return err
		}
		if err := ready(ctx, m); err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := s.WaitSwitched(sctx, m); err != nil {
			return err
		}
		settled = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the sentinels to settle: %w", err)
	}
	return settled, nil
}

// ReplicaOf returns nil when p reports itself a replica of master with its
// link up.
func ReplicaOf(ctx context.Context, p, master *Proc) error {
	r, err := p.Replication(ctx)
	if err != nil {
		return err
	}
	if r.Role != "slave" || r.MasterPort != master.Port || !r.LinkUp {
		return fmt.Errorf("%s does not replicate from %s (role %s, master port %d, link up %v)", p.Name, master.Name, r.Role, r.MasterPort, r.LinkUp)
	}
	return nil
}

// Replicated returns nil when master reports role master with every
// other Redis node of the stack connected, and each of those reports
// itself a replica of master with its link up; otherwise it says what is
// not so.
func (s *Stack) Replicated(ctx context.Context, master *Proc) error {
	r, err := master.Replication(ctx)
	if err != nil {
		return err
	}
	if r.Role != "master" || r.ConnectedReplicas < len(s.byKind[KindRedis])-1 {
		return fmt.Errorf("master %s: role %s, %d replicas connected", master.Name, r.Role, r.ConnectedReplicas)
	}
	for _, p := range s.byKind[KindRedis] {
		if p.Name == master.Name {
			continue
		}
		if err := ReplicaOf(ctx, p, master); err != nil {
			return err
		}
	}
	return nil
}

// WaitSwitched polls until every sentinel has master as its master, with
// no failover in progress and master up in its view: a failover is over
// for all of them, and the next one can start. (GET-MASTER-ADDR-BY-NAME,
// which Master asks, names the promoted replica while its failover is
// still reconfiguring the others.)
func (s *Stack) WaitSwitched(ctx context.Context, master *Proc) error {
	return s.waitSentinels(ctx, master, false)
}

// waitSentinels polls until every sentinel sees master as up and, when
// whole, all replicas up and all other sentinels known, which Start waits
// for: before that, a failover could lack a quorum or a replica to
// promote. Sentinels find each other through hello messages every two
// seconds, so this takes a couple of seconds.
func (s *Stack) waitSentinels(ctx context.Context, master *Proc, whole bool) error {
	name := s.st.MasterName
	err := Poll(ctx, readyPoll, func(ctx context.Context) error {
		for _, sp := range s.byKind[KindSentinel] {
			var m map[string]string
			var replicas []map[string]string
			err := ask(ctx, sp, redis.NewSentinelClient, func(ctx context.Context, c *redis.SentinelClient) (err error) {
				if m, err = c.Master(ctx, name).Result(); err == nil && whole {
					replicas, err = c.Replicas(ctx, name).Result()
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("ask %s: %w", sp.Name, err)
			}
			if m["port"] != strconv.Itoa(master.Port) || m["flags"] != "master" {
				return fmt.Errorf("%s sees master port %s flags %s", sp.Name, m["port"], m["flags"])
			}
			if !whole {
				continue
			}
			if m["num-slaves"] != strconv.Itoa(len(s.byKind[KindRedis])-1) || m["num-other-sentinels"] != strconv.Itoa(len(s.byKind[KindSentinel])-1) {
				return fmt.Errorf("%s sees %s replicas, %s other sentinels", sp.Name, m["num-slaves"], m["num-other-sentinels"])
			}
			for _, r := range replicas {
				if r["flags"] != "slave" || r["master-link-status"] != "ok" {
					return fmt.Errorf("%s sees replica %s flags %s link %s", sp.Name, r["name"], r["flags"], r["master-link-status"])
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wait sentinels to name %s: %w", master.Name, err)
	}
	return nil
}
