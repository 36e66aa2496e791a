package cache

import (
	"slices"
	"testing"
	"time"

	"shortener"
)

// TestPendingSetSecondEdit: a code edited again while its first edit's
// invalidation is still pending (Redis away during a failover) is
// reported again, so every instance drops the L1 entry it read between
// the two edits; the same record seen again is not, and a code this
// instance added itself is not reported for its own record.
func TestPendingSetSecondEdit(t *testing.T) {
	var p pendingSet
	now := time.Unix(1000, 0)
	t1, t2 := now.Add(-time.Second), now.Add(time.Second)
	steps := []struct {
		name string
		invs []shortener.Invalidation
		want []string
	}{
		{"first edit", []shortener.Invalidation{{Code: "e", CreatedAt: t1}}, []string{"e"}},
		{"the same record again", []shortener.Invalidation{{Code: "e", CreatedAt: t1}}, nil},
		{"a second edit", []shortener.Invalidation{{Code: "e", CreatedAt: t1}, {Code: "e", CreatedAt: t2}}, []string{"e"}},
		{"the second again", []shortener.Invalidation{{Code: "e", CreatedAt: t2}}, nil},
	}
	for _, s := range steps {
		if got := p.replace(s.invs, now, time.Second); !slices.Equal(got, s.want) {
			t.Errorf("%s: added %v, want %v", s.name, got, s.want)
		}
	}
	p.add("mine", now)
	if got := p.replace([]shortener.Invalidation{{Code: "mine", CreatedAt: t1}}, now, time.Second); len(got) != 0 {
		t.Errorf("this instance's own invalidation reported back: %v", got)
	}
	if got := p.replace([]shortener.Invalidation{{Code: "mine", CreatedAt: t2}}, now, time.Second); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("another edit of a code this instance invalidated: added %v, want [mine]", got)
	}
}
