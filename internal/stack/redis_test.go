package stack_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// TestConfigSetRefusesWrites: a maxmemory below the memory in use, under
// noeviction, makes the master refuse writes (OOM), and the values read
// back with ConfigGet put it right again.
func TestConfigSetRefusesWrites(t *testing.T) {
	s := stacktest.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	m := s.Redis()[0]
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: s.RedisPassword(), MaxRetries: -1})
	defer c.Close()

	origMax, err := m.ConfigGet(ctx, "maxmemory")
	if err != nil {
		t.Fatal(err)
	}
	origPolicy, err := m.ConfigGet(ctx, "maxmemory-policy")
	if err != nil {
		t.Fatal(err)
	}
	used, err := m.UsedMemory(ctx)
	if err != nil || used <= 0 {
		t.Fatalf("UsedMemory: got %d, %v, want > 0", used, err)
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", strconv.FormatInt(used/2, 10)}} {
		if err := m.ConfigSet(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := m.ConfigGet(ctx, "maxmemory"); err != nil || got != strconv.FormatInt(used/2, 10) {
		t.Errorf("maxmemory after ConfigSet: got %q, %v, want %d", got, err, used/2)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Errorf("SET above maxmemory: got %v, want an OOM error", err)
	}
	for _, kv := range [][2]string{{"maxmemory", origMax}, {"maxmemory-policy", origPolicy}} {
		if err := m.ConfigSet(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET after the settings were put back: %v", err)
	}

	if _, err := m.ConfigGet(ctx, "no-such-setting"); err == nil {
		t.Error("ConfigGet of an unknown setting: got nil error")
	}
	if err := s.Sentinels()[0].ConfigSet(ctx, "maxmemory", "1"); err == nil {
		t.Error("ConfigSet on a sentinel: got nil error")
	}
}

// TestFreezeCycle: every node is frozen together, and ending the cycle
// mid-freeze thaws them all.
func TestFreezeCycle(t *testing.T) {
	s := stacktest.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	nodes := s.Redis()

	cycle, stop := context.WithCancel(ctx)
	type result struct {
		cycles int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		n, err := stack.FreezeCycle(cycle, nodes, 300*time.Millisecond, 100*time.Millisecond)
		done <- result{n, err}
	}()
	poll.Until(t, "every node frozen", func() error {
		for _, p := range nodes {
			if !p.Frozen() {
				return fmt.Errorf("%s not frozen", p.Name)
			}
		}
		return nil
	})
	stop()
	r := <-done
	if r.err != nil || r.cycles < 1 {
		t.Fatalf("FreezeCycle: got %d cycles, %v, want at least one and no error", r.cycles, r.err)
	}
	for _, p := range nodes {
		if p.Frozen() {
			t.Errorf("%s frozen after FreezeCycle returned", p.Name)
		}
		if _, err := p.Replication(ctx); err != nil {
			t.Errorf("%s after FreezeCycle: %v", p.Name, err)
		}
	}
}
