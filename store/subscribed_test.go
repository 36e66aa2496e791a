package store

import (
	"fmt"
	"testing"
	"time"
)

// TestSubscribedCache: an answer holds for ttl after its read began and
// not a moment longer, and a full cache starts over.
func TestSubscribedCache(t *testing.T) {
	c := newSubscribedCache(time.Second)
	t0 := time.Unix(1000, 0)
	if _, ok := c.get("a", t0); ok {
		t.Fatal("an answer before any read")
	}
	c.put("a", false, t0)
	c.put("b", true, t0)
	for _, tc := range []struct {
		owner   string
		at      time.Time
		yes, ok bool
	}{
		{"a", t0, false, true},
		{"a", t0.Add(999 * time.Millisecond), false, true},
		{"a", t0.Add(time.Second), false, false}, // ttl after the read began: read again
		{"b", t0.Add(500 * time.Millisecond), true, true},
		{"c", t0, false, false},
	} {
		if yes, ok := c.get(tc.owner, tc.at); yes != tc.yes || ok != tc.ok {
			t.Errorf("get(%s, t0+%s) = %v, %v, want %v, %v", tc.owner, tc.at.Sub(t0), yes, ok, tc.yes, tc.ok)
		}
	}
	for i := range subscribedMax {
		c.put(fmt.Sprint(i), false, t0)
	}
	if n := len(c.m); n > subscribedMax {
		t.Errorf("%d answers kept, want at most %d", n, subscribedMax)
	}
}
