package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"shortener"
)

// TestShipClicksOnce ships a batch twice (and a third batch from four
// shippers at once): each is counted once, and the counts read back by
// hour, day, referrer and agent class, also after the link is deleted.
func TestShipClicksOnce(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
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
		applied, pos, _, err := st.ShipClicks(ctx, b)
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
				ok, _, _, err := st.ShipClicks(ctx, b3)
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
	// read as counted whole (TestForgottenSegmentsCountNothing).
	if err := st.RetireJournal(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if stats, _ := st.ClickStats(ctx, 42, day, day.Add(24*time.Hour), true, 10); time.Since(stats.AsOf) > time.Minute {
		t.Errorf("as_of %v after the only journal retired, want about now", stats.AsOf)
	}
	if err := st.ForgetSegments(ctx, 9, 1); err != nil {
		t.Fatal(err)
	}
	if pos, err := st.ShippedTo(ctx, 9, 1); err != nil || pos != shortener.SegmentForgotten {
		t.Errorf("ShippedTo after forgetting: %d, %v; want SegmentForgotten", pos, err)
	}
}

// TestShipClicksRequestOnce: a request nginx retried on a second instance
// is a click in two journals; whichever ships first counts it, the other
// counts it not, also when one of the batches is replayed after a crash,
// when both race, and when one journal holds it twice. Purging forgets
// only requests no journal can still hold.
func TestShipClicksRequestOnce(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := st.Create(ctx, shortener.Link{ID: 50, Code: "req50", URL: "https://example.com/50", Redirect: 302, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	req := func(n byte, at time.Time) shortener.ClickRequest {
		return shortener.ClickRequest{ID: [16]byte{0: n, 15: 0xAB}, At: at.UnixMilli()}
	}
	clk := func(r shortener.ClickRequest) shortener.Click {
		return shortener.Click{LinkID: 50, At: now, Request: r}
	}
	total := func() int64 {
		t.Helper()
		stats, err := st.ClickStats(ctx, 50, now.Truncate(time.Hour), now.Truncate(time.Hour).Add(time.Hour), false, 10)
		if err != nil {
			t.Fatal(err)
		}
		return stats.Total
	}
	ship := func(b shortener.ClickBatch, wantApplied bool, wantDups int) {
		t.Helper()
		applied, _, dups, err := st.ShipClicks(ctx, b)
		if err != nil || applied != wantApplied || dups != wantDups {
			t.Fatalf("ShipClicks journal %d [%d, %d): applied %v, dups %d, %v; want %v, %d, nil", b.Journal, b.From, b.To, applied, dups, err, wantApplied, wantDups)
		}
	}
	r1, r2, r3 := req(1, now), req(2, now), req(3, now)
	// Journal 31 has r1, r2 and a click nginx did not name (direct to
	// the app): three clicks.
	a := shortener.ClickBatch{Journal: 31, Node: 1, Segment: 1, From: 0, To: 10, Clicks: []shortener.Click{clk(r1), clk(r2), {LinkID: 50, At: now}}}
	ship(a, true, 0)
	ship(a, false, 0) // replayed after a crash: the position says no
	if got := total(); got != 3 {
		t.Fatalf("after journal 31: %d clicks, want 3", got)
	}
	// Journal 32 got r2 too (nginx's retry), r3 twice (a retry that came
	// back to the same instance) and one unnamed click.
	b := shortener.ClickBatch{Journal: 32, Node: 2, Segment: 1, From: 0, To: 10, Clicks: []shortener.Click{clk(r2), clk(r3), clk(r3), {LinkID: 50, At: now}}}
	ship(b, true, 2)
	ship(b, false, 0)
	if got := total(); got != 5 {
		t.Fatalf("after journal 32: %d clicks, want 5 (r1, r2, r3 and two unnamed)", got)
	}
	// The same requests in a segment with no position row yet (a copy
	// of the journal shipped as new): they still count once.
	ship(shortener.ClickBatch{Journal: 31, Node: 1, Segment: 2, From: 0, To: 10, Clicks: []shortener.Click{clk(r1), clk(r2)}}, true, 2)
	if got := total(); got != 5 {
		t.Fatalf("after journal 31 replayed its requests: %d clicks, want 5", got)
	}

	// Two journals racing with 300 shared requests, in opposite orders:
	// each request is counted once, the batches both commit.
	var shared []shortener.Click
	for i := range 300 {
		shared = append(shared, clk(shortener.ClickRequest{ID: [16]byte{0: 0x10, 1: byte(i), 2: byte(i >> 8)}, At: now.UnixMilli() + int64(i%7)}))
	}
	rev := slices.Clone(shared)
	slices.Reverse(rev)
	var wg sync.WaitGroup
	var dupsSeen [2]int
	for i, cs := range [][]shortener.Click{shared, rev} {
		wg.Go(func() {
			bt := shortener.ClickBatch{Journal: int64(40 + i), Node: int64(i + 1), Segment: 1, From: 0, To: 10, Clicks: cs}
			for {
				applied, pos, dups, err := st.ShipClicks(ctx, bt)
				if err != nil { // a deadlock: the shipper retries the batch
					continue
				}
				if !applied && pos != bt.To {
					t.Errorf("journal %d: not applied at %d", bt.Journal, pos)
				}
				if applied {
					dupsSeen[i] = dups
				}
				return
			}
		})
	}
	wg.Wait()
	if got := total(); got != 305 {
		t.Fatalf("after the race: %d clicks, want 305", got)
	}
	if dupsSeen[0]+dupsSeen[1] != 300 {
		t.Errorf("the racers skipped %d duplicates, want 300 between them", dupsSeen[0]+dupsSeen[1])
	}

	// Purging: journal 31 says it is caught up to an hour ago; nothing
	// of a request it could still hold (younger than that less the max
	// request age) goes. Then it catches up, and what is older than the
	// 10-minute window goes too.
	for _, j := range []int64{32, 40, 41} {
		if err := st.RetireJournal(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := now.Add(-time.Hour)
	if err := st.CaughtUp(ctx, 31, 1, hourAgo); err != nil {
		t.Fatal(err)
	}
	old, edge, recent := req(4, hourAgo.Add(-time.Minute)), req(5, hourAgo.Add(-10*time.Second)), req(6, now.Add(-time.Minute))
	for i, r := range []shortener.ClickRequest{old, edge, recent} { // a set each
		ship(shortener.ClickBatch{Journal: 33, Node: 3, Segment: int64(i + 1), From: 0, To: 10, Clicks: []shortener.Click{clk(r)}}, true, 0)
	}
	if err := st.RetireJournal(ctx, 33); err != nil {
		t.Fatal(err)
	}
	if n, err := st.PurgeClickRequests(ctx, 30*time.Second, 10*time.Minute, 24*time.Hour); err != nil || n != 1 {
		t.Fatalf("purge behind journal 31: %d, %v; want 1 (the set of the request older than an hour and 30 s)", n, err)
	}
	again := func(journal int64, r shortener.ClickRequest, wantDups int) {
		t.Helper()
		ship(shortener.ClickBatch{Journal: journal, Node: 3, Segment: 1, From: 0, To: 10, Clicks: []shortener.Click{clk(r)}}, true, wantDups)
	}
	again(34, edge, 1) // still remembered
	again(35, old, 0)  // forgotten: counted as new (this is what the horizon must make impossible)
	if err := st.CaughtUp(ctx, 31, 1, now); err != nil {
		t.Fatal(err)
	}
	for _, j := range []int64{34, 35} {
		if err := st.RetireJournal(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.PurgeClickRequests(ctx, 30*time.Second, 10*time.Minute, 24*time.Hour); err != nil || n != 3 {
		t.Fatalf("purge with every journal caught up: %d, %v; want 3 (the sets of old and edge, edge's twice: older than the 10-minute window)", n, err)
	}
	again(36, recent, 1) // inside the window: remembered
}

// TestForgottenSegmentsCountNothing forgets a journal's segments once
// counted: their positions go, and a copy of one that comes back (a
// restored backup of the journal directory) is answered as counted to its
// end, from ShippedTo and from ShipClicks alike, while a later segment of
// the same journal counts as usual.
func TestForgottenSegmentsCountNothing(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	batch := func(seg, from, to int64) shortener.ClickBatch {
		return shortener.ClickBatch{Journal: 51, Node: 1, Segment: seg, From: from, To: to, Clicks: []shortener.Click{{LinkID: 500, At: at}}}
	}
	for seg := int64(1); seg <= 3; seg++ {
		if applied, _, _, err := st.ShipClicks(ctx, batch(seg, 0, 100)); !applied || err != nil {
			t.Fatalf("ship segment %d: %v, %v", seg, applied, err)
		}
	}
	if err := st.ForgetSegments(ctx, 51, 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ seg, want int64 }{{1, shortener.SegmentForgotten}, {2, shortener.SegmentForgotten}, {3, 100}, {4, 0}} {
		if pos, err := st.ShippedTo(ctx, 51, tc.seg); err != nil || pos != tc.want {
			t.Errorf("ShippedTo segment %d: %d, %v; want %d", tc.seg, pos, err, tc.want)
		}
	}
	// The restored copy's shipper, finding no row, would ship from 0.
	if applied, pos, _, err := st.ShipClicks(ctx, batch(1, 0, 100)); applied || pos != shortener.SegmentForgotten || err != nil {
		t.Errorf("ship a forgotten segment again: applied %v at %d, %v; want not applied, SegmentForgotten", applied, pos, err)
	}
	if applied, _, _, err := st.ShipClicks(ctx, batch(4, 0, 100)); !applied || err != nil {
		t.Errorf("ship the next segment: %v, %v; want applied", applied, err)
	}
	// Forgetting is monotonic: an older through does not bring segments back.
	if err := st.ForgetSegments(ctx, 51, 1); err != nil {
		t.Fatal(err)
	}
	if pos, _ := st.ShippedTo(ctx, 51, 2); pos != shortener.SegmentForgotten {
		t.Errorf("ShippedTo segment 2 after forgetting through 1 again: %d, want SegmentForgotten", pos)
	}
	stats, err := st.ClickStats(ctx, 500, at.Truncate(time.Hour), at.Truncate(time.Hour).Add(time.Hour), false, 1)
	if err != nil || stats.Total != 4 {
		t.Errorf("link 500 has %d clicks (%v), want 4: one per segment, none twice", stats.Total, err)
	}
}

// TestNothingPinnedInTheFuture records a caught-up time an hour ahead, as
// an instance whose clock jumped forward would: it is stored as MySQL's
// now, so once the clock is back as_of does not claim the next hour
// counted. And a set of requests claiming year 9999 (a forged X-Click-Id,
// before the journal clamped such times) is purged, not kept for ever
// for every batch to read.
func TestNothingPinnedInTheFuture(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC()
	forged := shortener.ClickRequest{ID: [16]byte{0: 0x99}, At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()}
	ship := func(journal int64, wantDups int) {
		t.Helper()
		b := shortener.ClickBatch{Journal: journal, Node: 1, Segment: 1, From: 0, To: 10,
			Clicks: []shortener.Click{{LinkID: 600, At: now, Request: forged}}}
		if applied, _, dups, err := st.ShipClicks(ctx, b); !applied || dups != wantDups || err != nil {
			t.Fatalf("ship the forged request from journal %d: applied %v, %d dups, %v; want %d dups", journal, applied, dups, err, wantDups)
		}
	}
	ship(70, 0)
	ship(71, 1) // remembered
	if n, err := st.PurgeClickRequests(ctx, 30*time.Second, 10*time.Minute, 24*time.Hour); err != nil || n < 1 {
		t.Fatalf("purge: %d, %v; want the year-9999 set purged", n, err)
	}
	ship(72, 0) // forgotten: the set is gone

	if err := st.CaughtUp(ctx, 61, 1, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The clock is back: the journal is caught up only to now.
	if err := st.CaughtUp(ctx, 61, 1, now); err != nil {
		t.Fatal(err)
	}
	var stored time.Time
	if err := st.CaughtUpAt(ctx, 61, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.After(now.Add(time.Minute)) {
		t.Errorf("journal 61 caught up at %v, an hour ahead of %v: a clock that jumped pinned it", stored, now)
	}
}

// TestShipClicksManyLinks: a batch whose clicks make more rows than one
// prepared statement carries (upsertRows: preparedRows a statement, the
// rest as text) counts every click once, in every table: 1,234 links,
// each clicked once, twice or three times by as many visitors, twice
// over (the second batch adds to the rows the first made).
func TestShipClicksManyLinks(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	const n = 1234
	day := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	ls := make([]shortener.Link, n)
	for i := range ls {
		ls[i] = shortener.Link{ID: int64(-1 - i), Code: fmt.Sprintf("many%d", i), URL: "https://example.com/", Redirect: 302, CreatedAt: day}
	}
	if _, err := st.Import(ctx, ls); err != nil {
		t.Fatal(err)
	}
	at := day.Add(9*time.Hour + 30*time.Minute)
	batch := func(from int64, visitor uint64) shortener.ClickBatch {
		b := shortener.ClickBatch{Journal: 11, Node: 1, Segment: 1, From: from, To: from + 1}
		for i, l := range ls {
			for v := range i%3 + 1 {
				b.Clicks = append(b.Clicks, shortener.Click{LinkID: l.ID, At: at, Referrer: "t.co", Analyzed: true,
					Dims: shortener.ClickDims{Country: [2]byte{'D', 'E'}, Browser: 1, OS: 1, Visitor: (visitor+uint64(v))*0x9E3779B97F4A7C15 | 1}}) // spread, as hashes are
			}
		}
		return b
	}
	for i, b := range []shortener.ClickBatch{batch(0, 100), batch(1, 200)} {
		if applied, _, _, err := st.ShipClicks(ctx, b); err != nil || !applied {
			t.Fatalf("batch %d: %v, %v", i, applied, err)
		}
	}
	check := func(when string) {
		t.Helper()
		for i, l := range ls {
			want := int64(2 * (i%3 + 1))
			s, err := st.ClickStats(ctx, l.ID, day, day.Add(24*time.Hour), false, 5)
			if err != nil {
				t.Fatal(err)
			}
			if s.Total != want || s.Series[9].Clicks != want {
				t.Fatalf("%s, %s: total %d, 09:00 %d; want %d", when, l.Code, s.Total, s.Series[9].Clicks, want)
			}
			if len(s.Referrers) != 1 || s.Referrers[0].Clicks != want || s.Dims["country"]["DE"] != want {
				t.Fatalf("%s, %s: referrers %+v, countries %v; want t.co and DE %d", when, l.Code, s.Referrers, s.Dims["country"], want)
			}
			if s.Visitors != want || s.Series[9].Visitors != want {
				t.Fatalf("%s, %s: %d visitors, %d at 09:00; want %d", when, l.Code, s.Visitors, s.Series[9].Visitors, want)
			}
		}
	}
	// No link has denseClicks clicks in a batch: every click is pending
	// (clickfold.go) until folded, when every link's rows are written in
	// one transaction, the same counts.
	check("pending")
	var total int64
	for i := range ls {
		total += int64(2 * (i%3 + 1))
	}
	if folded, err := st.FoldClicks(ctx, time.Now()); err != nil || folded != total {
		t.Fatalf("fold: %d, %v; want %d", folded, err, total)
	}
	check("folded")
}
