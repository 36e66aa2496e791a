package webhook

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestBackoffSchedule is the wait after each failed attempt with the
// defaults (5 s doubled, at most an hour): each drawn from the upper half
// of its step, so the lowest and highest draws bound it.
func TestBackoffSchedule(t *testing.T) {
	low := func(int64) int64 { return 0 }
	high := func(n int64) int64 { return n - 1 }
	tests := []struct {
		attempt  int
		from, to time.Duration
	}{
		{1, 2500 * time.Millisecond, 5 * time.Second},
		{2, 5 * time.Second, 10 * time.Second},
		{3, 10 * time.Second, 20 * time.Second},
		{4, 20 * time.Second, 40 * time.Second},
		{8, 320 * time.Second, 640 * time.Second},
		{10, 1280 * time.Second, 2560 * time.Second},
		{11, 30 * time.Minute, time.Hour}, // 5,120 s, capped
		{12, 30 * time.Minute, time.Hour},
		{1000, 30 * time.Minute, time.Hour}, // no overflow
	}
	for _, tt := range tests {
		if got := Backoff(tt.attempt, 5*time.Second, time.Hour, low); got != tt.from {
			t.Errorf("attempt %d, lowest draw: got %s, want %s", tt.attempt, got, tt.from)
		}
		if got := Backoff(tt.attempt, 5*time.Second, time.Hour, high); got != tt.to {
			t.Errorf("attempt %d, highest draw: got %s, want %s", tt.attempt, got, tt.to)
		}
	}
}

// TestBackoffSpreads draws many waits of one step: they fill its upper
// half, not one instant.
func TestBackoffSpreads(t *testing.T) {
	seen := map[time.Duration]bool{}
	rnd := rand.New(rand.NewPCG(1, 2)).Int64N // seeded: the same draws every run
	for range 100 {
		d := Backoff(3, 5*time.Second, time.Hour, rnd)
		if d < 10*time.Second || d > 20*time.Second {
			t.Fatalf("attempt 3: got %s, want 10-20 s", d)
		}
		seen[d] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 draws gave %d distinct waits, want them spread", len(seen))
	}
}

// TestBackoffTotal sums the waits of a day: about 30 attempts, the last
// ones an hour or less apart (the schedule docs/api.md describes).
func TestBackoffTotal(t *testing.T) {
	high := func(n int64) int64 { return n - 1 }
	var total time.Duration
	attempts := 1
	for total+Backoff(attempts, 5*time.Second, time.Hour, high) <= 24*time.Hour {
		total += Backoff(attempts, 5*time.Second, time.Hour, high)
		attempts++
	}
	if attempts < 25 || attempts > 40 {
		t.Errorf("a day of the longest waits holds %d attempts, want 25-40", attempts)
	}
}
