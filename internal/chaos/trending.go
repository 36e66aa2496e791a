package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"shortener/internal/tick"
	"shortener/trending"
)

// Trending is the account of the trending ranking: while the load runs it
// asks GET /api/v1/trending?window=5m&limit=10 through the target every
// trendingEvery, timing each answer, and then compares each answer's top
// 10 with the truth by Jaccard similarity, during the fault and at the end
// of the recovery, as docs/design.md's failure table asks (Jaccard@10 >= 0.9).
//
// The truth is the top 10 of this run's redirects received per link: the
// clicks account checks that MySQL stores exactly those per code, so it is
// MySQL's truth whenever that check holds. The load draws the same Zipf
// popularity over the same links in every scenario, so the 5m window
// (which may reach into the scenario before) has the same top 10; clicks
// from before the run are waited out (AwaitQuietTrending).
type Trending struct{}

// trendingEvery is how often the ranking is asked: often enough for a
// p99, far below the load's rate.
const trendingEvery = 100 * time.Millisecond

// trendingAnswer is one answer of GET /api/v1/trending, as the account
// keeps it.
type trendingAnswer struct {
	at      time.Duration // from the start of the load
	latency time.Duration
	status  int
	source  string
	codes   []string
}

// Open starts asking for the ranking.
func (Trending) Open(ctx context.Context, env *Env) (Settle, error) {
	var answers []trendingAnswer // the asker's until it has returned
	var asker sync.WaitGroup
	askCtx, stop := context.WithCancel(ctx) // stops the asking, not an answer in flight
	start := time.Now()
	asker.Go(func() {
		tick.Every(askCtx, trendingEvery, func() {
			a := askTrending(ctx, env.Client, env.Target.BaseURL, env.Config.Timeout)
			a.at = time.Since(start)
			answers = append(answers, a)
		})
	})
	return func(_ context.Context, run *Run) (Entry, error) {
		stop()
		asker.Wait()
		return trendingEntry(run, env.Links, answers), nil
	}, nil
}

// trendingQuiet bounds AwaitQuietTrending: the 5m window and its
// buckets' rounding, with room to spare. It asks every trendingQuietPoll.
const (
	trendingQuiet     = 7 * time.Minute
	trendingQuietPoll = 5 * time.Second
)

// AwaitQuietTrending waits, up to trendingQuiet, until trending's 5m
// window holds no link. Clicks of an earlier run on the same stack
// (another make chaos, make bench) would otherwise outrank this run's
// links in its first scenarios, while the truth is this run's redirects
// alone. It says on log what it waits for; a stack that cannot tell (no
// answer) or stays busy is run anyway, with a line saying so.
func (r *Runner) AwaitQuietTrending(ctx context.Context, log io.Writer) error {
	until := time.Now().Add(trendingQuiet)
	for waited := false; ; waited = true {
		a := askTrending(ctx, r.client, r.t.BaseURL, r.cfg.Timeout)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case a.status != http.StatusOK:
			fmt.Fprintf(log, "trending did not answer (status %d); its figures may be off\n", a.status)
			return nil
		case len(a.codes) == 0:
			return nil
		case time.Now().After(until):
			fmt.Fprintf(log, "trending's 5m window still holds %d links after %s; its figures will be off\n", len(a.codes), trendingQuiet)
			return nil
		case !waited:
			fmt.Fprintf(log, "waiting for earlier clicks to leave trending's 5m window (up to %s)\n", trendingQuiet)
		}
		if err := pause(ctx, trendingQuietPoll); err != nil {
			return err
		}
	}
}

// askTrending sends one request, as a client would, and times it.
func askTrending(ctx context.Context, c *http.Client, base string, timeout time.Duration) trendingAnswer {
	began := time.Now()
	a, err := send(ctx, c, http.MethodGet, base+"/api/v1/trending?window=5m&limit=10", "", nil, timeout)
	var body struct { // JSON keys match field names regardless of case
		Source string
		Links  []struct{ Code string }
	}
	if err == nil {
		err = json.Unmarshal(a.body, &body)
	}
	t := trendingAnswer{latency: time.Since(began), status: a.status, source: body.Source}
	if err != nil {
		t.status = 0
	}
	for _, l := range body.Links {
		t.codes = append(t.codes, l.Code)
	}
	return t
}

// trendingEntry judges the answers against the truth.
func trendingEntry(run *Run, links []Link, answers []trendingAnswer) Entry {
	e := Entry{Account: "trending"}
	perLink, _ := received(run.Results, len(links))
	truth := make([]string, len(links))
	served := map[string]int64{} // by code
	for i, l := range links {
		truth[i], served[l.Code] = l.Code, perLink[i]
	}
	slices.SortFunc(truth, func(a, b string) int { return cmp.Or(cmp.Compare(served[b], served[a]), strings.Compare(a, b)) })
	truth = truth[:min(10, len(truth))]

	fault := run.Fault()
	// "After recovery": the second half of the recovery phase, when
	// every breaker has had time to close and the merge-back to land.
	rec := run.Phases[3]
	after := Window{From: rec.From + (rec.To-rec.From)/2, To: rec.To}
	var (
		jFault, jAfter   []float64
		latFault, latAll []time.Duration
		failed, local    int
	)
	for _, a := range answers {
		latAll = append(latAll, a.latency)
		ok := a.status == http.StatusOK
		if !ok {
			failed++
		}
		if a.source == "local" {
			local++
		}
		switch {
		case fault.contains(a.at):
			latFault = append(latFault, a.latency)
			if ok {
				jFault = append(jFault, trending.Jaccard(a.codes, truth))
			}
		case after.contains(a.at) && ok:
			jAfter = append(jAfter, trending.Jaccard(a.codes, truth))
		}
	}
	meanOf := func(js []float64) (float64, string) {
		if len(js) == 0 {
			return 0, "no answers"
		}
		var s float64
		for _, j := range js {
			s += j
		}
		m := s / float64(len(js))
		return m, fmt.Sprintf("%.3f (%d answers)", m, len(js))
	}
	mFault, sFault := meanOf(jFault)
	mAfter, sAfter := meanOf(jAfter)
	lf := Summarise(latFault)
	la := Summarise(latAll)
	e.Figures = []Figure{
		{Label: "trending answers (GET /api/v1/trending?window=5m&limit=10 every 100 ms)", Value: fmt.Sprintf("%d, %d failed, %d from the local top-K", len(answers), failed, local)},
		{Label: "truth: top 10 of the redirects received (MySQL's counts)", Value: fmt.Sprint(truth)},
		{Label: "trending Jaccard@10 during the fault", Value: sFault, Column: "trending J@10 fault"},
		{Label: "trending Jaccard@10 after recovery", Value: sAfter, Column: "trending J@10 after"},
		{Label: "trending p99 / max during the fault", Value: fmt.Sprintf("%s / %s", ms(lf.P99), ms(lf.Max)), Column: "trending p99 fault"},
		{Label: "trending p99 / max over the run", Value: fmt.Sprintf("%s / %s", ms(la.P99), ms(la.Max))},
	}
	e.Checks = []Check{
		{ID: "trending.quality", What: "trending's top 10 against the truth (Jaccard), during the fault and after recovery",
			Want: ">= 0.9 and >= 0.9", Got: sFault + " and " + sAfter, OK: len(jFault) > 0 && len(jAfter) > 0 && mFault >= 0.9 && mAfter >= 0.9},
		{ID: "trending.failed", What: "trending answers that were not 200", Want: "0", Got: fmt.Sprint(failed), OK: failed == 0},
		{ID: "trending.latency", What: "p99 of GET /api/v1/trending during the fault", Want: "< 10 ms",
			Got: ms(lf.P99), OK: lf.N > 0 && lf.P99 < 10*time.Millisecond, Timing: true},
	}
	return e
}
