package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"shortener"
	"shortener/analytics"
	"shortener/store"
)

// TestShipClickDims ships analyzed clicks, clicks made with analytics off
// and a replay: every dimension sums to the clicks, each value counted
// once, unknown values under "ZZ" and "unknown"; unique visitors are
// counted per hour and per day from batches shipped apart (the sketches
// merged), a replayed batch adds nothing, and over several days the
// days' visitors add up (a visitor's hash changes with the day's key).
func TestShipClickDims(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	day := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	l := shortener.Link{ID: 77, Code: "dims77", URL: "https://example.com/dims", Redirect: 302, CreatedAt: day}
	if err := st.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	at := func(h int) time.Time { return day.Add(time.Duration(h)*time.Hour + 5*time.Minute) }
	us, de := [2]byte{'U', 'S'}, [2]byte{'D', 'E'}
	chrome, safari := uint8(analytics.BrowserChrome), uint8(analytics.BrowserSafari)
	win, ios := uint8(analytics.OSWindows), uint8(analytics.OSIOS)
	mobile, bot := uint8(analytics.DeviceMobile), uint8(analytics.DeviceBot)
	click := func(h int, d shortener.ClickDims) shortener.Click {
		return shortener.Click{LinkID: 77, At: at(h), Analyzed: true, Dims: d}
	}
	// 300 visitors in hour 10, 100 of them again in hour 11 with 100 new
	// ones, in two batches; then the off-analytics clicks.
	visitor := func(i int) uint64 { return rand.New(rand.NewPCG(uint64(i), 7)).Uint64() | 1 }
	var b1, b2 []shortener.Click
	for i := range 300 {
		b1 = append(b1, click(10, shortener.ClickDims{Country: us, Browser: chrome, OS: win, Visitor: visitor(i)}))
	}
	for i := 200; i < 400; i++ {
		b2 = append(b2, click(11, shortener.ClickDims{Country: de, Browser: safari, OS: ios, Device: mobile, Visitor: visitor(i)}))
	}
	b2 = append(b2,
		click(11, shortener.ClickDims{Browser: chrome, Device: bot}), // no country, no visitor
		shortener.Click{LinkID: 77, At: at(12)},                      // analytics off
		shortener.Click{LinkID: 77, At: at(12), Agent: shortener.AgentBot},
	)
	// The next day, visitor 1 again: under that day's key, another hash.
	b3 := []shortener.Click{click(24+9, shortener.ClickDims{Country: us, Visitor: visitor(1000)})}
	pos := int64(0)
	for _, cs := range [][]shortener.Click{b1, b2, b3} {
		b := shortener.ClickBatch{Journal: 31, Node: 1, Segment: 1, From: pos, To: pos + int64(len(cs)), Clicks: cs}
		if applied, _, _, err := st.ShipClicks(ctx, b); err != nil || !applied {
			t.Fatalf("ship [%d, %d): %v %v", b.From, b.To, applied, err)
		}
		// A replay (the answer lost) changes nothing.
		if applied, _, _, err := st.ShipClicks(ctx, b); err != nil || applied {
			t.Fatalf("replay [%d, %d): %v %v", b.From, b.To, applied, err)
		}
		pos = b.To
	}

	stats, err := st.ClickStats(ctx, 77, day, day.Add(48*time.Hour), true, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 504 {
		t.Fatalf("total %d, want 504", stats.Total)
	}
	for _, dim := range shortener.Dimensions {
		var sum int64
		for _, n := range stats.Dims[dim] {
			sum += n
		}
		if sum != stats.Total {
			t.Errorf("%s values sum to %d, want the total %d: %v", dim, sum, stats.Total, stats.Dims[dim])
		}
	}
	for _, c := range []struct {
		dim, value string
		want       int64
	}{
		{shortener.DimCountry, "US", 301}, {shortener.DimCountry, "DE", 200}, {shortener.DimCountry, "ZZ", 3},
		{shortener.DimBrowser, "chrome", 301}, {shortener.DimBrowser, "safari", 200}, {shortener.DimBrowser, "unknown", 2},
		{shortener.DimBrowser, "other", 1},
		{shortener.DimOS, "windows", 300}, {shortener.DimOS, "ios", 200}, {shortener.DimOS, "unknown", 2},
		{shortener.DimDevice, "desktop", 301}, {shortener.DimDevice, "mobile", 200}, {shortener.DimDevice, "bot", 2},
		{shortener.DimDevice, "unknown", 1},
	} {
		if got := stats.Dims[c.dim][c.value]; got != c.want {
			t.Errorf("%s %q: %d clicks, want %d", c.dim, c.value, got, c.want)
		}
	}
	// HyperLogLog at precision 14 errs by about 0.8%; these sizes are
	// exact or nearly in its sparse form. 401: 400 on the first day, 1
	// on the second.
	near := func(got int64, want int64) bool { return got >= want-want/50-1 && got <= want+want/50+1 }
	if !near(stats.Visitors, 401) {
		t.Errorf("unique visitors over two days: %d, want about 401", stats.Visitors)
	}
	if v := stats.Series[0].Visitors; !near(v, 400) {
		t.Errorf("first day's unique visitors %d, want about 400", v)
	}
	hourly, err := st.ClickStats(ctx, 77, day.Add(10*time.Hour), day.Add(13*time.Hour), false, 10)
	if err != nil {
		t.Fatal(err)
	}
	if v := hourly.Series; !near(v[0].Visitors, 300) || !near(v[1].Visitors, 200) || v[2].Visitors != 0 || !near(hourly.Visitors, 400) {
		t.Errorf("hourly visitors %+v (whole %d), want about 300, 200, 0 and 400 in all", v, hourly.Visitors)
	}
	if len(stats.DayDims) == 0 || !stats.DayDims[0].Day.Equal(day) {
		t.Errorf("day dims %+v, want the first day's first", stats.DayDims)
	}
}

// TestSeenVisitorsSkipWrites: a batch whose visitors of a sketch were all
// in an earlier committed batch of this process does not write that
// sketch (the stored one would not change), one with a new visitor
// does, and a second process, which has stored nothing, writes its own
// and merges rather than replaces. Shown on the stored row: a marker
// written over it between batches stays while the batches skip it.
func TestSeenVisitorsSkipWrites(t *testing.T) {
	st, db, dsn := migratedWithDB(t)
	ctx := context.Background()
	day := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := st.Create(ctx, shortener.Link{ID: 88, Code: "seen88", URL: "https://example.com/seen", Redirect: 302, CreatedAt: day}); err != nil {
		t.Fatal(err)
	}
	at := day.Add(10 * time.Hour)
	pos := int64(0)
	ship := func(st *store.Store, journal int64, visitors ...uint64) {
		t.Helper()
		var cs []shortener.Click
		// Each visitor clicks twice: a batch then holds enough clicks of
		// the link to write its sketches at once (not pending: clickfold.go).
		for _, v := range append(visitors, visitors...) {
			// A visitor hash is uniform (SHA-256); HyperLogLog needs it so.
			h := rand.New(rand.NewPCG(v, 88)).Uint64() | 1
			cs = append(cs, shortener.Click{LinkID: 88, At: at, Analyzed: true, Dims: shortener.ClickDims{Visitor: h}})
		}
		b := shortener.ClickBatch{Journal: journal, Node: 1, Segment: 1, From: pos, To: pos + 1, Clicks: cs}
		if journal != 1 {
			b.From, b.To = 0, 1
		} else {
			pos++
		}
		if applied, _, _, err := st.ShipClicks(ctx, b); err != nil || !applied {
			t.Fatalf("ship: %v %v", applied, err)
		}
	}
	var stored []byte
	row := func() []byte {
		t.Helper()
		var b []byte
		if err := db.QueryRowContext(ctx, "SELECT sketch FROM click_visitors WHERE link_id = 88 AND period = 'hour'").Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	set := func(b []byte) {
		t.Helper()
		if _, err := db.ExecContext(ctx, "UPDATE click_visitors SET sketch = ? WHERE link_id = 88 AND period = 'hour'", b); err != nil {
			t.Fatal(err)
		}
	}
	visitors := func(want int64) {
		t.Helper()
		hourly, err := st.ClickStats(ctx, 88, at.Truncate(time.Hour), at.Truncate(time.Hour).Add(time.Hour), false, 10)
		if err != nil {
			t.Fatal(err)
		}
		if hourly.Visitors != want {
			t.Errorf("the hour's visitors: %d, want %d", hourly.Visitors, want)
		}
	}
	ship(st, 1, 11, 13, 11)
	stored = row()
	set([]byte("marker"))
	ship(st, 1, 13, 11, 13) // the same visitors again: nothing to write
	if string(row()) != "marker" {
		t.Errorf("a batch of visitors already stored wrote the sketch again")
	}
	set(stored)
	ship(st, 1, 11, 17) // a new visitor: written
	visitors(3)
	// Another process (another journal) has stored nothing: it writes,
	// merging with what is there.
	other := openStore(t, dsn)
	ship(other, 2, 11, 19)
	visitors(4)
	stats, err := st.ClickStats(ctx, 88, day, day.Add(24*time.Hour), true, 10)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 20 || stats.Visitors != 4 {
		t.Errorf("%d clicks, %d visitors; want 20 clicks of 4 visitors (11, 13, 17, 19)", stats.Total, stats.Visitors)
	}
}

// TestDimsAcrossTables: days counted before click_dim_sets (rows of
// click_dims, as the version before migration 0027 wrote them) and
// clicks shipped since add up, within a day and across days, one
// DayDims entry per day, dimension and value in order; and a click
// shipped now writes one row, its combination, not one per dimension.
func TestDimsAcrossTables(t *testing.T) {
	st, db, _ := migratedWithDB(t)
	ctx := context.Background()
	day := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	if err := st.Create(ctx, shortener.Link{ID: 91, Code: "sets91", URL: "https://example.com/sets", Redirect: 302, CreatedAt: day}); err != nil {
		t.Fatal(err)
	}
	// Two clicks the old way on day 1: one from the US on Chrome.
	if _, err := db.ExecContext(ctx, `INSERT INTO click_dims (link_id, day, dim, value, clicks) VALUES
		(91, ?, 'country', 'US', 2), (91, ?, 'browser', 'chrome', 2), (91, ?, 'os', 'windows', 2), (91, ?, 'device', 'desktop', 2)`,
		day, day, day, day); err != nil {
		t.Fatal(err)
	}
	us, de := [2]byte{'U', 'S'}, [2]byte{'D', 'E'}
	cs := []shortener.Click{
		{LinkID: 91, At: day.Add(time.Hour), Analyzed: true, Dims: shortener.ClickDims{Country: us, Browser: uint8(analytics.BrowserChrome), OS: uint8(analytics.OSWindows)}},
		{LinkID: 91, At: day.Add(25 * time.Hour), Analyzed: true, Dims: shortener.ClickDims{Country: de, Browser: uint8(analytics.BrowserSafari), OS: uint8(analytics.OSIOS), Device: uint8(analytics.DeviceMobile)}},
	}
	b := shortener.ClickBatch{Journal: 91, Node: 1, Segment: 1, From: 0, To: 2, Clicks: cs}
	if applied, _, _, err := st.ShipClicks(ctx, b); err != nil || !applied {
		t.Fatalf("ship: %v %v", applied, err)
	}
	// Two clicks of a link in a batch wait in click_pending; folded,
	// they are in click_dim_sets.
	if n, err := st.FoldClicks(ctx, time.Now()); err != nil || n != 2 {
		t.Fatalf("fold: %d, %v; want 2 clicks folded", n, err)
	}
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM click_dim_sets WHERE link_id = 91").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Errorf("click_dim_sets holds %d rows for two clicks on two days, want 2", rows)
	}
	stats, err := st.ClickStats(ctx, 91, day, day.Add(48*time.Hour), true, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dim, value string
		want       int64
	}{
		{shortener.DimCountry, "US", 3}, {shortener.DimCountry, "DE", 1},
		{shortener.DimBrowser, "chrome", 3}, {shortener.DimOS, "ios", 1}, {shortener.DimDevice, "desktop", 3},
	} {
		if got := stats.Dims[c.dim][c.value]; got != c.want {
			t.Errorf("%s %q: %d clicks, want %d", c.dim, c.value, got, c.want)
		}
	}
	var got []string
	for _, d := range stats.DayDims {
		got = append(got, fmt.Sprintf("%s %s %s %d", d.Day.Format(time.DateOnly), d.Dim, d.Value, d.Clicks))
	}
	want := []string{
		"2026-12-04 country US 3", "2026-12-04 browser chrome 3", "2026-12-04 os windows 3", "2026-12-04 device desktop 3",
		"2026-12-05 country DE 1", "2026-12-05 browser safari 1", "2026-12-05 os ios 1", "2026-12-05 device mobile 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("day dims:\n got %q\nwant %q", got, want)
	}
}

// migratedWithDB is a migrated store, a connection of the test's own to
// the same database (for reading and writing rows behind the store) and
// the database's DSN.
func migratedWithDB(tb testing.TB) (*store.Store, *sql.DB, string) {
	tb.Helper()
	dsn := database(tb)
	st := openStore(tb, dsn)
	if err := st.Migrate(context.Background(), 30*time.Second); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return st, db, dsn
}
