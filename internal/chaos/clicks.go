package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	"shortener"
	"shortener/internal/stack"
)

// Clicks is the account of clicks: per code, the redirects the load
// received (3xx with the link's Location) equal the clicks MySQL holds for
// the code once every instance's journal has shipped: none lost, none
// counted twice. A redirect the load never got an answer for (unknown),
// or got nginx's 502 or 504 for, may or may not have been counted by the
// app it reached; it is allowed as a click but never required.
type Clicks struct{}

// clicksDrain bounds the wait for the journals to ship after a run: a
// shipper retries a down MySQL every 5 s at most, and a restarted app
// ships its old journal first.
const clicksDrain = 90 * time.Second

// Open waits until the clicks made before this run (priming, an earlier
// scenario) are shipped, then notes each link's stored count.
func (Clicks) Open(ctx context.Context, env *Env) (Settle, error) {
	if err := waitShipped(ctx, env.DB, time.Now()); err != nil {
		return nil, fmt.Errorf("clicks before the run: %w", err)
	}
	before, err := storedClicks(ctx, env.DB, env.Links)
	if err != nil {
		return nil, err
	}
	dimsBefore, err := storedDims(ctx, env.DB, env.Links)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, run *Run) (Entry, error) {
		drainErr := waitShipped(ctx, env.DB, time.Now())
		after, err := storedClicks(ctx, env.DB, env.Links)
		if err != nil {
			return Entry{Account: "clicks"}, err
		}
		dimsAfter, err := storedDims(ctx, env.DB, env.Links)
		if err != nil {
			return Entry{Account: "clicks"}, err
		}
		served, unknown := received(run.Results, len(env.Links))
		e, tally := checkClicks(env.Links, served, unknown, before, after, drainErr)
		e.Checks = append(e.Checks, checkDims(env.Links, before, after, dimsBefore, dimsAfter))
		run.Clicks = &tally
		return e, nil
	}, nil
}

// checkDims checks the analytics dimensions against the counts: per code,
// each dimension's values (countries, browsers, OSes, devices) sum to the
// clicks stored in the run, so none is dropped or counted twice by any
// dimension. dims are keyed "<code> <dimension>".
func checkDims(links []Link, before, after, dimsBefore, dimsAfter map[string]int64) Check {
	var off, clicks int64
	var first string
	for _, l := range links {
		stored := after[l.Code] - before[l.Code]
		clicks += stored
		for _, d := range shortener.Dimensions {
			k := l.Code + " " + d
			if got := dimsAfter[k] - dimsBefore[k]; got != stored {
				off++
				if first == "" {
					first = fmt.Sprintf("; first: %s's %ss sum to %d for %d clicks", l.Code, d, got, stored)
				}
			}
		}
	}
	return Check{ID: "click-dims", What: "per code and analytics dimension (country, browser, OS, device), the values' clicks sum to the clicks stored",
		Want: "0 sums off", Got: fmt.Sprintf("%d sums off of %d (%d clicks)%s", off, len(links)*len(shortener.Dimensions), clicks, first),
		OK: off == 0, Required: true}
}

// ClicksTally is the clicks account's arithmetic, which it leaves on the
// Run for a scenario whose row explains lost clicks by something else
// (ClicksExplainedByDrops).
type ClicksTally struct {
	// Served are the redirects received, Stored the clicks MySQL holds
	// for them, Unknown the redirects that may or may not be counted.
	Served, Stored, Unknown int64
	// Lost and Double sum, per code, the clicks stored below the
	// redirects received, and above the redirects received and unknown.
	Lost, Double int64
	// Drained is nil when every journal shipped before the count.
	Drained error
}

// checkClicks compares, per link, the redirects the load received (served
// and unknown, by link index) with the clicks stored for its code before
// and after the run, once the journals have shipped or not (drainErr). It
// is pure, so it can be tested on hand-made inputs.
func checkClicks(links []Link, served, unknown []int64, before, after map[string]int64, drainErr error) (Entry, ClicksTally) {
	e := Entry{Account: "clicks"}
	t := ClicksTally{Drained: drainErr}
	for i, l := range links {
		stored := after[l.Code] - before[l.Code]
		t.Served += served[i]
		t.Stored += stored
		t.Unknown += unknown[i]
		switch {
		case stored < served[i]:
			t.Lost += served[i] - stored
			e.Problems = append(e.Problems, Problem{Kind: "lost clicks", Code: l.Code,
				Why: fmt.Sprintf("%d redirects received, %d clicks stored", served[i], stored)})
		case stored > served[i]+unknown[i]:
			t.Double += stored - served[i] - unknown[i]
			e.Problems = append(e.Problems, Problem{Kind: "double clicks", Code: l.Code,
				Why: fmt.Sprintf("%d redirects received (%d unanswered), %d clicks stored", served[i], unknown[i], stored)})
		}
	}
	drained := "yes"
	if drainErr != nil {
		drained = drainErr.Error()
	}
	e.Figures = []Figure{
		{Label: "redirects received (3xx, right Location)", Value: fmt.Sprint(t.Served), Column: "clicks served"},
		{Label: "clicks stored in MySQL for them", Value: fmt.Sprint(t.Stored), Column: "clicks stored"},
		{Label: "redirects unanswered or 502/504 from nginx (may be counted)", Value: fmt.Sprint(t.Unknown)},
		{Label: "clicks lost", Value: fmt.Sprint(t.Lost), Column: "lost clicks"},
		{Label: "clicks counted twice", Value: fmt.Sprint(t.Double), Column: "double clicks"},
		{Label: "journals shipped before the count", Value: drained},
	}
	e.Checks = []Check{{ID: "clicks", What: "per code, clicks stored in MySQL = redirects received, once the journals have shipped",
		Want: "0 lost, 0 double", Got: fmt.Sprintf("%d lost, %d double (%d served, %d stored)", t.Lost, t.Double, t.Served, t.Stored),
		OK: t.Lost == 0 && t.Double == 0 && drainErr == nil, Required: true}}
	return e, t
}

// received counts, per link, the redirects the load received (3xx with
// the link's Location), and those an app may or may not have counted: no
// answer, or nginx's own 502 or 504 after it may have reached an app.
func received(results []Result, links int) (served, unknown []int64) {
	served, unknown = make([]int64, links), make([]int64, links)
	for _, r := range results {
		if r.Kind != Redirect || r.Link < 0 || r.Link >= links {
			continue
		}
		switch {
		case r.Outcome == Unknown, r.Status == 0, r.Status == http.StatusBadGateway, r.Status == http.StatusGatewayTimeout:
			unknown[r.Link]++
		case r.Status >= 300 && r.Status < 400 && !r.WrongLocation:
			served[r.Link]++
		}
	}
	return served, unknown
}

// waitShipped waits until every journal heard from recently has shipped
// everything it held before t: the earliest of their caught-up times (the
// stats API's as_of) has passed t.
func waitShipped(ctx context.Context, db *sql.DB, t time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, clicksDrain)
	defer cancel()
	err := stack.Poll(ctx, 250*time.Millisecond, func(ctx context.Context) error {
		var asOf sql.NullTime
		err := db.QueryRowContext(ctx, "SELECT MIN(caught_up_at) FROM click_journals WHERE updated_at > NOW(3) - INTERVAL 600 SECOND").Scan(&asOf)
		if err == nil && asOf.Valid && asOf.Time.Before(t) {
			err = fmt.Errorf("journals shipped up to %s, want %s", asOf.Time.Format(time.RFC3339Nano), t.UTC().Format(time.RFC3339Nano))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("journals not shipped within %s: %w", clicksDrain, err)
	}
	return nil
}

// storedClicks returns the clicks MySQL holds for each link, by code.
func storedClicks(ctx context.Context, db *sql.DB, links []Link) (map[string]int64, error) {
	codes := make([]any, len(links))
	for i, l := range links {
		codes[i] = l.Code
	}
	// Counted and pending (store/clickfold.go) in one statement, so one
	// snapshot: a fold moving clicks from one to the other meanwhile
	// cannot show them twice or not at all.
	out, err := queryPairsIn[int64](ctx, db, `SELECT l.code,
		COALESCE((SELECT SUM(h.clicks) FROM click_hours h WHERE h.link_id = l.id), 0)
		+ (SELECT COUNT(*) FROM click_pending p WHERE p.link_id = l.id)
		FROM links l WHERE l.code IN (%s)`, codes)
	if err != nil {
		return nil, fmt.Errorf("query stored clicks: %w", err)
	}
	return out, nil
}

// storedDims returns, per code and analytics dimension ("<code> <dim>"),
// the clicks MySQL holds summed over the dimension's values.
func storedDims(ctx context.Context, db *sql.DB, links []Link) (map[string]int64, error) {
	codes := make([]any, len(links))
	for i, l := range links {
		codes[i] = l.Code
	}
	// Each row of click_dim_sets counts in all four dimensions; click_dims
	// (the days before it) a row per dimension.
	out, err := queryPairsIn[int64](ctx, db, `SELECT CONCAT(l.code, ' ', d.dim), SUM(d.clicks) FROM links l
		JOIN click_dims d ON d.link_id = l.id WHERE l.code IN (%s) GROUP BY l.code, d.dim`, codes)
	if err != nil {
		return nil, fmt.Errorf("query stored click dimensions: %w", err)
	}
	// A pending click counts in all four too (as storedClicks).
	sets, err := queryPairsIn[int64](ctx, db, `SELECT l.code,
		COALESCE((SELECT SUM(d.clicks) FROM click_dim_sets d WHERE d.link_id = l.id), 0)
		+ (SELECT COUNT(*) FROM click_pending p WHERE p.link_id = l.id)
		FROM links l WHERE l.code IN (%s)`, codes)
	if err != nil {
		return nil, fmt.Errorf("query stored click dimensions: %w", err)
	}
	for code, n := range sets {
		for _, dim := range shortener.Dimensions {
			out[code+" "+dim] += n
		}
	}
	return out, nil
}
