package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"shortener/internal/chaos/chaostest"
	"shortener/internal/poll"
	"shortener/internal/stack"
)

// status GETs code from a and returns the answer's status code.
func status(tb testing.TB, a *app, code string) int {
	tb.Helper()
	resp, err := noFollow.Get(a.base + "/" + code)
	if err != nil {
		tb.Fatalf("GET /%s: %v", code, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitStatus polls until every app answers want for code, and returns how
// long that took, to be logged: the tests that use it give their apps an
// L1 TTL of an hour, so only the path under test (an invalidation, an
// expiry check) answers want before poll gives up.
func waitStatus(tb testing.TB, code string, want int, apps ...*app) time.Duration {
	tb.Helper()
	start := time.Now()
	for _, a := range apps {
		poll.Until(tb, fmt.Sprintf("GET /%s on %s to answer %d", code, a.base, want), func() error {
			if got := status(tb, a, code); got != want {
				return fmt.Errorf("got %d", got)
			}
			return nil
		})
	}
	return time.Since(start)
}

func deleteLink(tb testing.TB, a *app, code string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodDelete, a.base+"/api/v1/links/"+code, nil)
	req.Header.Set("X-Api-Key", testAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		tb.Fatalf("DELETE /api/v1/links/%s: %d, want 204", code, resp.StatusCode)
	}
}

// allRedis applies op to every Redis node.
func allRedis(tb testing.TB, s *stack.Stack, op func(*stack.Proc) error) {
	tb.Helper()
	for _, p := range s.Redis() {
		if err := op(p); err != nil {
			tb.Fatalf("%s: %v", p.Name, err)
		}
	}
}

// TestAllRedisDown kills every Redis node under Zipf lookups (chaos
// scenario redis-down): none fails, and MySQL sees at most one query per
// distinct code per L1 TTL.
func TestAllRedisDown(t *testing.T) {
	const l1TTL = time.Second
	s := ownServers(t)
	a := startApp(t, s, 1, "SHORTENER_L1_TTL", l1TTL.String())
	chaostest.Run(t, s.Stack, chaosTarget(a), chaosConfig(l1TTL), nil, "redis-down")
}

// TestDeleteWhileRedisDown deletes a link while every Redis node is frozen
// (so their stale copies survive the outage): both instances answer 410
// during the outage, and after Redis returns and the invalidation drains,
// the stale entry is gone from Redis and both still answer 410.
func TestDeleteWhileRedisDown(t *testing.T) {
	s := newServers(t)
	a1 := startApp(t, s, 1, "SHORTENER_L1_TTL", "1h")
	a2 := startApp(t, s, 2, "SHORTENER_L1_TTL", "1h")
	var code string
	for c := range createLinks(t, a1, 1) {
		code = c
	}
	for _, a := range []*app{a1, a2} { // cached in Redis and in both L1s
		if got := status(t, a, code); got != http.StatusFound {
			t.Fatalf("before: %d, want 302", got)
		}
	}

	allRedis(t, s.Stack, (*stack.Proc).Stop)
	deleteLink(t, a2, code)
	took := waitStatus(t, code, http.StatusGone, a1, a2)
	t.Logf("deleted during the outage: 410 on both instances after %s", took.Round(time.Millisecond))
	if p := metric(t, a2, mPending); p < 1 {
		t.Errorf("invalidations pending during the outage = %v, want >= 1", p)
	}

	allRedis(t, s.Stack, (*stack.Proc).Cont)
	waitMetricBelow(t, a1, mPending, 1)
	waitMetricBelow(t, a2, mPending, 1)
	for _, a := range []*app{a1, a2} {
		if got := status(t, a, code); got != http.StatusGone {
			t.Errorf("after Redis returned: %d, want 410", got)
		}
	}
	for _, p := range s.Redis() {
		if v := redisGet(t, p, "link:"+code); v != "" {
			t.Errorf("%s still holds the deleted link: %q", p.Name, v)
		}
	}
}

// TestExpiryThroughOutage creates a link that expires in two seconds,
// caches it everywhere, freezes Redis, and checks that every tier answers
// 410 once it expires, during the outage and after.
func TestExpiryThroughOutage(t *testing.T) {
	s := newServers(t)
	a := startApp(t, s, 1, "SHORTENER_L1_TTL", "1h")
	expires := time.Now().Add(2 * time.Second).UTC()
	body := `{"url":"https://example.com/soon","expires_at":"` + expires.Format(time.RFC3339Nano) + `"}`
	resp, err := http.Post(a.base+"/api/v1/links", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Code string }
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if st := status(t, a, got.Code); st != http.StatusFound {
		t.Fatalf("before expiry: %d, want 302", st)
	}
	allRedis(t, s.Stack, (*stack.Proc).Stop)
	waitStatus(t, got.Code, http.StatusGone, a)
	allRedis(t, s.Stack, (*stack.Proc).Cont)
	for range 20 {
		if st := status(t, a, got.Code); st != http.StatusGone {
			t.Fatalf("after Redis returned: %d, want 410", st)
		}
	}
}

// TestDeleteReachesOtherInstance: a link created on app1 and deleted on
// app2 stops redirecting on app1 while Redis is healthy, although app1's
// L1 would keep it for an hour: the invalidation reached it. How long
// that took is logged; the chaos reports measure it.
func TestDeleteReachesOtherInstance(t *testing.T) {
	s := newServers(t)
	a1 := startApp(t, s, 1, "SHORTENER_L1_TTL", "1h")
	a2 := startApp(t, s, 2, "SHORTENER_L1_TTL", "1h")
	for code := range createLinks(t, a1, 5) {
		if got := status(t, a1, code); got != http.StatusFound {
			t.Fatalf("before: %d, want 302", got)
		}
		deleteLink(t, a2, code)
		took := waitStatus(t, code, http.StatusGone, a1)
		t.Logf("app1 answered 410 %s after app2's delete", took)
	}
}

// mPending is the gauge of invalidations not yet delivered to Redis.
const mPending = "shortener_invalidations_pending"

func waitMetricBelow(tb testing.TB, a *app, name string, below float64) {
	tb.Helper()
	poll.Until(tb, fmt.Sprintf("%s below %v on %s", name, below, a.base), func() error {
		if got := metric(tb, a, name); got >= below {
			return fmt.Errorf("%s = %v", name, got)
		}
		return nil
	})
}

// redisGet reads a key straight from one node; "" when it does not exist.
func redisGet(tb testing.TB, p *stack.Proc, key string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, _, err := p.Get(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
