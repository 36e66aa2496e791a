package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"shortener"
	"shortener/stack/stacktest"
)

// TestShipClicksOnce ships a batch twice (and a third batch from four
// shippers at once): each is counted once, and the counts read back by
// hour, day, referrer and agent class, also after the link is deleted.
func TestShipClicksOnce(t *testing.T) {
	s := stacktest.Start(t)
	st := openStore(t, s.MySQLDSN())
	ctx := context.Background()
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for _, l := range []shortener.Link{{ID: 42, Code: "clk42"}, {ID: 43, Code: "clk43"}} {
		l.URL, l.Redirect, l.CreatedAt = "https://example.com/"+l.Code, 302, day
		if err := st.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	b1 := shortener.ClickBatch{Journal: 9, Node: 1, Segment: 1, From: 0, To: 100, CaughtUp: at(13, 5), Clicks: []shortener.Click{
		{LinkID: 42, At: at(12, 10), Referrer: "t.co"},
		{LinkID: 42, At: at(12, 50), Referrer: "t.co", Agent: shortener.AgentBot},
		{LinkID: 42, At: at(13, 5)},
		{Code: "clk43", At: at(13, 5), Referrer: "news.example"}, // by code, as the caches resolve it
	}}
	b2 := shortener.ClickBatch{Journal: 9, Node: 1, Segment: 1, From: 100, To: 180, Clicks: []shortener.Click{
		{LinkID: 42, At: at(14, 0), Referrer: "news.example"},
		{LinkID: 42, At: at(24+1, 0), Referrer: "t.co"}, // the next day
	}}
	ship := func(b shortener.ClickBatch, wantApplied bool, wantPos int64) {
		t.Helper()
		applied, pos, err := st.ShipClicks(ctx, b)
		if err != nil || applied != wantApplied || pos != wantPos {
			t.Fatalf("ShipClicks [%d, %d): %v, %d, %v; want %v, %d, nil", b.From, b.To, applied, pos, err, wantApplied, wantPos)
		}
	}
	ship(b1, true, 100)
	ship(b1, false, 100) // a replay after a lost answer or a crash
	ship(b2, true, 180)
	ship(b1, false, 180)
	if pos, err := st.ShippedTo(ctx, 9, 1); err != nil || pos != 180 {
		t.Fatalf("ShippedTo: %d, %v; want 180", pos, err)
	}

	// Four shippers racing with the same batch: one counts it.
	b3 := shortener.ClickBatch{Journal: 9, Node: 1, Segment: 1, From: 180, To: 200, Clicks: []shortener.Click{{LinkID: 43, At: at(13, 30)}}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for range 4 {
		wg.Go(func() {
			for {
				ok, _, err := st.ShipClicks(ctx, b3)
				if err != nil { // a deadlock between the racers: retried, as the shipper does
					continue
				}
				if ok {
					mu.Lock()
					applied++
					mu.Unlock()
				}
				return
			}
		})
	}
	wg.Wait()
	if applied != 1 {
		t.Fatalf("the raced batch was applied %d times, want 1", applied)
	}

	stats, err := st.ClickStats(ctx, 42, day.Add(12*time.Hour), day.Add(15*time.Hour), false, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 4 || stats.Bots != 1 || stats.Browsers != 3 {
		t.Errorf("link 42, 12:00-15:00: total %d bots %d browsers %d; want 4, 1, 3", stats.Total, stats.Bots, stats.Browsers)
	}
	want := []int64{2, 1, 1}
	if len(stats.Series) != len(want) {
		t.Fatalf("series %+v, want %d buckets", stats.Series, len(want))
	}
	for i, w := range want {
		if stats.Series[i].Clicks != w || !stats.Series[i].Start.Equal(day.Add(time.Duration(12+i)*time.Hour)) {
			t.Errorf("bucket %d: %+v, want %d clicks at %d:00", i, stats.Series[i], w, 12+i)
		}
	}
	// Referrers are by day: the whole of Dec 3.
	wantRefs := []shortener.ReferrerCount{{Host: "t.co", Clicks: 2}, {Host: "", Clicks: 1}, {Host: "news.example", Clicks: 1}}
	if len(stats.Referrers) != len(wantRefs) {
		t.Fatalf("referrers %+v, want %+v", stats.Referrers, wantRefs)
	}
	for i, w := range wantRefs {
		if stats.Referrers[i] != w {
			t.Errorf("referrer %d: %+v, want %+v", i, stats.Referrers[i], w)
		}
	}
	if !stats.AsOf.Equal(at(13, 5)) {
		t.Errorf("as_of %v, want %v (journal 9's caught-up time)", stats.AsOf, at(13, 5))
	}

	// Deleting the link keeps its counts; by day, both days.
	if err := st.Delete(ctx, "clk42", day.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	stats, err = st.ClickStats(ctx, 42, day, day.Add(48*time.Hour), true, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 5 || len(stats.Series) != 2 || stats.Series[0].Clicks != 4 || stats.Series[1].Clicks != 1 {
		t.Errorf("after delete, by day: total %d series %+v; want 5 as [4 1]", stats.Total, stats.Series)
	}
	if stats, err := st.ClickStats(ctx, 43, day, day.Add(24*time.Hour), true, 10); err != nil || stats.Total != 2 {
		t.Errorf("link 43: total %d, %v; want 2 (the raced batch once)", stats.Total, err)
	}

	// A retired journal no longer holds as_of back; forgotten segments
	// read as unshipped.
	if err := st.RetireJournal(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if stats, _ := st.ClickStats(ctx, 42, day, day.Add(24*time.Hour), true, 10); time.Since(stats.AsOf) > time.Minute {
		t.Errorf("as_of %v after the only journal retired, want about now", stats.AsOf)
	}
	if err := st.ForgetSegments(ctx, 9, 1); err != nil {
		t.Fatal(err)
	}
	if pos, err := st.ShippedTo(ctx, 9, 1); err != nil || pos != 0 {
		t.Errorf("ShippedTo after forgetting: %d, %v; want 0", pos, err)
	}
}
