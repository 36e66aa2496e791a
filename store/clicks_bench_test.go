package store_test

import (
	"context"
	"database/sql"
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
	st := openStore(b, database(b))
	ctx := context.Background()
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		b.Fatal(err)
	}
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
// link's only one in the batch, so every row it adds to is its own: the
// cost per click that does not shrink with batching (ns/click).
//
//	SHORTENER_INTEGRATION=1 go test -run '^$' -bench BenchmarkShipTailClicks -benchtime 20x ./store
func BenchmarkShipTailClicks(b *testing.B) {
	st := openStore(b, database(b))
	ctx := context.Background()
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		b.Fatal(err)
	}
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

// BenchmarkRawClickAppend is the floor of a click storage that appends
// each click as it comes and rolls clicks up later (issue 33's redesign,
// not built): the clicks of BenchmarkShipTailClicks inserted one row a
// click, in primary key order, into a table of the benchmark's own, in
// one transaction a batch and statements of 500 rows. Read its
// host-cpu-ns/click against BenchmarkShipTailClicks's, run interleaved:
// the roll-up's own cost is not in it.
//
//	SHORTENER_INTEGRATION=1 go test -run '^$' -bench 'BenchmarkShipTailClicks|BenchmarkRawClickAppend' -benchtime 20x ./store
func BenchmarkRawClickAppend(b *testing.B) {
	db, err := sql.Open("mysql", database(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE raw_clicks (
		journal_id BIGINT NOT NULL, position BIGINT NOT NULL, seq INT NOT NULL,
		link_id BIGINT NOT NULL, at DATETIME(3) NOT NULL, referrer VARCHAR(255) NOT NULL,
		country CHAR(2) NOT NULL, browser TINYINT NOT NULL, os TINYINT NOT NULL, device TINYINT NOT NULL,
		visitor BIGINT UNSIGNED NOT NULL, request BINARY(16) NOT NULL,
		PRIMARY KEY (journal_id, position, seq)) ENGINE=InnoDB`); err != nil {
		b.Fatal(err)
	}
	const links, batch, chunk = 200_000, 5000, 500
	row := "(?,?,?,?,?,?,?,?,?,?,?,?)"
	q := "INSERT INTO raw_clicks VALUES " + row + strings.Repeat(","+row, chunk-1)
	rng := rand.New(rand.NewPCG(3, 4))
	pos := int64(0)
	busy0 := hostBusy(b)
	for b.Loop() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		at := time.Now().UTC()
		for c := 0; c < batch; c += chunk {
			args := make([]any, 0, 12*chunk)
			for i := c; i < c+chunk; i++ {
				id := requestID(rng)
				args = append(args, 1, pos, i, int64(-1-rng.IntN(links)), at, "t.co", "US", 1, 1, 0, rng.Uint64()|1, id[:])
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		pos++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/click")
	b.ReportMetric(float64((hostBusy(b)-busy0).Nanoseconds())/float64(b.N*batch), "host-cpu-ns/click")
}
