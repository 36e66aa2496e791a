package stack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// TestAuth: every Redis node and sentinel refuses a client without its
// password (NOAUTH) or with a wrong one, and answers one with it; and so
// it stays through the restarts the chaos runs make. A restarted sentinel
// and one other elect a leader and fail over on their own (the sentinels
// use their password with each other), the killed master comes back as a
// linked replica (masterauth), and a killed sentinel rejoins from the
// config it rewrote.
func TestAuth(t *testing.T) {
	s := stacktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	servers := append(s.Redis(), s.Sentinels()...)
	requireAuth(t, ctx, s, servers)

	restarted, killed, old := s.Sentinels()[0], s.Sentinels()[2], s.Redis()[0]
	if err := restarted.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*stack.Proc{killed, old} {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.WaitMaster(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s and the other live sentinel made %s master", restarted.Name, m.Name)
	for _, p := range []*stack.Proc{old, killed} {
		if err := p.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The sentinels may move the master once more on their own (a fresh
	// master's late answer taken for a failure, docs/chaos finding 12):
	// wait until they agree on one, whichever, and it has its replicas.
	poll.Until(t, "the sentinels to agree on a master with its replicas", func() error {
		cur, err := s.Master(ctx)
		if err != nil {
			return err
		}
		if err := s.Replicated(ctx, cur); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return s.WaitSwitched(wctx, cur)
	})
	requireAuth(t, ctx, s, servers)

	// What the sentinel rewrote and the next start put right: one set of
	// auth lines, in a directory no one else may read.
	conf, err := os.ReadFile(filepath.Join(s.Dir(), killed.Name, "sentinel.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(conf), "\nrequirepass "); n != 1 {
		t.Errorf("%s's config has %d requirepass lines, want 1:\n%s", killed.Name, n, conf)
	}
	for _, p := range servers {
		fi, err := os.Stat(filepath.Join(s.Dir(), p.Name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s's directory: mode %v, want 0700", p.Name, fi.Mode().Perm())
		}
	}
	state, err := os.ReadFile(filepath.Join(s.Dir(), "stack.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), s.RedisPassword()) || strings.Contains(string(state), s.SentinelPassword()) {
		t.Error("stack.json holds a password")
	}
}

// requireAuth checks that each server refuses a PING without a password
// or with a wrong one and answers one with its password.
func requireAuth(tb testing.TB, ctx context.Context, s *stack.Stack, servers []*stack.Proc) {
	tb.Helper()
	if s.RedisPassword() == "" || s.SentinelPassword() == "" || s.RedisPassword() == s.SentinelPassword() {
		tb.Fatalf("passwords: Redis %q, Sentinel %q, want two distinct ones", s.RedisPassword(), s.SentinelPassword())
	}
	for _, p := range servers {
		password := s.RedisPassword()
		if p.Kind == stack.KindSentinel {
			password = s.SentinelPassword()
		}
		for _, tc := range []struct {
			password, want string // want: the error's prefix, "" for none
		}{{"", "NOAUTH"}, {password + "x", "WRONGPASS"}, {password, ""}} {
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), Password: tc.password, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
			err := c.Ping(ctx).Err()
			c.Close()
			switch {
			case tc.want == "" && err != nil:
				tb.Errorf("%s: PING with its password: %v", p, err)
			case tc.want != "" && !redis.HasErrorPrefix(err, tc.want):
				tb.Errorf("%s: PING with password %q: got %v, want %s", p, tc.password, err, tc.want)
			}
		}
	}
}
