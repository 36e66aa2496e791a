package store_test

import (
	"context"
	"fmt"
	"shortener"
	"testing"
	"time"

	"shortener/internal/poll"
)

// TestInvalidationOutbox: every pending code is returned, past any page
// size, once each; and the grace that keeps a record pending is measured on
// the database's clock, not on the clock of the app that deleted (here an
// hour behind), so a skewed app cannot end it early.
func TestInvalidationOutbox(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	skewed := time.Now().Add(-time.Hour) // the deleting app's clock
	const n = 1203
	for i := range n {
		code := fmt.Sprintf("d%d", i)
		if err := st.Create(ctx, shortener.Link{ID: int64(i + 1), Code: code, URL: "https://example.com/", Redirect: 302, CreatedAt: skewed}); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, code, skewed); err != nil {
			t.Fatal(err)
		}
	}
	invs, err := st.PendingInvalidations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, inv := range invs {
		if seen[inv.Code] {
			t.Errorf("%s returned twice", inv.Code)
		}
		seen[inv.Code] = true
	}
	if len(seen) != n {
		t.Errorf("%d pending codes returned, want %d (all of them)", len(seen), n)
	}
	// Recorded an hour ago by the deleting app's clock, seconds ago by
	// MySQL's: a 30-minute grace keeps them.
	if err := st.DoneInvalidations(ctx, []string{"d0", "d1"}, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	if invs, _ := st.PendingInvalidations(ctx); len(invs) != n {
		t.Errorf("records seconds old by MySQL's clock were removed within a 30 min grace: %d left, want %d", len(invs), n)
	}
	// Once the grace has passed on MySQL's clock, they go.
	poll.Until(t, "the records past the grace removed", func() error {
		if err := st.DoneInvalidations(ctx, []string{"d0", "d1"}, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if invs, err := st.PendingInvalidations(ctx); err != nil || len(invs) != n-2 {
			return fmt.Errorf("%d pending, want %d (%v)", len(invs), n-2, err)
		}
		return nil
	})
}
