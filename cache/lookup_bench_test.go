package cache

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"shortener"
)

// BenchmarkLookupRedis is one redirect's Redis read, the lookup of a link
// that is not in L1 but is in Redis (a long tail's hit): lookupRedis on a
// real replica, serially and from 16 goroutines (ns/op is wall time; the
// CPU profile shows where the app's share goes).
//
//	SHORTENER_INTEGRATION=1 go test -run '^$' -bench LookupRedis ./cache
func BenchmarkLookupRedis(b *testing.B) {
	c, _, _ := newTestCache(b, testConfig(func(c *Config) { c.Redis.Timeout = time.Second }))
	ctx := context.Background()
	const n = 1000
	links := make([]shortener.Link, n)
	for i := range links {
		links[i] = shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("t%d", i), URL: "https://example.com/t", Redirect: 302}
	}
	if _, err := c.setLinks(ctx, links, func(shortener.Link) time.Duration { return time.Hour }, nil); err != nil {
		b.Fatal(err)
	}
	// The replicas have them once one answers the last.
	for {
		if _, res := c.lookupRedis(links[n-1].Code); res == resultHit {
			break
		}
		time.Sleep(10 * time.Millisecond) // replication is asynchronous: let it catch up
	}
	b.Run("serial", func(b *testing.B) {
		defer cpuPerOp(b)()
		i := 0
		for b.Loop() {
			if _, res := c.lookupRedis(links[i%n].Code); res != resultHit {
				b.Fatal(res)
			}
			i++
		}
	})
	b.Run("parallel16", func(b *testing.B) {
		defer cpuPerOp(b)()
		b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) goroutines
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, res := c.lookupRedis(links[i%n].Code); res != resultHit {
					b.Error(res)
					return
				}
				i++
			}
		})
	})
}

// cpuPerOp reports, when the returned func runs, the CPU time this process
// spent per op of b since cpuPerOp was called (user and system, every
// goroutine's: the lanes' too).
func cpuPerOp(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64((cpu()-start).Nanoseconds())/float64(b.N), "cpu-ns/op") }
}
