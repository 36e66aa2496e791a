package trending

import (
	"errors"
	"strconv"
	"time"
)

// ErrWindow means a trending window other than 5m, 1h or 24h was asked for.
var ErrWindow = errors.New("trending: unknown window (want 5m, 1h or 24h)")

// Clicks are counted in time buckets rather than in decayed scores: an
// answer must say how many clicks a link had in the window, and a count
// per bucket is exactly that, comparable with MySQL's counts for the same
// period; a bucket expires with its key, so nothing has to rescore the
// sets; and a replayed batch lands in the buckets of its clicks' own
// times, however late it arrives (decayed scores would need the arrival
// time to equal the click time).
//
// Each window is the sum of its resolution's most recent buckets, the
// current (partial) one included, so it covers between span-width and
// span: "5m" is the current minute and the four before it.
type resolution struct {
	name  string        // key segment
	width time.Duration // bucket width
	ttl   time.Duration // how long a bucket key lives in Redis
}

type window struct {
	name    string
	span    time.Duration
	res     resolution
	buckets int64
	// every is how many refresh rounds pass between two reads of the
	// window from Redis: the 24h window's 24 hourly sets are the costliest
	// read, and a day's ranking does not move in a second.
	every int
}

// windows lists the windows served, shortest first.
func windows() [3]window {
	minute := resolution{"m", time.Minute, 15 * time.Minute}
	five := resolution{"f", 5 * time.Minute, 2*time.Hour + 10*time.Minute}
	hour := resolution{"h", time.Hour, 26 * time.Hour}
	return [3]window{
		{name: "5m", span: 5 * time.Minute, res: minute, buckets: 5, every: 1},
		{name: "1h", span: time.Hour, res: five, buckets: 12, every: 5},
		{name: "24h", span: 24 * time.Hour, res: hour, buckets: 24, every: 30},
	}
}

// windowIndex returns the position of the window named name.
func windowIndex(name string) (int, error) {
	for i, w := range windows() {
		if w.name == name {
			return i, nil
		}
	}
	return 0, ErrWindow
}

// bucket is the index of the bucket holding t.
func (r resolution) bucket(t time.Time) int64 { return t.Unix() / int64(r.width/time.Second) }

// start is when bucket b begins.
func (r resolution) start(b int64) time.Time {
	return time.Unix(b*int64(r.width/time.Second), 0).UTC()
}

// ofMinute is the bucket holding the minute m (Unix minutes).
func (r resolution) ofMinute(m int64) int64 { return m * 60 / int64(r.width/time.Second) }

// first is the oldest bucket of the window that ends at now.
func (w window) first(now time.Time) int64 { return w.res.bucket(now) - w.buckets + 1 }

// key names bucket b of resolution r under prefix.
func (r resolution) key(prefix string, b int64) string {
	return prefix + r.name + ":" + strconv.FormatInt(b, 10)
}

// totalKey names the key counting every click of minute m.
func totalKey(prefix string, m int64) string { return prefix + "n:" + strconv.FormatInt(m, 10) }
