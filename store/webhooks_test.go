package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"shortener"
	"shortener/store"
)

// Owners of the webhook tests: two keys' hashes.
var (
	ownerA = strings.Repeat("a", 64)
	ownerB = strings.Repeat("b", 64)
)

// addWebhook stores a webhook of owner for events (nil: all).
func addWebhook(tb testing.TB, st *store.Store, id, owner string, events ...shortener.EventType) {
	tb.Helper()
	if events == nil {
		events = shortener.EventTypes
	}
	w := shortener.Webhook{ID: id, Owner: owner, URL: "https://hooks.example.com/" + id, Events: events,
		Secret: "whsec_c2VjcmV0", CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := st.CreateWebhook(context.Background(), w, 10); err != nil {
		tb.Fatal(err)
	}
}

// claimAll claims every due delivery, sorted by webhook, type and code.
func claimAll(tb testing.TB, st *store.Store) []shortener.Delivery {
	tb.Helper()
	ds, err := st.ClaimDeliveries(context.Background(), 1000, time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	sort.Slice(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		return fmt.Sprint(a.Webhook, a.Event.Type, a.Event.Link.Code, a.Event.Clicks.Code) < fmt.Sprint(b.Webhook, b.Event.Type, b.Event.Link.Code, b.Event.Clicks.Code)
	})
	return ds
}

// summary is "webhook type code" for each delivery.
func summary(ds []shortener.Delivery) []string {
	var out []string
	for _, d := range ds {
		code := d.Event.Link.Code
		if d.Event.Type == shortener.EventLinkClicked {
			code = d.Event.Clicks.Code
		}
		out = append(out, d.Webhook+" "+string(d.Event.Type)+" "+code)
	}
	return out
}

// TestWebhookSeenByCreatesAfterIt has one instance create a link (so
// it caches that the owner has no webhook), another make the owner a
// webhook, and the first create again: the create that began after the
// webhook's create returned records its event, though the first
// instance's cached answer is younger than its TTL when the webhook is
// committed. Without the wait in CreateWebhook it is not recorded.
func TestWebhookSeenByCreatesAfterIt(t *testing.T) {
	dsn := database(t)
	ctx := context.Background()
	cfg := store.Config{DSN: dsn, MaxOpen: 4, QueryTimeout: 2 * time.Second, DialTimeout: time.Second, SubscribedTTL: 2 * time.Second}
	one, other := openStoreWith(t, cfg), openStoreWith(t, cfg)
	if err := one.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	create := func(id int64) {
		t.Helper()
		l := shortener.Link{ID: id, Code: fmt.Sprintf("sub%d", id), URL: "https://example.com/", Redirect: 302,
			CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Owner: ownerA}
		if err := one.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	create(1) // the owner has no webhook: cached
	addWebhook(t, other, "wh_a1", ownerA, shortener.EventLinkCreated)
	create(2)
	if got, want := summary(claimAll(t, one)), []string{"wh_a1 link.created sub2"}; !slices.Equal(got, want) {
		t.Errorf("deliveries %q, want %q", got, want)
	}
}

// TestWebhooksKept stores, lists and deletes webhooks: each key sees
// and deletes its own only, and has at most the limit.
func TestWebhooksKept(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	addWebhook(t, st, "wh_a1", ownerA)
	addWebhook(t, st, "wh_a2", ownerA, shortener.EventLinkClicked, shortener.EventLinkCreated)
	addWebhook(t, st, "wh_b1", ownerB)
	ws, err := st.Webhooks(ctx, ownerA)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].ID != "wh_a1" || ws[1].ID != "wh_a2" || ws[0].Secret == "" || ws[0].URL != "https://hooks.example.com/wh_a1" {
		t.Fatalf("A's webhooks: %+v", ws)
	}
	if got := fmt.Sprint(ws[1].Events); got != "[link.created link.clicked]" {
		t.Errorf("events read back: %s, want link.created and link.clicked in the documented order", got)
	}
	if err := st.CreateWebhook(ctx, shortener.Webhook{ID: "wh_a3", Owner: ownerA, URL: "https://x.example/", Events: shortener.EventTypes,
		Secret: "whsec_eA==", CreatedAt: time.Now()}, 2); !errors.Is(err, shortener.ErrWebhookLimit) {
		t.Errorf("a third webhook with a limit of 2: %v, want ErrWebhookLimit", err)
	}
	if err := st.DeleteWebhook(ctx, ownerA, "wh_b1"); !errors.Is(err, shortener.ErrWebhookNotFound) {
		t.Errorf("deleting another key's webhook: %v, want ErrWebhookNotFound", err)
	}
	if err := st.DeleteWebhook(ctx, ownerA, "wh_a1"); err != nil {
		t.Fatal(err)
	}
	if ws, _ := st.Webhooks(ctx, ownerA); len(ws) != 1 || ws[0].ID != "wh_a2" {
		t.Errorf("after the delete: %+v, want wh_a2 alone", ws)
	}
}

// TestLinkEventsRecorded makes, edits and deletes links of two keys and
// an anonymous one by every path that does, and claims what was
// recorded: an event per change for each webhook subscribed to it,
// nothing for other keys, anonymous links or failed changes.
func TestLinkEventsRecorded(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	addWebhook(t, st, "wh_a", ownerA)                             // every event
	addWebhook(t, st, "wh_b", ownerB, shortener.EventLinkDeleted) // deletes only
	now := time.Now().UTC().Truncate(time.Millisecond)
	link := func(id int64, code, owner string) shortener.Link {
		return shortener.Link{ID: id, Code: code, URL: "https://example.com/" + code, Redirect: 302, CreatedAt: now, Owner: owner}
	}
	for _, l := range []shortener.Link{link(1, "a1", ownerA), link(2, "b1", ownerB), link(3, "anon1", "")} {
		if err := st.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(ctx, link(4, "a1", ownerA)); !errors.Is(err, shortener.ErrCodeTaken) { // fails: no event
		t.Fatalf("a taken code: %v", err)
	}
	pw := link(5, "a2", ownerA)
	pw.PasswordHash = "$2a$10$abcdefghijklmnopqrstuv"
	if _, _, err := st.CreateIdempotent(ctx, pw, shortener.Idempotency{Scope: "s", Key: "k", RequestHash: "h", ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, replayed, err := st.CreateIdempotent(ctx, link(6, "a3", ownerA), shortener.Idempotency{Scope: "s", Key: "k", RequestHash: "h", ExpiresAt: now.Add(time.Hour)}); err != nil || !replayed {
		t.Fatalf("replay: %v %v", replayed, err) // a replay creates nothing: no event
	}
	// An import's batch: a new link, one whose code is taken (no event),
	// another key's.
	if _, err := st.InsertLinks(ctx, []shortener.Link{link(7, "a4", ownerA), link(8, "a1", ownerA), link(9, "b2", ownerB)}); err != nil {
		t.Fatal(err)
	}
	url := "https://example.org/edited"
	if _, err := st.Update(ctx, "a1", shortener.LinkPatch{URL: &url}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "b1", shortener.LinkPatch{URL: &url}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"a4", "b1", "anon1"} {
		if err := st.Delete(ctx, code, now.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "a4", now.Add(3*time.Second)); !errors.Is(err, shortener.ErrGone) { // fails: no event
		t.Fatalf("a second delete: %v", err)
	}

	ds := claimAll(t, st)
	want := []string{
		"wh_a link.created a1", "wh_a link.created a2", "wh_a link.created a4",
		"wh_a link.deleted a4",
		"wh_a link.updated a1",
		"wh_b link.deleted b1",
	}
	if got := summary(ds); !slices.Equal(got, want) {
		t.Fatalf("deliveries:\n got %q\nwant %q", got, want)
	}
	ids := map[string]bool{}
	for _, d := range ds {
		if ids[d.Event.ID] || !strings.HasPrefix(d.Event.ID, "evt_") {
			t.Errorf("event ID %q repeated or malformed", d.Event.ID)
		}
		ids[d.Event.ID] = true
		if d.Attempts != 1 || d.Claim == "" || d.URL != "https://hooks.example.com/"+d.Webhook || d.Secret == "" || d.Age < 0 || d.Age > time.Minute {
			t.Errorf("delivery %+v: want its first attempt, claimed, with its webhook's URL and secret", d)
		}
		switch l := d.Event.Link; {
		case d.Event.Type == shortener.EventLinkUpdated && (l.URL != url || !l.UpdatedAt.Equal(now.Add(time.Second)) || !d.Event.At.Equal(l.UpdatedAt)):
			t.Errorf("updated event: %+v at %s, want the edited link at its edit", l, d.Event.At)
		case d.Event.Type == shortener.EventLinkDeleted && (l.DeletedAt.IsZero() || !d.Event.At.Equal(now.Add(2*time.Second))):
			t.Errorf("deleted event: %+v at %s, want the deleted link at its delete", l, d.Event.At)
		case l.Code == "a2" && l.PasswordHash != "(set)":
			t.Errorf("a password-protected link's event holds %q, want the placeholder, never the hash", l.PasswordHash)
		case l.Code == "a1" && d.Event.Type == shortener.EventLinkCreated && (l.ID != 1 || l.Owner != ownerA || !l.CreatedAt.Equal(now) || !d.Event.At.Equal(now)):
			t.Errorf("created event: %+v at %s, want the link as made", l, d.Event.At)
		}
	}
}

// TestDeleteWebhookDropsDeliveries deletes a webhook with deliveries
// owed: they go with it, claimed or not.
func TestDeleteWebhookDropsDeliveries(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	addWebhook(t, st, "wh_a", ownerA)
	addWebhook(t, st, "wh_a2", ownerA)
	for i := range 3 {
		if err := st.Create(ctx, shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("d%d", i), URL: "https://example.com/", Redirect: 302,
			CreatedAt: time.Now(), Owner: ownerA}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.ClaimDeliveries(ctx, 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if n, _ := st.PendingDeliveries(ctx); n != 6 {
		t.Fatalf("pending: %d, want 6", n)
	}
	if err := st.DeleteWebhook(ctx, ownerA, "wh_a"); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.PendingDeliveries(ctx); n != 3 {
		t.Errorf("pending after the delete: %d, want wh_a2's 3", n)
	}
	for _, d := range claimAll(t, st) {
		if d.Webhook != "wh_a2" {
			t.Errorf("a delivery of %s after its delete", d.Webhook)
		}
	}
	if err := st.FinishDelivery(ctx, claimed[0]); err != nil { // a settle after the delete: nothing to do
		t.Errorf("settling a deleted webhook's delivery: %v", err)
	}
}

// TestClickedEvents records a click batch's events in its transaction:
// one per link whose owner subscribed, with its count and period; none
// when the transaction rolls back; the same batch again adds none.
func TestClickedEvents(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, o := range []string{ownerA, ownerB, ""} {
		if err := st.Create(ctx, shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("c%d", i+1), URL: "https://example.com/", Redirect: 302,
			CreatedAt: now, Owner: o}); err != nil {
			t.Fatal(err)
		}
	}
	clicks := map[int64][]time.Time{
		1: {now.Add(3 * time.Second), now.Add(time.Second), now.Add(2 * time.Second)},
		2: {now}, 3: {now},
	}
	// No webhook takes clicks yet: nothing, at the cost of one read.
	if err := st.RecordClicked(ctx, "1/1@0", clicks, false); err != nil {
		t.Fatal(err)
	}
	addWebhook(t, st, "wh_a", ownerA, shortener.EventLinkClicked)
	addWebhook(t, st, "wh_b", ownerB, shortener.EventLinkCreated) // not clicks
	if err := st.RecordClicked(ctx, "1/1@100", clicks, true); err == nil {
		t.Fatal("rollback: no error")
	}
	if n, _ := st.PendingDeliveries(ctx); n != 0 {
		t.Fatalf("after a rolled back batch: %d pending, want 0", n)
	}
	for range 2 { // the same batch twice: one event
		if err := st.RecordClicked(ctx, "1/1@200", clicks, false); err != nil {
			t.Fatal(err)
		}
	}
	ds := claimAll(t, st)
	if got, want := summary(ds), []string{"wh_a link.clicked c1"}; !slices.Equal(got, want) {
		t.Fatalf("deliveries: %q, want %q", got, want)
	}
	c := ds[0].Event.Clicks
	if c.Clicks != 3 || !c.From.Equal(now.Add(time.Second)) || !c.To.Equal(now.Add(3*time.Second)) || !ds[0].Event.At.Equal(c.To) {
		t.Errorf("clicked event: %+v at %s, want 3 clicks from +1s to +3s", c, ds[0].Event.At)
	}
	if err := st.RecordClicked(ctx, "1/1@300", clicks, false); err != nil {
		t.Fatal(err)
	}
	if next := claimAll(t, st); len(next) != 1 || next[0].Event.ID == ds[0].Event.ID {
		t.Errorf("the next batch: %+v, want an event with an ID of its own", next)
	}
}

// TestClaims claims from four senders at once: each delivery goes to one
// of them; a claimed delivery is nobody else's until its claim runs
// out; a retry is due after its wait; only the claim's holder settles.
func TestClaims(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	addWebhook(t, st, "wh_a", ownerA)
	const links = 40
	for i := range links {
		if err := st.Create(ctx, shortener.Link{ID: int64(i + 1), Code: fmt.Sprintf("k%d", i), URL: "https://example.com/", Redirect: 302,
			CreatedAt: time.Now(), Owner: ownerA}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		all []shortener.Delivery
		wg  sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds, err := st.ClaimDeliveries(ctx, 15, time.Minute)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			all = append(all, ds...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, d := range all {
		if seen[d.ID] {
			t.Errorf("delivery %d claimed twice", d.ID)
		}
		seen[d.ID] = true
	}
	if len(seen) != links {
		t.Fatalf("four claims of 15 took %d of %d deliveries, want all", len(seen), links)
	}
	if more, _ := st.ClaimDeliveries(ctx, 100, time.Minute); len(more) != 0 {
		t.Fatalf("%d claimed deliveries claimed again", len(more))
	}

	d := all[0]
	if err := st.RetryDelivery(ctx, d, 0, "receiver answered 500"); err != nil {
		t.Fatal(err)
	}
	again, _ := st.ClaimDeliveries(ctx, 100, 0) // a claim that runs out at once
	if len(again) != 1 || again[0].ID != d.ID || again[0].Attempts != 2 || again[0].Claim == d.Claim {
		t.Fatalf("after a retry due now: %+v, want delivery %d, its second attempt, under a new claim", again, d.ID)
	}
	stolen, _ := st.ClaimDeliveries(ctx, 100, time.Minute) // the last claim ran out: anyone's
	if len(stolen) != 1 || stolen[0].ID != d.ID {
		t.Fatalf("after the claim ran out: %+v, want delivery %d", stolen, d.ID)
	}
	if err := st.FinishDelivery(ctx, again[0]); err != nil { // the late holder: nothing happens
		t.Fatal(err)
	}
	if err := st.RetryDelivery(ctx, again[0], 0, "late"); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.PendingDeliveries(ctx); n != links {
		t.Errorf("pending after a late settle: %d, want %d", n, links)
	}
	if err := st.RetryDelivery(ctx, stolen[0], time.Hour, "receiver answered 503"); err != nil {
		t.Fatal(err)
	}
	if ds, _ := st.ClaimDeliveries(ctx, 100, time.Minute); len(ds) != 0 {
		t.Errorf("a delivery to retry in an hour is due now: %+v", ds)
	}
	for _, d := range all[1:] {
		if err := st.FinishDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := st.PendingDeliveries(ctx); n != 1 {
		t.Errorf("pending: %d, want the one to retry", n)
	}
}

// TestSubscribedTTLValidated refuses a negative SubscribedTTL by name.
func TestSubscribedTTLValidated(t *testing.T) {
	cfg := store.Config{DSN: "u@tcp(127.0.0.1:3306)/db", MaxOpen: 1, QueryTimeout: time.Second, SubscribedTTL: -time.Second}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "SubscribedTTL") {
		t.Errorf("got %v, want SubscribedTTL named", err)
	}
	cfg.SubscribedTTL = 0
	if err := cfg.Validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
}
