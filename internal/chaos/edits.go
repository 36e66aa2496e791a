package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"shortener/internal/tick"
)

// Edits is the account of edits: once an edit of a link's destination is
// acknowledged with 200, no instance may redirect to an earlier
// destination of that link more than editsGrace later (docs/design.md,
// "Deletes and edits"), and after the heal every instance redirects to
// the latest. An edit reaches the caches by the path a delete takes, so
// the faults that threaten deletes threaten edits too, and one more: a
// fill that read the old destination before the edit must not land
// after it.
//
// Open creates editsPerRun links of its own with the target's API key
// (an edit needs the owner's). Through the fault phase it edits them
// round after round, each edit right after looking the link up through
// every instance, so that every cache holds the destination the edit
// must replace. Every editsProbeEvery it looks each edited link up on
// every instance, and once more when it settles, after the heal.
type Edits struct{}

const (
	editsPerRun     = 8
	editRounds      = 3
	editsProbeEvery = 500 * time.Millisecond
	// editsGrace is how long after its 200 an edit may still be served
	// from a cache that has not heard of it yet: docs/design.md's bound
	// ("the old destination never served past 1 s after the 200").
	editsGrace = time.Second
)

// edit is one PATCH the account sent: link's destination to version.
type edit struct {
	code     string
	version  int
	sent     time.Duration // from Open
	answered time.Duration // 0 without an answer
	status   int
	err      string
}

// sighting is one lookup of an edited link: the version its Location
// names (-1: a redirect elsewhere, -2: no redirect).
type sighting struct {
	code, via string
	at        time.Duration // sent, from Open
	status    int
	version   int
	final     bool
}

// editURL is the destination of a link's version.
func editURL(prefix string, link, version int) string {
	return fmt.Sprintf("https://chaos.example/edits/%s/%d/v%d", prefix, link, version)
}

// Open creates the links, and starts editing and looking.
func (Edits) Open(ctx context.Context, env *Env) (Settle, error) {
	if env.Target.APIKey == "" {
		return func(context.Context, *Run) (Entry, error) {
			return Entry{Account: "edits", Figures: []Figure{{Label: "edits", Value: "not run: the target has no API key, which an edit needs"}}}, nil
		}, nil
	}
	codes := make([]string, editsPerRun)
	versions := map[string]map[string]int{} // code -> URL -> version
	for i := range codes {
		res := Result{Kind: Create, URL: editURL(env.Prefix, i, 0), Key: fmt.Sprintf("%s-edits-%d", env.Prefix, i)}
		create(ctx, env.Client, env.Target.BaseURL, env.Config.Timeout, env.Config.CreateAttempts, time.Now(), &res)
		if res.Outcome != OK {
			return nil, fmt.Errorf("create link %d to edit: %s", i, res.Err)
		}
		codes[i] = res.Code
		versions[res.Code] = map[string]int{}
		for v := range editRounds + 1 {
			versions[res.Code][editURL(env.Prefix, i, v)] = v
		}
	}
	start := time.Now()
	at := func() time.Duration { return time.Since(start) }
	look := func(ctx context.Context, codes []string, final bool) []sighting {
		var mu sync.Mutex
		var out []sighting
		lookEverywhere(ctx, env, codes, at, func(code, via string, sent time.Duration, a answer, err error) {
			s := sighting{code: code, via: via, at: sent, version: -2, final: final}
			if err == nil {
				s.status = a.status
				if a.status >= 300 && a.status < 400 {
					s.version = -1
					if v, ok := versions[code][a.location]; ok {
						s.version = v
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			out = append(out, s)
		})
		return out
	}

	var mu sync.Mutex // guards edits and sightings
	var edits []edit
	var sightings []sighting
	work, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	total := editsPerRun * editRounds
	from, gap := env.Config.Warmup+env.Config.Steady, env.Config.Fault/time.Duration(total)
	wg.Go(func() { // the editor: one edit every gap through the fault phase
		for n := range total {
			i, version := n%editsPerRun, n/editsPerRun+1
			if pause(work, from+time.Duration(n)*gap+gap/2-at()) != nil {
				return
			}
			look(work, codes[i:i+1], false) // every cache holds the destination to replace
			body, _ := json.Marshal(map[string]string{"url": editURL(env.Prefix, i, version)})
			e := edit{code: codes[i], version: version, sent: at()}
			a, err := send(work, env.Client, http.MethodPatch, env.Target.BaseURL+"/api/v1/links/"+codes[i], "", body, env.Config.Timeout)
			e.status = a.status
			if err != nil {
				e.err = normalise(err.Error())
			} else {
				e.answered = at()
			}
			mu.Lock()
			edits = append(edits, e)
			mu.Unlock()
		}
	})
	wg.Go(func() { // the looker
		tick.Every(work, editsProbeEvery, func() {
			ss := look(work, codes, false)
			mu.Lock()
			sightings = append(sightings, ss...)
			mu.Unlock()
		})
	})
	return func(ctx context.Context, run *Run) (Entry, error) {
		stop()
		wg.Wait()
		final := look(ctx, codes, true)
		return checkEdits(len(codes), edits, append(sightings, final...), run.Fault()), nil
	}, nil
}

// checkEdits judges the edits sent (to made links) by the lookups of the
// edited links; fault is the fault phase, for the count of edits within
// it. It is pure, so it can be tested on hand-made inputs.
func checkEdits(made int, edits []edit, sightings []sighting, fault Window) Entry {
	e := Entry{Account: "edits"}
	// acked[code] are the link's acknowledged edits, in the order sent
	// (one at a time per link, so also the order applied).
	acked := map[string][]edit{}
	var inFault int
	notAcked := map[string]int{}
	for _, ed := range edits {
		if ed.status == http.StatusOK {
			acked[ed.code] = append(acked[ed.code], ed)
			if fault.contains(ed.sent) {
				inFault++
			}
			continue
		}
		notAcked[cmp.Or(ed.err, fmt.Sprint(ed.status))]++
	}
	// latest is the version every lookup sent at t must at least show:
	// that of the last edit acknowledged more than editsGrace before t;
	// soon, that of the last acknowledged at all before t.
	latest := func(code string, t, grace time.Duration) int {
		v := 0
		for _, ed := range acked[code] {
			if t-ed.answered > grace {
				v = max(v, ed.version)
			}
		}
		return v
	}
	var seen, stale, late, elsewhere, unanswered, finalBad int
	for _, s := range sightings {
		problem := func(kind string) {
			e.Problems = append(e.Problems, Problem{Kind: kind, Code: s.code,
				Why: fmt.Sprintf("GET via %s at %.1f s: %s, version %d; the latest acknowledged then: %d (%d more than %s before)",
					s.via, s.at.Seconds(), statusOrNone(s.status), s.version, latest(s.code, s.at, 0), latest(s.code, s.at, editsGrace), ms(editsGrace))})
		}
		seen++
		switch {
		case s.version == -1:
			elsewhere++
			problem("wrong destination")
		case s.version == -2:
			unanswered++
			if s.final {
				finalBad++
				problem("no redirect after the heal")
			}
		case s.version < latest(s.code, s.at, editsGrace):
			late++
			problem("old destination")
		case s.final && s.version < latest(s.code, s.at, 0):
			finalBad++
			problem("not the latest after the heal")
		case s.version < latest(s.code, s.at, 0):
			stale++
		}
	}
	var refused []string
	for _, k := range slices.Sorted(maps.Keys(notAcked)) {
		refused = append(refused, fmt.Sprintf("%s ×%d", k, notAcked[k]))
	}
	var nAcked int
	for _, es := range acked {
		nAcked += len(es)
	}
	e.Figures = []Figure{
		{Label: "links made to be edited (with the API key)", Value: fmt.Sprint(made)},
		{Label: "edits sent / acknowledged (200)", Value: fmt.Sprintf("%d / %d (%d acknowledged within the fault phase)", len(edits), nAcked, inFault)},
		{Label: "edits not acknowledged", Value: cmp.Or(strings.Join(refused, ", "), "none")},
		{Label: "lookups of edited links (through the target and each app, every 500 ms and after the heal)",
			Value: fmt.Sprintf("%d: %d with an earlier destination within %s of the edit's 200, %d unanswered or not a redirect", seen, stale, ms(editsGrace), unanswered)},
		{Label: "old destinations served past the grace", Value: fmt.Sprint(late + elsewhere), Column: "edits undone"},
	}
	e.Checks = []Check{
		{ID: "edits", What: fmt.Sprintf("an earlier (or unknown) destination served by any instance more than %s after an edit's 200, or anything but the latest after the heal", ms(editsGrace)),
			Want: "0", Got: fmt.Sprintf("%d old, %d unknown, %d wrong after the heal (%d edits acknowledged)", late, elsewhere, finalBad, nAcked),
			OK: late == 0 && elsewhere == 0 && finalBad == 0, Required: true},
		{ID: "edits.at-once", What: "an earlier destination served at any time after an edit's 200", Want: "0",
			Got: fmt.Sprintf("%d (%d within %s of the 200)", stale+late, stale, ms(editsGrace)), OK: stale+late == 0},
		{ID: "edits.acknowledged", What: "edits acknowledged (200)", Want: fmt.Sprint(made * editRounds),
			Got: fmt.Sprintf("%d of %d sent", nAcked, len(edits)), OK: nAcked == made*editRounds},
	}
	return e
}
