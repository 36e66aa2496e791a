package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"shortener"
	"shortener/store"
)

// TestFoldPendingClicks: the clicks of links with few clicks in a batch
// wait in click_pending, and every reader counts them; folding moves
// those of ended hours into the count rows and the stats read the same,
// to the visitor; the current hour is not folded; a fold that finds its
// hour folded does nothing; a late click of a folded hour stays pending
// (and counted) until the next hour's fold takes it.
func TestFoldPendingClicks(t *testing.T) {
	st, db, _ := migratedWithDB(t)
	ctx := context.Background()
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const tail = 30
	var links []shortener.Link
	for i := range tail + 1 {
		links = append(links, shortener.Link{ID: int64(500 + i), Code: fmt.Sprintf("fold%d", i), URL: "https://example.com/f", Redirect: 302, CreatedAt: day})
	}
	if _, err := st.Import(ctx, links); err != nil {
		t.Fatal(err)
	}
	dense := links[tail].ID
	countries := [][2]byte{{'U', 'S'}, {'D', 'E'}, {}}
	click := func(link int64, at time.Time, n int) shortener.Click {
		c := shortener.Click{LinkID: link, At: at, Referrer: []string{"t.co", "", "news.example"}[n%3]}
		if n%4 == 3 {
			c.Agent = shortener.AgentBot
		}
		if n%5 != 4 { // some clicks without analytics: "unknown", no visitor
			c.Analyzed = true
			c.Dims = shortener.ClickDims{Country: countries[n%3], Browser: uint8(n % 3), OS: uint8(n % 2), Device: uint8(n % 3),
				Visitor: uint64(n%7+1) * 0x9E3779B97F4A7C15}
		}
		return c
	}
	// Three batches over two hours of day 1 (and one click on day 2): a
	// click of every tail link each (pending), five of the dense link
	// (counted at once).
	for k := range 3 {
		b := shortener.ClickBatch{Journal: 71, Node: 1, Segment: 1, From: int64(k), To: int64(k + 1)}
		for i, l := range links[:tail] {
			at := day.Add(time.Duration(9+k%2)*time.Hour + time.Duration(i)*time.Minute)
			if i == 0 && k == 2 {
				at = at.Add(24 * time.Hour)
			}
			b.Clicks = append(b.Clicks, click(l.ID, at, i+k))
		}
		for n := range 5 {
			b.Clicks = append(b.Clicks, click(dense, day.Add(9*time.Hour+time.Duration(n)*time.Second), n+k))
		}
		if applied, _, _, err := st.ShipClicks(ctx, b); err != nil || !applied {
			t.Fatalf("batch %d: %v, %v", k, applied, err)
		}
	}
	pending := func() (n int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM click_pending").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := pending(); got != 3*tail {
		t.Fatalf("%d clicks pending, want %d: the tail's, not the dense link's", got, 3*tail)
	}
	stats := func() map[string]shortener.ClickStats {
		t.Helper()
		out := map[string]shortener.ClickStats{}
		for _, l := range links {
			for _, daily := range []bool{false, true} {
				s, err := st.ClickStats(ctx, l.ID, day, day.Add(48*time.Hour), daily, 10)
				if err != nil {
					t.Fatal(err)
				}
				s.AsOf = time.Time{}
				out[fmt.Sprint(l.Code, daily)] = s
			}
		}
		return out
	}
	before := stats()
	if s := before["fold0false"]; s.Total != 3 || s.Series[33].Clicks != 1 {
		t.Errorf("a tail link's pending clicks: total %d, day 2 09:00 %d; want 3, 1", s.Total, s.Series[33].Clicks)
	}
	if s := before["fold3false"]; s.Total != 3 || s.Bots != 1 || s.Browsers != 2 {
		t.Errorf("a tail link's pending clicks: total %d, bots %d, browsers %d; want 3, 1, 2", s.Total, s.Bots, s.Browsers)
	}
	if s := before["fold5true"]; s.Visitors != 3 || len(s.Referrers) != 3 || s.Dims["country"]["US"] != 1 {
		t.Errorf("a tail link's pending analytics: %d visitors, referrers %+v, countries %v; want 3, three hosts, US 1", s.Visitors, s.Referrers, s.Dims["country"])
	}
	total, err := st.ClickTotal(ctx, links[1].ID)
	if err != nil || total != 3 {
		t.Errorf("ClickTotal of a tail link: %d, %v; want its 3 pending", total, err)
	}

	// Within the clicks' last hour nothing of it folds; the hours before
	// it do.
	if n, err := st.FoldClicks(ctx, day.Add(10*time.Hour+30*time.Minute)); err != nil || n != 2*tail-1 {
		t.Fatalf("fold at 10:30: %d, %v; want the %d clicks of 09:00", n, err, 2*tail-1)
	}
	if n, err := st.FoldClicks(ctx, time.Now()); err != nil || n != tail+1 {
		t.Fatalf("fold now: %d, %v; want the other %d", n, err, tail+1)
	}
	if got := pending(); got != 0 {
		t.Fatalf("%d clicks pending after the fold", got)
	}
	if after := stats(); !reflect.DeepEqual(before, after) {
		for k := range before {
			if !reflect.DeepEqual(before[k], after[k]) {
				t.Errorf("%s: pending %+v\nfolded %+v", k, before[k], after[k])
			}
		}
	}
	if n, err := st.FoldClicks(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("a second fold of the same hour: %d, %v; want nothing", n, err)
	}

	// A late click of day 1, shipped after its hour was folded: pending
	// and counted until the next hour's fold.
	late := shortener.ClickBatch{Journal: 72, Node: 2, Segment: 1, From: 0, To: 1, Clicks: []shortener.Click{click(links[1].ID, day.Add(9*time.Hour), 0)}}
	if applied, _, _, err := st.ShipClicks(ctx, late); err != nil || !applied {
		t.Fatalf("late click: %v, %v", applied, err)
	}
	if n, err := st.FoldClicks(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("fold of a folded hour: %d, %v; want nothing", n, err)
	}
	if total, err := st.ClickTotal(ctx, links[1].ID); err != nil || total != 4 {
		t.Errorf("ClickTotal with a late click pending: %d, %v; want 4", total, err)
	}
	if n, err := st.FoldClicks(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("the next hour's fold: %d, %v; want the late click", n, err)
	}
	if total, err := st.ClickTotal(ctx, links[1].ID); err != nil || total != 4 {
		t.Errorf("ClickTotal with the late click folded: %d, %v; want 4", total, err)
	}
}

// TestFoldWhileShipping: two stores (two instances) fold at once while a
// third ships more clicks of the same links and hour, over more links
// than one fold chunk holds; every click is counted once, in the count
// rows or pending, and a last fold leaves none pending.
func TestFoldWhileShipping(t *testing.T) {
	st, db, dsn := migratedWithDB(t)
	ctx := context.Background()
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	const n = 6000
	links := make([]shortener.Link, n)
	for i := range links {
		links[i] = shortener.Link{ID: int64(10_000 + i), Code: fmt.Sprintf("fw%d", i), URL: "https://example.com/w", Redirect: 302, CreatedAt: day}
	}
	if _, err := st.Import(ctx, links); err != nil {
		t.Fatal(err)
	}
	batch := func(journal int64, k int) shortener.ClickBatch {
		b := shortener.ClickBatch{Journal: journal, Node: 1, Segment: 1, From: int64(k), To: int64(k + 1)}
		for i, l := range links {
			b.Clicks = append(b.Clicks, shortener.Click{LinkID: l.ID, At: day.Add(time.Duration(i%24) * time.Hour), Referrer: "t.co",
				Analyzed: true, Dims: shortener.ClickDims{Visitor: uint64(k+1) * 0x9E3779B97F4A7C15}})
		}
		return b
	}
	for k := range 2 {
		if applied, _, _, err := st.ShipClicks(ctx, batch(81, k)); err != nil || !applied {
			t.Fatalf("batch %d: %v, %v", k, applied, err)
		}
	}
	folders := []*store.Store{openStore(t, dsn), openStore(t, dsn)}
	shipper := openStore(t, dsn)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, f := range folders {
		wg.Go(func() {
			if _, err := f.FoldClicks(ctx, time.Now()); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() {
		for k := range 2 {
			if applied, _, _, err := shipper.ShipClicks(ctx, batch(82, k)); err != nil || !applied {
				errs <- fmt.Errorf("batch %d of the second journal: %v, %v", k, applied, err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		var links, clicks, visitors int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(n) FROM (SELECT l.id,
			COALESCE((SELECT SUM(h.clicks) FROM click_hours h WHERE h.link_id = l.id), 0)
			+ (SELECT COUNT(*) FROM click_pending p WHERE p.link_id = l.id) AS n
			FROM links l WHERE l.code LIKE 'fw%') t WHERE n = 4`).Scan(&links, &clicks); err != nil {
			t.Fatal(err)
		}
		if links != n {
			t.Fatalf("%s: %d links of %d have their 4 clicks", when, links, n)
		}
		s, err := st.ClickStats(ctx, 10_000+n-1, day, day.Add(24*time.Hour), true, 5)
		if err != nil {
			t.Fatal(err)
		}
		visitors = s.Visitors
		if s.Total != 4 || visitors != 2 || len(s.Referrers) != 1 || s.Referrers[0].Clicks != 4 {
			t.Fatalf("%s: the last link: %d clicks, %d visitors, referrers %+v; want 4 of 2 visitors from t.co", when, s.Total, visitors, s.Referrers)
		}
	}
	check("folding while shipping")
	if _, err := st.FoldClicks(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM click_pending").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d clicks pending after the last fold (%v)", left, err)
	}
	check("all folded")
}
