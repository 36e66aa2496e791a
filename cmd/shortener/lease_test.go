package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"shortener/idgen"
)

// TestSameNodeIDRefused starts a second instance with a node ID a live
// instance holds: it refuses to start, naming the problem.
func TestSameNodeIDRefused(t *testing.T) {
	s := newServers(t)
	first := startApp(t, s, 5, "SHORTENER_NODE_LEASE_TTL", "1s")
	_, err := launchApp(t, s, 5, time.Now, "SHORTENER_NODE_LEASE_TTL", "1s")
	if err == nil || !strings.Contains(err.Error(), "node ID 5 is in use by app5@") {
		t.Fatalf("second instance with node ID 5: got %v, want a refusal naming the holder", err)
	}
	t.Logf("refused: %v", err)
	if got := len(createLinks(t, first, 3)); got != 3 {
		t.Errorf("the first instance created %d links after the refusal, want 3", got)
	}
	// Once the first stops, the node ID is free at once (released lease).
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	startApp(t, s, 5, "SHORTENER_NODE_LEASE_TTL", "1s")
	t.Logf("a new instance with node ID 5 started %s after the first stopped", time.Since(start).Round(time.Millisecond))
}

// TestRestartWithClockBehind restarts an instance whose clock is behind
// the last ID it issued: it waits until its clock passes that ID, and no
// code repeats; a clock far behind is refused.
func TestRestartWithClockBehind(t *testing.T) {
	s := newServers(t)
	a := startApp(t, s, 6)
	before := createLinks(t, a, 100)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	codec, _ := idgen.NewCodec(testCodeKey) // the apps' key (launchApp)
	var last int64
	for code := range before {
		id, err := codec.ID(code)
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, id)
	}

	const skew = 2 * time.Second
	behind := func() time.Time { return time.Now().Add(-skew) }
	b := startAppClock(t, s, 6, behind)
	if !strings.Contains(b.logs.String(), "the clock is behind the last issued ID") {
		t.Errorf("the restarted instance did not notice its clock was %s behind", skew)
	}
	for code := range createLinks(t, b, 100) {
		if _, dup := before[code]; dup {
			t.Fatalf("code %s issued before and after the restart", code)
		}
		id, _ := codec.ID(code)
		if id <= last || !idgen.Time(id).After(idgen.Time(last)) {
			t.Errorf("ID %d (%s) issued after the restart is not later than the last before it (%d, %s)",
				id, idgen.Time(id).Format(time.StampMilli), last, idgen.Time(last).Format(time.StampMilli))
		}
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}

	farBehind := func() time.Time { return time.Now().Add(-time.Hour) }
	if _, err := launchApp(t, s, 6, farBehind); err == nil || !strings.Contains(err.Error(), "behind the last ID issued") {
		t.Errorf("restart with the clock an hour behind: got %v, want a refusal", err)
	}
}

// TestAutoNodeIDs starts three instances with SHORTENER_NODE_ID=auto at
// once, beside one with the fixed node ID 0: each claims a node ID of its
// own, and their codes carry it.
func TestAutoNodeIDs(t *testing.T) {
	s := newServers(t)
	fixed := startApp(t, s, 0)
	apps := make([]*app, 3)
	errs := make([]error, len(apps))
	var wg sync.WaitGroup
	for i := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			apps[i], errs[i] = launchApp(t, s, -1, time.Now, "SHORTENER_NODE_ID", "auto")
		}()
	}
	wg.Wait()
	codec, _ := idgen.NewCodec(testCodeKey) // the apps' key (launchApp)
	nodes := map[int64]int{}
	for i, a := range append(apps, fixed) {
		if i < len(errs) && errs[i] != nil {
			t.Fatalf("auto instance %d: %v", i, errs[i])
		}
		var node int64 = -1
		for code := range createLinks(t, a, 5) {
			id, err := codec.ID(code)
			if err != nil {
				t.Fatal(err)
			}
			if n := idgen.Node(id); node >= 0 && n != node {
				t.Fatalf("instance %d issued codes of node IDs %d and %d", i, node, n)
			} else {
				node = n
			}
		}
		if j, dup := nodes[node]; dup {
			t.Errorf("instances %d and %d both issue codes with node ID %d", j, i, node)
		}
		nodes[node] = i
	}
	if _, ok := nodes[0]; !ok {
		t.Errorf("the fixed instance's node ID 0 is not among %v", nodes)
	}
	t.Logf("node IDs by instance (the last is fixed): %v", nodes)
}
