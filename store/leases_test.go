package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"shortener/store"
)

// TestClaimFreeNodeConcurrently starts eight "instances" claiming a node
// ID at once from a range of ten: each gets its own. Then the range runs
// out, and a released ID is the one claimed next, with its reserved time.
func TestClaimFreeNodeConcurrently(t *testing.T) {
	dsn := database(t)
	ctx := context.Background()
	st := openStore(t, dsn)
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// A fixed-ID instance holds 12 of the range 10-19.
	if _, err := st.ClaimNode(ctx, 12, "fixed", time.Minute); err != nil {
		t.Fatal(err)
	}

	const n = 8
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each on its own pool, like separate processes.
			ids[i], _, errs[i] = openStore(t, dsn).ClaimFreeNode(ctx, 10, 19, fmt.Sprintf("auto-%d", i), time.Minute)
		}()
	}
	wg.Wait()
	seen := map[int64]int{}
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("instance %d: ClaimFreeNode: %v", i, errs[i])
		}
		if id < 10 || id > 19 || id == 12 {
			t.Errorf("instance %d got node ID %d, want one of 10-19 other than 12", i, id)
		}
		if j, dup := seen[id]; dup {
			t.Errorf("instances %d and %d both got node ID %d", j, i, id)
		}
		seen[id] = i
	}

	// Nine of ten are taken: one more fits, then none.
	last, _, err := st.ClaimFreeNode(ctx, 10, 19, "auto-9", time.Minute)
	if err != nil {
		t.Fatalf("claim the tenth: %v", err)
	}
	if _, dup := seen[last]; dup || last == 12 {
		t.Errorf("the tenth claim got node ID %d, already held", last)
	}
	if _, _, err := st.ClaimFreeNode(ctx, 10, 19, "auto-10", time.Minute); !errors.Is(err, store.ErrNoFreeNode) {
		t.Fatalf("claim from a full range: got %v, want ErrNoFreeNode", err)
	}

	// Released with its last issued time, the ID is free again and its
	// reserved time comes back to the next owner.
	horizon := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	if err := st.ReleaseNode(ctx, ids[0], "auto-0", horizon); err != nil {
		t.Fatal(err)
	}
	id, reserved, err := st.ClaimFreeNode(ctx, 10, 19, "auto-11", time.Minute)
	if err != nil {
		t.Fatalf("claim after a release: %v", err)
	}
	if id != ids[0] || !reserved.Equal(horizon) {
		t.Errorf("claim after releasing %d: got node ID %d reserved %s, want %d reserved %s",
			ids[0], id, reserved.Format(time.StampMilli), ids[0], horizon.Format(time.StampMilli))
	}
	// The old owner has lost it.
	if err := st.RenewNode(ctx, id, "auto-0", time.Minute, time.Now()); !errors.Is(err, store.ErrNodeLost) {
		t.Errorf("renew by the old owner: got %v, want ErrNodeLost", err)
	}
}
