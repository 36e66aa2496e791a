package store_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"shortener"
)

// BenchmarkShipClicks ships batches of 10,000 clicks on 100 links (the
// shipper's batch), with and without nginx's request IDs: what one click
// costs the shipper and MariaDB together, serially (ns/click), and with
// requests the dedupe table's share of it; then with analytics, from 8
// visitors a link (repeat visitors: after the first batch their sketches
// are not written again) and from a new visitor each click (every
// sketch read, merged and written every batch).
//
//	SHORTENER_INTEGRATION=1 go test -run '^$' -bench BenchmarkShipClicks -benchtime 20x ./store
func BenchmarkShipClicks(b *testing.B) {
	st := migrated(b)
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range 100 {
		if err := st.Create(ctx, shortener.Link{ID: int64(1000 + i), Code: fmt.Sprintf("bench%d", i), URL: "https://example.com/", Redirect: 302, CreatedAt: now}); err != nil {
			b.Fatal(err)
		}
	}
	const batch = 10000
	rng := rand.New(rand.NewPCG(1, 2))
	journals := int64(100)
	for _, c := range []struct {
		name         string
		withRequests bool
		visitors     int // analyzed clicks from this many visitors a link (0: analytics off; -1: a new one each click)
	}{
		{"requests=false", false, 0}, {"requests=true", true, 0},
		{"analytics/repeat-visitors", true, 8}, {"analytics/new-visitors", true, -1},
	} {
		withRequests := c.withRequests
		b.Run(c.name, func(b *testing.B) {
			pos := int64(0)
			journals++ // a fresh journal each run: positions start at 0
			journal := journals
			for b.Loop() {
				cs := make([]shortener.Click, batch)
				at := time.Now().UTC()
				for i := range cs {
					cs[i] = shortener.Click{LinkID: int64(1000 + i%100), At: at, Referrer: "t.co"}
					switch {
					case c.visitors > 0:
						cs[i].Analyzed, cs[i].Dims = true, shortener.ClickDims{Country: [2]byte{'U', 'S'}, Browser: 1, OS: 1,
							Visitor: uint64(i%(100*c.visitors))<<1 | 1}
					case c.visitors < 0:
						cs[i].Analyzed, cs[i].Dims = true, shortener.ClickDims{Country: [2]byte{'U', 'S'}, Browser: 1, OS: 1,
							Visitor: rng.Uint64() | 1}
					}
					if withRequests {
						cs[i].Request = shortener.ClickRequest{At: at.UnixMilli(), ID: requestID(rng)}
					}
				}
				bt := shortener.ClickBatch{Journal: journal, Node: 1, Segment: 1, From: pos, To: pos + 1, Clicks: cs}
				if applied, _, _, err := st.ShipClicks(ctx, bt); err != nil || !applied {
					b.Fatalf("ship: %v, %v", applied, err)
				}
				pos++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/click")
		})
	}
}

// BenchmarkShipTailClicks ships what an instance's shipper ships from a
// long tail: batches of 5,000 clicks (a second of one instance at 5,000
// redirects a second) picked uniformly from 200,000 links, journaled by
// code as the redirect path journals them, each with nginx's request ID,
// a referrer, analytics and a new visitor. Nearly every click is its
// link's only one in the batch, so it is pending (clickfold.go): one row
// of click_pending a click, and BenchmarkFoldClicks's cost later.
//
//	SHORTENER_INTEGRATION=1 go test -run '^$' -bench BenchmarkShipTailClicks -benchtime 20x ./store
func BenchmarkShipTailClicks(b *testing.B) {
	st := migrated(b)
	ctx := context.Background()
	const links, batch = 200_000, 5000
	now := time.Now().UTC()
	ls := make([]shortener.Link, links)
	for i := range ls {
		ls[i] = shortener.Link{ID: int64(-1 - i), Code: fmt.Sprintf("tail%d", i), URL: "https://example.com/", Redirect: 302, CreatedAt: now}
	}
	if _, err := st.Import(ctx, ls); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pos := int64(0)
	busy0 := hostBusy(b)
	for b.Loop() {
		cs := make([]shortener.Click, batch)
		at := time.Now().UTC()
		for i := range cs {
			l := ls[rng.IntN(links)]
			cs[i] = shortener.Click{LinkID: l.ID, Code: l.Code, At: at, Referrer: "t.co",
				Request: shortener.ClickRequest{At: at.UnixMilli(), ID: requestID(rng)}, Analyzed: true,
				Dims: shortener.ClickDims{Country: [2]byte{'U', 'S'}, Browser: 1, OS: 1, Visitor: rng.Uint64() | 1}}
		}
		bt := shortener.ClickBatch{Journal: 1, Node: 1, Segment: 1, From: pos, To: pos + 1, Clicks: cs}
		if applied, _, _, err := st.ShipClicks(ctx, bt); err != nil || !applied {
			b.Fatalf("ship: %v, %v", applied, err)
		}
		pos++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/click")
	b.ReportMetric(float64((hostBusy(b)-busy0).Nanoseconds())/float64(b.N*batch), "host-cpu-ns/click")
}

// requestID is random like nginx's $request_id: what the driver escapes
// in a request set depends on the bytes.
func requestID(rng *rand.Rand) [16]byte {
	var id [16]byte
	binary.LittleEndian.PutUint64(id[:], rng.Uint64())
	binary.LittleEndian.PutUint64(id[8:], rng.Uint64())
	return id
}

// hostBusy is the CPU time every process of the host has used since boot
// (/proc/stat: all but idle and iowait): with the shipper and MariaDB the
// only busy processes, its growth over a loop is what the loop cost both.
func hostBusy(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Skip("no /proc/stat:", err)
	}
	fields := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	var ticks int64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// BenchmarkFoldClicks is the other half of a tail click's cost: folding
// pending clicks (clickfold.go) into the count rows, a fold of 20,000
// clicks an iteration, with each link clicked 1, 4 or 36 times in the
// hour folded (36: a million links clicked uniformly at 10,000 a
// second). Each click has a new visitor, as in BenchmarkShipTailClicks;
// the shipping that made them pending is not timed. Add its
// host-cpu-ns/click to BenchmarkShipTailClicks's for what a tail click
// costs in all.
//
//	SHORTENER_INTEGRATION=1 go test -run '^$' -bench 'BenchmarkShipTailClicks|BenchmarkFoldClicks' -benchtime 5x ./store
func BenchmarkFoldClicks(b *testing.B) {
	st := migrated(b)
	ctx := context.Background()
	const clicks, batch = 20_000, 5000
	rng := rand.New(rand.NewPCG(5, 6))
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	journal, folds := int64(1000), 0
	for _, per := range []int{1, 4, 36} {
		b.Run(fmt.Sprintf("clicks-per-link=%d", per), func(b *testing.B) {
			n := clicks / per
			ls := make([]shortener.Link, n)
			for i := range ls {
				ls[i] = shortener.Link{ID: int64(-1_000_000*per - i), Code: fmt.Sprintf("fold%d-%d", per, i), URL: "https://example.com/", Redirect: 302, CreatedAt: start}
			}
			if _, err := st.Import(ctx, ls); err != nil {
				b.Fatal(err)
			}
			var busy time.Duration
			var folded int64
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				// Every link once a batch, so every click is pending.
				at := start.Add(time.Duration(folds) * time.Hour)
				journal++
				pos := int64(0)
				for range per {
					for from := 0; from < n; from += batch {
						bt := shortener.ClickBatch{Journal: journal, Node: 1, Segment: 1, From: pos, To: pos + 1}
						for _, l := range ls[from:min(from+batch, n)] {
							bt.Clicks = append(bt.Clicks, shortener.Click{LinkID: l.ID, At: at.Add(time.Duration(rng.IntN(3600)) * time.Second), Referrer: "t.co",
								Analyzed: true, Dims: shortener.ClickDims{Country: [2]byte{'U', 'S'}, Browser: 1, OS: 1, Visitor: rng.Uint64() | 1}})
						}
						if applied, _, _, err := st.ShipClicks(ctx, bt); err != nil || !applied {
							b.Fatalf("ship: %v, %v", applied, err)
						}
						pos++
					}
				}
				folds++
				busy0 := hostBusy(b)
				b.StartTimer()
				f, err := st.FoldClicks(ctx, time.Now().Add(time.Duration(folds)*time.Hour))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				busy += hostBusy(b) - busy0
				folded += f
				b.StartTimer()
			}
			if folded != int64(b.N*n*per) {
				b.Fatalf("folded %d clicks, want %d", folded, b.N*n*per)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(folded), "ns/click")
			b.ReportMetric(float64(busy.Nanoseconds())/float64(folded), "host-cpu-ns/click")
		})
	}
}
