// Package poll is how tests wait for something another goroutine or
// process makes true: a replica that catches up, a counter a worker
// increments, a server that starts answering. It is the one way tests
// wait; a sleep is not synchronisation.
//
// A wait asserts no duration: how long a condition takes is measured by
// benchmarks and chaos reports, never by a test, which must pass on a
// busy machine under the race detector. Its deadline, Patience, is only
// a guard that turns a hang into a failure saying what was awaited and
// why it did not yet hold.
package poll

import (
	"testing"
	"time"
)

// Patience bounds every wait. What tests wait for takes milliseconds to
// seconds (a Sentinel failover, a MariaDB restart); the bound is far
// above what two loaded cores and the race detector make of that.
const Patience = 3 * time.Minute

// The interval between checks starts at minInterval, so that a condition
// that holds at once costs nothing, and doubles to maxInterval, so that a
// check with I/O (an HTTP request, a Redis call) does not load the
// machine it waits on.
const (
	minInterval = time.Millisecond
	maxInterval = 50 * time.Millisecond
)

// margin is left before the test binary's own deadline (go test
// -timeout): a wait that would outlast it fails first, naming what it
// waited for, instead of the binary panicking with every goroutine.
const margin = 10 * time.Second

// Until calls check until it returns nil. If Patience passes first, or
// the test's deadline is near, it fails the test with what and check's
// last error. check runs on the test's goroutine, so it may itself fail
// the test (tb.Fatal) for an error no retry cures.
func Until(tb testing.TB, what string, check func() error) {
	tb.Helper()
	wait(tb, what, 0, check)
}

// Every is Until for a check that costs, such as a docker exec (about
// 0.3 s of CPU): it calls check at most once per interval, so that the
// wait does not starve what it waits for.
func Every(tb testing.TB, what string, interval time.Duration, check func() error) {
	tb.Helper()
	wait(tb, what, interval, check)
}

// wait is Until with a fixed interval between checks, or, if interval is
// 0, one from minInterval doubling to maxInterval.
func wait(tb testing.TB, what string, interval time.Duration, check func() error) {
	tb.Helper()
	start := time.Now()
	deadline := start.Add(Patience)
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := t.Deadline(); ok && d.Add(-margin).Before(deadline) {
			deadline = d.Add(-margin)
		}
	}
	next := interval
	if next == 0 {
		next = minInterval
	}
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("waited %s for %s; last: %v", time.Since(start).Round(time.Millisecond), what, err)
		}
		time.Sleep(next)
		if interval == 0 {
			next = min(2*next, maxInterval)
		}
	}
}
