package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"shortener"
	"testing"
	"time"
)

// TestInsertLinks inserts more links than one statement carries, among
// them codes taken before (by another owner, by a deleted link), a code
// repeated within the call and a taken ID: each returns what its code
// holds afterwards, and every inserted link reads back whole.
func TestInsertLinks(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	taken := shortener.Link{ID: 900_001, Code: "taken", URL: "https://example.com/mine", Redirect: 302, CreatedAt: now, Owner: "owner-b"}
	gone := shortener.Link{ID: 900_002, Code: "gone", URL: "https://example.com/gone", Redirect: 302, CreatedAt: now, Owner: "owner-a"}
	for _, l := range []shortener.Link{taken, gone} {
		if err := st.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "gone", now); err != nil {
		t.Fatal(err)
	}
	gone, _ = st.Link(ctx, "gone")

	var links []shortener.Link
	for i := range 1100 {
		links = append(links, shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("in%04d", i), URL: fmt.Sprintf("https://example.com/%d", i),
			Redirect: 301, CreatedAt: now.Add(-time.Hour), Owner: "owner-a"})
	}
	links[3].Tags, links[3].MaxVisits, links[3].Disabled, links[3].ExpiresAt = []string{"a", "b"}, 5, true, now.Add(time.Hour)
	links[700].Code = "taken"                                                                                                                        // another owner's
	links[701].Code = "gone"                                                                                                                         // deleted: codes are never reused
	links[702].Code = "in0002"                                                                                                                       // repeats an earlier row of the call
	links[703].ID = 900_001                                                                                                                          // a taken ID, a free code
	links = append(links, shortener.Link{ID: 5000, Code: "in0600", URL: "https://example.com/dup", Redirect: 302, CreatedAt: now, Owner: "owner-a"}) // repeats a row of another statement

	stored, err := st.InsertLinks(ctx, links)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(links) {
		t.Fatalf("got %d results for %d links", len(stored), len(links))
	}
	for i, l := range links {
		var want shortener.Link
		switch i {
		case 700:
			want = taken
		case 701:
			want = gone
		case 702:
			want = links[2]
		case 703:
			// neither inserted nor found
		case len(links) - 1:
			want = links[600]
		default:
			want = l
		}
		if len(want.Tags) == 0 {
			want.Tags = nil
		}
		if !reflect.DeepEqual(stored[i], want) {
			t.Errorf("link %d (%s): got %+v, want %+v", i, l.Code, stored[i], want)
		}
	}
	if got, err := st.Link(ctx, "in0003"); err != nil || !reflect.DeepEqual(got, links[3]) {
		t.Errorf("in0003 reads back as %+v, %v; want %+v", got, err, links[3])
	}
	if _, err := st.Link(ctx, "in0703"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("a link whose ID was taken: %v, want not found", err)
	}
	// Again: nothing new, every code holds what it held.
	again, err := st.InsertLinks(ctx, links[:10])
	if err != nil || !reflect.DeepEqual(again, stored[:10]) {
		t.Errorf("inserted again: got %v, %v; want the same links", again, err)
	}
}

// TestClaimBatchKey claims a key, claims it again with the same and with
// another request, and reclaims it once it expired.
func TestClaimBatchKey(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	idem := shortener.Idempotency{Scope: "s", Key: "batch k", RequestHash: "h1", ExpiresAt: now.Add(time.Hour)}
	steps := []struct {
		name       string
		hash       string
		at         time.Time
		wantReplay bool
		wantErr    error
	}{
		{"first", "h1", now, false, nil},
		{"retry", "h1", now.Add(time.Minute), true, nil},
		{"another request", "h2", now.Add(time.Minute), false, shortener.ErrKeyReused},
		{"expired, another request", "h2", now.Add(2 * time.Hour), false, nil},
		{"retry of that one", "h2", now.Add(2 * time.Hour), true, nil},
	}
	for _, s := range steps {
		idem.RequestHash = s.hash
		if s.at.After(idem.ExpiresAt) {
			idem.ExpiresAt = s.at.Add(time.Hour)
		}
		replay, err := st.ClaimBatchKey(ctx, idem, s.at)
		if replay != s.wantReplay || !errors.Is(err, s.wantErr) {
			t.Errorf("%s: got %t, %v; want %t, %v", s.name, replay, err, s.wantReplay, s.wantErr)
		}
	}
	// Another scope's key of the same name is another key.
	idem.Scope = "t"
	if replay, err := st.ClaimBatchKey(ctx, idem, now); replay || err != nil {
		t.Errorf("another scope: got %t, %v; want a first claim", replay, err)
	}
}
