package store_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// TestVisitorKeyShared: instances asking for a day's key at once (each
// on its own pool, like separate processes) all get the same 32 bytes;
// another day has another key; asking again returns the same key.
func TestVisitorKeyShared(t *testing.T) {
	dsn := database(t)
	ctx := context.Background()
	if err := openStore(t, dsn).Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC()
	const n = 6
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = openStore(t, dsn).VisitorKey(ctx, today)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("instance %d: %v", i, errs[i])
		}
		if len(keys[i]) != 32 || !bytes.Equal(keys[i], keys[0]) {
			t.Errorf("instance %d: got key %x, want the 32 bytes instance 0 got, %x", i, keys[i], keys[0])
		}
	}
	st := openStore(t, dsn)
	if again, err := st.VisitorKey(ctx, today); err != nil || !bytes.Equal(again, keys[0]) {
		t.Errorf("today's key asked again: got %x %v, want %x", again, err, keys[0])
	}
	tomorrow, err := st.VisitorKey(ctx, today.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(tomorrow, keys[0]) {
		t.Errorf("tomorrow's key is today's, %x", tomorrow)
	}
}

// TestVisitorKeyDeleted: a key is kept through the two days after its
// day, then deleted: asked for again, a day five days back gets a new
// key, while yesterday's stays what it was.
func TestVisitorKeyDeleted(t *testing.T) {
	st := migrated(t)
	ctx := context.Background()
	today := time.Now().UTC()
	old, yesterday := today.AddDate(0, 0, -5), today.AddDate(0, 0, -1)
	k1, err := st.VisitorKey(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	y1, err := st.VisitorKey(ctx, yesterday)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := st.VisitorKey(ctx, old) // deletes k1 first, then makes a new one
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(k1, k2) {
		t.Errorf("a key of five days back survived: %x", k1)
	}
	if y2, err := st.VisitorKey(ctx, yesterday); err != nil || !bytes.Equal(y1, y2) {
		t.Errorf("yesterday's key: got %x %v, want %x kept", y2, err, y1)
	}
}
