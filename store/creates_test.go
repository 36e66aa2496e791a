package store_test

import (
	"context"
	"errors"
	"fmt"
	"shortener"
	"sync"
	"testing"
	"time"
)

// TestCreatesTogether: creates queued behind busy statement slots go in
// as one statement, each committed; in a statement where one row's code
// or ID is taken, every other row still goes in and each create gets its
// own answer, the taken ones leaving no row.
func TestCreatesTogether(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(id int64, code string) shortener.Link {
		return shortener.Link{ID: id, Code: code, URL: "https://example.com/" + code, Redirect: 302, CreatedAt: now, Owner: "owner-a"}
	}
	if err := st.Create(ctx, mk(1, "taken")); err != nil {
		t.Fatal(err)
	}

	// createAll queues links behind held slots, lets them go together
	// and returns each one's answer.
	createAll := func(links []shortener.Link) []error {
		release := st.HoldCreates()
		errs := make([]error, len(links))
		var wg sync.WaitGroup
		for i, l := range links {
			wg.Go(func() { errs[i] = st.Create(ctx, l) })
		}
		release(len(links))
		wg.Wait()
		return errs
	}

	before := st.MultiRowCreates()
	var clean []shortener.Link
	for i := range 20 {
		clean = append(clean, mk(int64(100+i), fmt.Sprintf("clean%d", i)))
	}
	for i, err := range createAll(clean) {
		if err != nil {
			t.Errorf("create %s: %v", clean[i].Code, err)
		}
	}
	if got := st.MultiRowCreates() - before; got != 1 {
		t.Errorf("20 queued creates ran in %d multi-row statements, want 1", got)
	}

	mixed := []shortener.Link{
		mk(200, "fresh0"),
		mk(201, "taken"), // a code taken before
		mk(202, "fresh1"),
		mk(1, "fresh2"),  // an ID taken before
		mk(203, "twice"), // a code two creates of the statement want
		mk(204, "twice"),
		mk(205, "fresh3"),
	}
	errs := createAll(mixed)
	// Of the two creates of "twice", whichever queued first gets it (the
	// callers' goroutines queue in any order) and the other is refused.
	twiceWinner := int64(203)
	if errs[4] != nil {
		errs[4], errs[5], twiceWinner = errs[5], errs[4], 204
	}
	want := []error{nil, shortener.ErrCodeTaken, nil, shortener.ErrIDTaken, nil, shortener.ErrCodeTaken, nil}
	for i, err := range errs {
		if !errors.Is(err, want[i]) || (want[i] == nil) != (err == nil) {
			t.Errorf("create %s (id %d): %v, want %v", mixed[i].Code, mixed[i].ID, err, want[i])
		}
	}
	for _, l := range append(clean, mixed...) {
		got, err := st.Link(ctx, l.Code)
		switch {
		case l.Code == "fresh2":
			if !errors.Is(err, shortener.ErrNotFound) {
				t.Errorf("link fresh2, whose ID was taken: %+v, %v; want none", got, err)
			}
		case err != nil:
			t.Errorf("link %s: %v", l.Code, err)
		case l.Code == "taken":
			if got.ID != 1 {
				t.Errorf("link taken: id %d, want 1: a refused create changed it", got.ID)
			}
		case l.Code == "twice":
			if got.ID != twiceWinner {
				t.Errorf("link twice: id %d, want %d, the create answered 201", got.ID, twiceWinner)
			}
		case got.ID != l.ID || got.URL != l.URL:
			t.Errorf("link %s: id %d url %s, want %d %s", l.Code, got.ID, got.URL, l.ID, l.URL)
		}
	}
}

// TestCreatesAbandoned: a create whose context ends while it waits for a
// statement is never inserted, and says so.
func TestCreatesAbandoned(t *testing.T) {
	st := migrated(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	l := shortener.Link{ID: 7, Code: "abandoned", URL: "https://example.com/a", Redirect: 302, CreatedAt: now}
	release := st.HoldCreates()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- st.Create(ctx, l) }()
	for st.QueuedCreates() == 0 {
		time.Sleep(time.Millisecond) // polls for the create's goroutine to queue
	}
	cancel()
	if err := <-done; !errors.Is(err, shortener.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("abandoned create: %v, want ErrUnavailable and context.Canceled", err)
	}
	release(1) // the statement finds only the abandoned create
	if _, err := st.Link(context.Background(), "abandoned"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("the abandoned create went in: %v", err)
	}
	// The slots are free again: a create runs at once.
	l.ID, l.Code = 8, "after"
	if err := st.Create(context.Background(), l); err != nil {
		t.Errorf("create after: %v", err)
	}
}

// TestCreatesConcurrent: many creates at once, through the store's own
// statement slots, all go in, each once.
func TestCreatesConcurrent(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	errs := make([]error, 400)
	for i := range errs {
		wg.Go(func() {
			errs[i] = st.Create(ctx, shortener.Link{ID: int64(1000 + i), Code: fmt.Sprintf("c%d", i), URL: "https://example.com/", Redirect: 302, CreatedAt: now})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("create c%d: %v", i, err)
		}
	}
	for i := range errs {
		if l, err := st.Link(ctx, fmt.Sprintf("c%d", i)); err != nil || l.ID != int64(1000+i) {
			t.Errorf("link c%d: id %d, %v", i, l.ID, err)
		}
	}
}
