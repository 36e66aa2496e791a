package chaos

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"shortener/internal/tick"

	"golang.org/x/sync/errgroup"
)

// Deletes is the account of deletes: a delete acknowledged with 204 must
// hold on every instance, within deletesGrace and for good. The deleted
// code answers 404 or 410, never a redirect, through the target and from
// each app directly, while the fault lasts and after the heal. A fault can bring a
// deleted link back from a cache that missed the delete: a Redis master
// that refuses writes (docs/design.md's OOM row: "deletes and edits hold
// everywhere"), a failover, an app that was away.
//
// Open creates deletesPerRun links of its own with the target's API key
// (a delete needs the owner's), under URLs the creates account does not
// select. During the fault phase, as configured, it deletes them one at a
// time, each right after looking it up through every instance, so that
// every cache (each app's L1, Redis) holds the link when the delete must
// make them forget it. Every deletesProbeEvery it looks each deleted code
// up again on every instance, and once more when it settles, after the
// heal. Its clock starts when Open returns, a moment before the load's.
type Deletes struct{}

const (
	deletesPerRun     = 20
	deletesProbeEvery = 500 * time.Millisecond
	// deletesGrace is how long after its 204 a delete may still be
	// served from a cache that has not heard of it yet: docs/design.md's bound
	// for an edit during a failover ("the old destination never served
	// past 1 s after the 200"). A row that promises deletes at once
	// requires "deletes.at-once".
	deletesGrace = time.Second
)

// deletion is one DELETE the account sent.
type deletion struct {
	code   string
	at     time.Duration // sent, from Open
	status int           // 0 without an answer
	err    string
}

// probe is one lookup of a deleted code.
type probe struct {
	code, via string
	at        time.Duration // sent, from Open
	status    int           // 0 without an answer
	final     bool          // looked up after the heal, when every instance must answer
}

// Open creates the links, and starts deleting and probing.
func (Deletes) Open(ctx context.Context, env *Env) (Settle, error) {
	if env.Target.APIKey == "" {
		return func(context.Context, *Run) (Entry, error) {
			return Entry{Account: "deletes", Figures: []Figure{{Label: "deletes", Value: "not run: the target has no API key, which a delete needs"}}}, nil
		}, nil
	}
	codes := make([]string, deletesPerRun)
	for i := range codes {
		res := Result{Kind: Create, URL: fmt.Sprintf("https://chaos.example/deletes/%s/%d", env.Prefix, i),
			Key: fmt.Sprintf("%s-deletes-%d", env.Prefix, i)}
		create(ctx, env.Client, env.Target.BaseURL, env.Config.Timeout, env.Config.CreateAttempts, time.Now(), &res)
		if res.Outcome != OK {
			return nil, fmt.Errorf("create link %d to delete: %s", i, res.Err)
		}
		codes[i] = res.Code
	}
	look := func(ctx context.Context, codes []string, at func() time.Duration, final bool) []probe {
		var mu sync.Mutex
		var out []probe
		lookEverywhere(ctx, env, codes, at, func(code, via string, sent time.Duration, a answer, err error) {
			p := probe{code: code, via: via, at: sent, final: final}
			if err == nil {
				p.status = a.status
			}
			mu.Lock()
			defer mu.Unlock()
			out = append(out, p)
		})
		return out
	}

	start := time.Now()
	at := func() time.Duration { return time.Since(start) }
	var mu sync.Mutex // guards dels and probes
	var dels []deletion
	var probes []probe
	acked := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, d := range dels {
			if d.status == http.StatusNoContent {
				out = append(out, d.code)
			}
		}
		return out
	}
	work, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	from, gap := env.Config.Warmup+env.Config.Steady, env.Config.Fault/deletesPerRun
	wg.Go(func() { // the deleter: one link every gap through the fault phase
		for i, code := range codes {
			if pause(work, from+time.Duration(i)*gap+gap/2-at()) != nil {
				return
			}
			look(work, []string{code}, at, false) // every cache holds it now
			d := deletion{code: code, at: at()}
			a, err := send(work, env.Client, http.MethodDelete, env.Target.BaseURL+"/api/v1/links/"+code, "", nil, env.Config.Timeout)
			d.status = a.status
			if err != nil {
				d.err = normalise(err.Error())
			}
			mu.Lock()
			dels = append(dels, d)
			mu.Unlock()
		}
	})
	wg.Go(func() { // the prober
		tick.Every(work, deletesProbeEvery, func() {
			ps := look(work, acked(), at, false)
			mu.Lock()
			probes = append(probes, ps...)
			mu.Unlock()
		})
	})
	return func(ctx context.Context, run *Run) (Entry, error) {
		stop()
		wg.Wait()
		final := look(ctx, acked(), at, true)
		return checkDeletes(len(codes), dels, append(probes, final...), run.Fault()), nil
	}, nil
}

// checkDeletes judges the deletes sent (made links, of which dels were
// deleted) by the lookups of the deleted codes (probes); fault is the
// fault phase, for the count of deletes within it. It is pure, so it can
// be tested on hand-made inputs.
func checkDeletes(made int, dels []deletion, probes []probe, fault Window) Entry {
	e := Entry{Account: "deletes"}
	ackedAt := map[string]time.Duration{}
	var inFault int
	notAcked := map[string]int{} // by answer
	for _, d := range dels {
		if d.status == http.StatusNoContent {
			ackedAt[d.code] = d.at
			if fault.contains(d.at) {
				inFault++
			}
			continue
		}
		notAcked[cmp.Or(d.err, fmt.Sprint(d.status))]++
	}
	var held, unanswered, redirected, late, finalBad int
	for _, p := range probes {
		del, ok := ackedAt[p.code]
		if !ok {
			continue
		}
		problem := func(kind string) {
			e.Problems = append(e.Problems, Problem{Kind: kind, Code: p.code,
				Why: fmt.Sprintf("GET via %s at %.1f s, %s after its 204: %s", p.via, p.at.Seconds(), ms(p.at-del), statusOrNone(p.status))})
		}
		switch {
		case p.status == http.StatusNotFound || p.status == http.StatusGone:
			held++
		case p.status >= 300 && p.status < 400:
			redirected++
			if p.at-del > deletesGrace {
				late++
				problem("resurrected")
			} else {
				problem("stale")
			}
		default:
			unanswered++
			if p.final {
				finalBad++
				problem("not held after the heal")
			}
		}
	}
	var refused []string
	for _, k := range slices.Sorted(maps.Keys(notAcked)) {
		refused = append(refused, fmt.Sprintf("%s ×%d", k, notAcked[k]))
	}
	acked := len(ackedAt)
	e.Figures = []Figure{
		{Label: "links made to be deleted (with the API key)", Value: fmt.Sprint(made)},
		{Label: "deletes sent / acknowledged (204)", Value: fmt.Sprintf("%d / %d (%d acknowledged within the fault phase)", len(dels), acked, inFault)},
		{Label: "deletes not acknowledged", Value: cmp.Or(strings.Join(refused, ", "), "none")},
		{Label: "lookups of deleted codes (through the target and each app, every 500 ms and after the heal)",
			Value: fmt.Sprintf("%d: %d answered 404/410, %d unanswered or other", held+unanswered+redirected, held, unanswered)},
		{Label: "deleted codes answered with a redirect after their 204", Value: fmt.Sprint(redirected), Column: "deletes resurrected"},
	}
	e.Checks = []Check{
		{ID: "deletes", What: fmt.Sprintf("acknowledged deletes that did not hold: a redirect from any instance more than %s after the 204, or anything but 404/410 after the heal", ms(deletesGrace)),
			Want: "0", Got: fmt.Sprintf("%d redirects, %d not held after the heal (%d deletes acknowledged)", late, finalBad, acked),
			OK: late == 0 && finalBad == 0, Required: true},
		{ID: "deletes.at-once", What: "deleted codes answered with a redirect at any time after their 204", Want: "0",
			Got: fmt.Sprintf("%d (%d within %s of the 204)", redirected, redirected-late, ms(deletesGrace)), OK: redirected == 0},
		{ID: "deletes.acknowledged", What: "deletes acknowledged (204)", Want: fmt.Sprint(made),
			Got: fmt.Sprintf("%d of %d sent", acked, len(dels)), OK: acked == made},
	}
	return e
}

// lookEverywhere GETs each code through the target and from each app
// directly, eight at a time, and hands every answer (or error) to seen,
// with when it was sent (at): deletes and edits must hold on every
// instance, not only on the one nginx picks. seen is called from many
// goroutines.
func lookEverywhere(ctx context.Context, env *Env, codes []string, at func() time.Duration, seen func(code, via string, sent time.Duration, a answer, err error)) {
	vias := map[string]string{"nginx": env.Target.BaseURL} // instance name -> base URL
	for _, a := range env.Target.Apps {
		vias[a.Name] = a.URL
	}
	var g errgroup.Group
	g.SetLimit(8)
	for _, code := range codes {
		for via, base := range vias {
			g.Go(func() error {
				sent := at()
				a, err := send(ctx, env.Client, http.MethodGet, base+"/"+code, "", nil, env.Config.Timeout)
				seen(code, via, sent, a, err)
				return nil
			})
		}
	}
	g.Wait() //nolint:errcheck // the goroutines return nil
}

// statusOrNone formats an HTTP status, 0 as no answer.
func statusOrNone(status int) string {
	if status == 0 {
		return "no answer"
	}
	return fmt.Sprint(status)
}
