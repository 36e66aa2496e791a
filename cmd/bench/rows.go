package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"shortener/internal/chaos"
	"shortener/internal/stack"
)

// row is one line of the report: one load against one target, run once
// per round, rows in order within a round, the two rows of a ratio next
// to each other (so a row and the one it is read against run a few
// seconds apart) and, every other round, swapped (roundOrder).
//
// To add a row, append it to rows(): a name (stable: runs are compared by
// it; "area/variant"), what it measures in a few words, the target and the
// list of codes (or none: creates). A row that needs the stack in another
// state sets before and puts the state back in after (say, restart the
// apps with other settings through e.stack). To read it against another
// row, add a ratio to ratios(); a floor in requests/s makes it a target.
// `make bench BENCH_FLAGS='-rows redirect/,clicks/'` runs only the rows
// whose names start with one of the prefixes.
type row struct {
	name string
	what string
	// target is where the load goes: one of the targets below.
	target string
	// codes names the list of codes GETs draw from (codesHot…); empty
	// makes the row POST creates with the stack's API key.
	codes string
	// wholeCost makes the row's CPU per request count the stack's MySQL
	// and Redis too, up to the moment the apps are quiet again after the
	// run: clicks are shipped and trending sent after the answers, so
	// counting's cost is all of that, wherever it lands.
	wholeCost bool
	// steady runs the row's own load, unrecorded, for this long before
	// it is measured, so that the apps' L1 holds what this traffic keeps
	// rather than what the rows before it left: an entry lives minutes
	// (SHORTENER_L1_TTL), and a million links' tail reaches its steady
	// hit rate only after a while. Both rows of a ratio get the same.
	steady time.Duration
	floor  float64
	before func(context.Context, *env) error
	after  func(context.Context, *env) error
}

// ratio reads row num against row den, round by round; min is the target.
type ratio struct {
	name     string
	num, den string
	min      float64
}

// Targets of a row.
const (
	targetNginx        = "nginx"         // the stack's nginx, both apps behind it
	targetApp          = "app"           // app1, directly
	targetMinimalNginx = "minimal-nginx" // the bench's nginx, two minimal servers behind it
	targetMinimal      = "minimal"       // one minimal server, directly
	targetCapacity     = "capacity"      // the bench's nginx and two apps, create limits off
	targetCountingOff  = "counting-off"  // the same with click counting off
	targetAnalyticsOff = "analytics-off" // the same with counting on, analytics off
	targetGolink       = "golink"        // golink, directly (golink.go)
)

// Lists of codes (written at start, see codeLists).
const (
	codesHot      = "hot"         // the hot links, uniform
	codesHotZipf  = "hot-zipf"    // the hot links, Zipf
	codesAll      = "all-uniform" // every bench link, uniform
	codesAllZipf  = "all-zipf"    // every bench link, Zipf
	rowWarmUpTime = 3 * time.Second
	// workingSetSteady is the working-set warm and hot rows' steady.
	workingSetSteady = 15 * time.Second
)

func rows(hot, links int) []row {
	hotN, allN := keysString(hot), keysString(links)
	return []row{
		{name: "redirect/nginx/app", target: targetNginx, codes: codesHot,
			what: fmt.Sprintf("GET one of %s hot links (uniform) through nginx to both apps: answered from L1", hotN)},
		{name: "redirect/nginx/minimal", target: targetMinimalNginx, codes: codesHot,
			what: "the same through an nginx from the same template to two minimal Go 302 servers"},
		{name: "clicks/nginx/on", target: targetCapacity, codes: codesHot, wholeCost: true,
			what: "the same through the bench's nginx to its two apps (see capacity.go), click counting on; CPU includes MySQL and Redis until the clicks are shipped"},
		{name: "clicks/nginx/off", target: targetCountingOff, codes: codesHot, wholeCost: true,
			what: "the same to a second such pair with click counting off (SHORTENER_CLICKS=false): what counting costs; CPU as the row above's"},
		{name: "analytics/nginx/on", target: targetCapacity, codes: codesHot, wholeCost: true,
			what: "the clicks/nginx/on row again, next to its ratio's other row: click counting with analytics (country, agent, visitor) on"},
		{name: "analytics/nginx/off", target: targetAnalyticsOff, codes: codesHot, wholeCost: true,
			what: "the same to a third pair with analytics off (SHORTENER_ANALYTICS=false), counting on: what the analytics cost; CPU as the row above's"},
		{name: "redirect/direct/app", target: targetApp, codes: codesHot,
			what: "the same straight to app1"},
		{name: "redirect/direct/minimal", target: targetMinimal, codes: codesHot,
			what: "the same straight to one minimal server"},
		{name: "golink/direct/app", target: targetApp, codes: codesHot,
			what: "redirect/direct/app again, next to the row read against it"},
		{name: "golink/direct/golink", target: targetGolink, codes: codesHot,
			what: "the same straight to golink (Tailscale's Go link shortener, built from its source; dev mode: plain HTTP, links in SQLite), the hot links loaded from a snapshot"},
		{name: "create/nginx", target: targetCapacity, floor: 3000,
			what: "POST /api/v1/links with the stack's API key, a new URL each time, through nginx to two apps with the create rate limits off (see capacity.go)"},
		{name: "create/stack", target: targetNginx,
			what: "the same through the stack's nginx and apps, their rate limits in force: what the limits let one address and key create"},
		{name: "workingset/all/uniform/cold", target: targetNginx, codes: codesAll, before: makeCold,
			what: fmt.Sprintf("GET %s links (uniform) through nginx; Redis and L1 hold none of them at the start", allN)},
		{name: "workingset/all/zipf/cold", target: targetNginx, codes: codesAllZipf, before: makeCold,
			what: fmt.Sprintf("GET %s links (Zipf) through nginx; Redis and L1 hold none of them at the start", allN)},
		{name: "workingset/all/uniform/warm", steady: workingSetSteady, target: targetNginx, codes: codesAll, before: makeWarm,
			what: fmt.Sprintf("GET %s links (uniform) through nginx; every one in Redis, L1 in its steady state (15 s of the same load first)", allN)},
		{name: "workingset/hot/uniform", steady: workingSetSteady, target: targetNginx, codes: codesHot,
			what: fmt.Sprintf("GET %s hot links (uniform) through nginx, as redirect/nginx/app, next to the row read against it", hotN)},
		{name: "workingset/all/zipf/warm", steady: workingSetSteady, target: targetNginx, codes: codesAllZipf, before: makeWarm, after: sampleMemory,
			what: fmt.Sprintf("GET %s links (Zipf) through nginx; every one in Redis, L1 in its steady state (15 s of the same load first)", allN)},
		{name: "workingset/hot/zipf", steady: workingSetSteady, target: targetNginx, codes: codesHotZipf,
			what: fmt.Sprintf("GET %s hot links, Zipf, through nginx", hotN)},
	}
}

func ratios() []ratio {
	return []ratio{
		{name: "redirects through nginx, app / minimal", num: "redirect/nginx/app", den: "redirect/nginx/minimal", min: 0.9},
		{name: "redirects through nginx, counting on / off", num: "clicks/nginx/on", den: "clicks/nginx/off", min: 0.9},
		{name: "redirects through nginx, analytics on / off", num: "analytics/nginx/on", den: "analytics/nginx/off", min: 0.95},
		{name: "redirects direct, app / minimal", num: "redirect/direct/app", den: "redirect/direct/minimal", min: 0.85},
		{name: "redirects direct, app / golink", num: "golink/direct/app", den: "golink/direct/golink", min: 5},
		{name: "a million links uniform, warm / hot", num: "workingset/all/uniform/warm", den: "workingset/hot/uniform", min: 0.6},
		{name: "a million links Zipf, warm / hot", num: "workingset/all/zipf/warm", den: "workingset/hot/zipf", min: 0.8},
	}
}

// roundOrder is the order of the selected rows in round n: as listed, but
// in every other round the two rows of each ratio swap places, so neither
// side of a ratio always runs first, right after what the rows before
// left behind.
func roundOrder(selected []row, n int) []int {
	order := make([]int, len(selected))
	for i := range order {
		order[i] = i
	}
	if n%2 == 0 {
		return order
	}
	at := func(name string) int { return slices.IndexFunc(selected, func(r row) bool { return r.name == name }) }
	for _, q := range ratios() {
		if i, j := at(q.num), at(q.den); i >= 0 && j >= 0 {
			order[i], order[j] = j, i
		}
	}
	return order
}

// makeCold empties Redis of the bench's links and has every app drop its
// L1 (an entry lives minutes while the app keeps up with the invalidation
// outbox), so the row starts with MySQL as the only tier that has them.
func makeCold(ctx context.Context, e *env) error {
	n, err := e.redis.cold(ctx)
	if err != nil {
		return err
	}
	e.warm = false
	e.logf("  redis: %s bench keys deleted; every app's L1 dropped", keysString(n))
	return e.flushL1s(ctx)
}

// flushL1s sends the flush on the invalidation channel and waits until
// each of the stack's apps has dropped its L1 (its flush counter moved).
func (e *env) flushL1s(ctx context.Context) error {
	const flushes = "shortener_l1_flushes_total"
	client := &http.Client{Timeout: 2 * time.Second}
	count := func(addr string) (float64, error) {
		m, err := chaos.Scrape(ctx, client, "http://"+addr)
		if err != nil {
			return 0, err
		}
		return m.Sum(flushes, "reason", "requested"), nil
	}
	before := map[string]float64{}
	for _, a := range e.stack.Apps() {
		n, err := count(a.Addr())
		if err != nil {
			return fmt.Errorf("flush L1s: %w", err)
		}
		before[a.Addr()] = n
	}
	if _, err := e.redis.cache.FlushL1s(ctx); err != nil {
		return fmt.Errorf("flush L1s: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return stack.Poll(pctx, 50*time.Millisecond, func(context.Context) error {
		for addr, was := range before {
			n, err := count(addr)
			if err != nil {
				return err
			}
			if n <= was {
				return fmt.Errorf("the app on %s has not dropped its L1", addr)
			}
		}
		return nil
	})
}

// makeWarm writes every bench link to Redis unless this round did already.
func makeWarm(ctx context.Context, e *env) error {
	if e.warm {
		return nil
	}
	start := time.Now()
	took, err := e.redis.warm(ctx, e.links)
	if err != nil {
		return err
	}
	e.warm = true
	e.logf("  redis: %s links written in %s", keysString(int(took)), time.Since(start).Round(100*time.Millisecond))
	if got := int(took); got < e.links {
		e.note(fmt.Sprintf("round %d: Redis took %d of %d warm-up writes (the bench's write breaker skipped the rest)", e.round+1, got, e.links))
	}
	return nil
}

// sampleMemory records each app's RSS after the round's last large row.
func sampleMemory(_ context.Context, e *env) error {
	return e.sampleMemory(fmt.Sprintf("round %d, after the %s-link rows", e.round+1, keysString(e.links)))
}

// sleep waits d or until ctx ends. It waits for something the bench
// cannot observe (L1 entries expiring inside the apps), so it cannot poll.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// quiesce waits, before a timed row, until every app has shipped its
// click journal and sent its trending batches to Redis. The rows before
// leave a backlog (the working-set rows click up to a million links) that
// the apps work off for a while, and a row measured meanwhile charges it
// to itself: in session 5's first run, counting on fell from 15,937 to
// 9,189 redirects/s over the rounds while counting off (which ships
// nothing) held 16,000-18,000. It gives up after quiesceMax, with a note
// in the report.
func quiesce(ctx context.Context, e *env) error {
	client := &http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	for {
		busy := ""
		for _, addr := range e.appAddrs() {
			m, err := chaos.Scrape(ctx, client, "http://"+addr)
			if err != nil {
				busy = err.Error()
				break
			}
			if m.Sum("shortener_click_oldest_unshipped_seconds") > 0 || m.Sum("shortener_trending_queued_slots") > 0 {
				busy = "the app on " + addr + " is still shipping clicks or sending trending batches"
				break
			}
		}
		switch {
		case busy == "":
			if waited := time.Since(start); waited > time.Second {
				e.logf("  quiet after %s (click journals shipped, trending sent)", waited.Round(100*time.Millisecond))
			}
			return nil
		case time.Since(start) > quiesceMax:
			e.note(fmt.Sprintf("Round %d: a row started before the apps were quiet (%s after %s).", e.round+1, busy, quiesceMax))
			return nil
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil { // polls the apps' metrics
			return err
		}
	}
}

// appAddrs are the addresses of every app: the stack's and the bench's.
func (e *env) appAddrs() []string {
	var addrs []string
	for _, a := range e.stack.Apps() {
		addrs = append(addrs, a.Addr())
	}
	return append(append(append(addrs, e.capacity.addrs...), e.countingOff.addrs...), e.analyticsOff.addrs...)
}

// quiesceMax bounds quiesce's wait.
const quiesceMax = 3 * time.Minute

// waitIdle waits, before a timed row and after quiesce, until the servers
// (every process of the stack and of the bench) use less than idleCores of
// CPU over a second. MySQL writing back pages after the bulk load or a
// shipped backlog, Redis rewriting its append-only file after a million
// fills, or an app collecting a big L1 would otherwise run inside the next
// row and be charged to it, whichever side of a ratio it is. The stack
// idles at about 0.15 of a core (the apps' timers, the sentinels). It gives
// up after idleMax, with a note in the report.
func (e *env) waitIdle(ctx context.Context) error {
	var roots []int
	for _, p := range e.stack.Procs() {
		roots = append(roots, p.Pid())
	}
	roots = append(append(roots, e.minimalNginxPid), e.minimalPids...)
	roots = append(append(append(roots, e.capacity.pids()...), e.countingOff.pids()...), e.analyticsOff.pids()...)
	pids := withChildren(e.proc, roots)
	start := time.Now()
	for {
		before := cpuSeconds(e.proc, pids)
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
		used := cpuSeconds(e.proc, pids) - before
		switch waited := time.Since(start); {
		case used < idleCores:
			if waited > 2*time.Second {
				e.logf("  idle after %s (servers at %.2f cores)", waited.Round(100*time.Millisecond), used)
			}
			return nil
		case waited > idleMax:
			e.note(fmt.Sprintf("Round %d: a row started while the servers still used %.2f cores (after %s).", e.round+1, used, idleMax))
			return nil
		}
	}
}

// idleCores and idleMax: see waitIdle.
const (
	idleCores = 0.3
	idleMax   = time.Minute
)
