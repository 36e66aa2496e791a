package store_test

import (
	"context"
	"fmt"
	"reflect"
	"shortener"
	"testing"
	"time"
)

// TestSearchLinks searches one owner's links by every filter, in both
// orders and page by page: each page holds exactly the owner's matching
// links past the cursor, never another owner's or a deleted one, and LIKE's
// wildcards in a query match only themselves.
func TestSearchLinks(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const owner, other = "owner-a", "owner-b"
	links := []shortener.Link{
		{ID: 1, Code: "Alpha1", URL: "https://Example.com/Launch", Tags: []string{"launch", "q4"}},
		{ID: 2, Code: "beta_2", URL: "https://example.org/100%25", Tags: []string{"q4"}},
		{ID: 3, Code: "gamma3", URL: "https://shop.example.net/a_b", Tags: []string{"a_b"}},
		{ID: 4, Code: "delta4", URL: "https://example.com/launch/deleted", Tags: []string{"launch"}},
		{ID: 5, Code: "eps5", URL: "https://example.com/launch", Owner: other, Tags: []string{"launch"}},
		{ID: 6, Code: "zeta6", URL: "https://axb.example/", Tags: []string{"axb"}},
	}
	for i, l := range links {
		l.Redirect, l.CreatedAt = 302, base.Add(time.Duration(i)*time.Hour)
		if l.Owner == "" {
			l.Owner = owner
		}
		links[i] = l
		if err := st.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "delta4", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	codes := func(ls []shortener.Link) []string {
		out := []string{}
		for _, l := range ls {
			out = append(out, l.Code)
		}
		return out
	}
	for _, tt := range []struct {
		name, match, tag string
		from, to         time.Time
		oldest           bool
		want             []string
	}{
		{name: "all, newest first", want: []string{"zeta6", "gamma3", "beta_2", "Alpha1"}},
		{name: "all, oldest first", oldest: true, want: []string{"Alpha1", "beta_2", "gamma3", "zeta6"}},
		{name: "URL in any case", match: "LAUNCH", want: []string{"Alpha1"}},
		{name: "code as written", match: "Alpha", want: []string{"Alpha1"}},
		{name: "code, case differs", match: "ALPHA1", want: []string{}},
		{name: "underscore is no wildcard", match: "a_b", want: []string{"gamma3"}},
		{name: "percent is no wildcard", match: "1%5", want: []string{}},
		{name: "percent-encoded text", match: "100%25", want: []string{"beta_2"}},
		{name: "escape character", match: "!", want: []string{}},
		{name: "not ASCII", match: "é", want: []string{}},
		{name: "tag", tag: "q4", want: []string{"beta_2", "Alpha1"}},
		{name: "tag with underscore is no wildcard", tag: "a_b", want: []string{"gamma3"}},
		{name: "tag and query", tag: "launch", match: "example.com", want: []string{"Alpha1"}},
		{name: "created after", from: base.Add(time.Hour), want: []string{"zeta6", "gamma3"}},
		{name: "created before", to: base.Add(2 * time.Hour), want: []string{"beta_2", "Alpha1"}},
		{name: "created between", from: base, to: base.Add(5 * time.Hour), oldest: true, want: []string{"beta_2", "gamma3"}},
	} {
		got, err := st.SearchLinks(ctx, owner, tt.match, tt.tag, tt.from, tt.to, 0, tt.oldest, 10)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(codes(got), tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, codes(got), tt.want)
		}
	}

	// Page by page in both orders: every link once.
	for _, oldest := range []bool{false, true} {
		var seen []string
		var cursor int64
		for range 10 {
			page, err := st.SearchLinks(ctx, owner, "", "", time.Time{}, time.Time{}, cursor, oldest, 3)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, codes(page)...)
			if len(page) < 3 {
				break
			}
			cursor = page[len(page)-1].ID
		}
		if want := map[bool]string{false: "[zeta6 gamma3 beta_2 Alpha1]", true: "[Alpha1 beta_2 gamma3 zeta6]"}[oldest]; fmt.Sprint(seen) != want {
			t.Errorf("pages (oldest %t): got %v, want %s", oldest, seen, want)
		}
	}
	if got, _ := st.SearchLinks(ctx, owner, "", "", time.Time{}, time.Time{}, 0, false, 10); !reflect.DeepEqual(got[len(got)-1], links[0]) {
		t.Errorf("a link searched for reads back as %+v, want %+v", got[len(got)-1], links[0])
	}
}

// TestExportLinks exports more links than one page holds, with clicks on
// some: every link not deleted once, oldest first, each with its total.
func TestExportLinks(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	const n = 1203 // two full pages and a part
	var clicks []shortener.Click
	for i := 1; i <= n; i++ {
		l := shortener.Link{ID: int64(i), Code: fmt.Sprintf("ex%04d", i), URL: "https://example.com/", Redirect: 302, CreatedAt: now, Owner: "owner-a"}
		if err := st.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		for range i % 3 { // links 1, 2, 4, 5, ... clicked once or twice
			clicks = append(clicks, shortener.Click{LinkID: l.ID, Code: l.Code, At: now.Add(-time.Duration(i) * time.Minute)})
		}
	}
	if err := st.Create(ctx, shortener.Link{ID: n + 1, Code: "someone-else", URL: "https://example.com/", Redirect: 302, CreatedAt: now, Owner: "owner-b"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "ex0500", now); err != nil {
		t.Fatal(err)
	}
	if applied, _, _, err := st.ShipClicks(ctx, shortener.ClickBatch{Journal: 1, Node: 1, Segment: 1, From: 0, To: 1, Clicks: clicks, CaughtUp: now}); err != nil || !applied {
		t.Fatalf("ship clicks: %t, %v", applied, err)
	}
	var got []string
	var total int64
	err := st.ExportLinks(ctx, "owner-a", func(l shortener.Link, c int64) error {
		var i int
		fmt.Sscanf(l.Code, "ex%04d", &i)
		if want := int64(i % 3); c != want {
			t.Errorf("%s: %d clicks, want %d", l.Code, c, want)
		}
		got, total = append(got, l.Code), total+c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n-1 || got[0] != "ex0001" || got[len(got)-1] != fmt.Sprintf("ex%04d", n) || got[499] != "ex0501" {
		t.Errorf("exported %d links from %s to %s (500th %s); want %d, ex0001 to ex%04d, the deleted ex0500 left out", len(got), got[0], got[len(got)-1], got[499], n-1, n)
	}
	if total != int64(len(clicks)-500%3) {
		t.Errorf("exported %d clicks, want %d", total, len(clicks)-500%3)
	}
}
