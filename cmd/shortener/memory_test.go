package main

import (
	"math"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		name    string
		gogcSet bool
		limit   int64
		want    int
		set     bool
	}{
		{"a limit, no GOGC", false, 460 << 20, gcPercentLimited, true},
		{"no limit", false, math.MaxInt64, 0, false},
		{"GOGC set", true, 460 << 20, 0, false},
		{"no limit read", false, 0, 0, false},
	} {
		got, set := gcPercentFor(c.gogcSet, c.limit)
		if got != c.want || set != c.set {
			t.Errorf("%s: gcPercentFor = %d, %v; want %d, %v", c.name, got, set, c.want, c.set)
		}
	}
}
