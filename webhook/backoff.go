package webhook

import "time"

// Backoff is how long a delivery waits after its attempt-th failed
// attempt (1 for the first): min doubled at each attempt, capped at max,
// then drawn from its upper half. The draw (rnd returns a number in
// [0, n)) spreads the retries of deliveries that failed together (a
// receiver's outage fails them all at once) instead of sending them back
// in one wave when it returns; the lower half is kept, so that the
// schedule still grows as it should.
func Backoff(attempt int, min, max time.Duration, rnd func(n int64) int64) time.Duration {
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max || d <= 0 { // d <= 0: doubled past the range of a Duration
		d = max
	}
	half := d / 2
	if half <= 0 {
		return d
	}
	return d - half + time.Duration(rnd(int64(half)+1))
}
