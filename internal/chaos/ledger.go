package chaos

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// The ledger counts what was sent against what was stored. Dashboards
// that count HTTP errors miss a create that was acknowledged and then
// lost; only comparing the client's record with the database finds it.
// The ledger is a list of accounts, each one an Account: creates here,
// and whatever else a feature must not lose (see the package comment).

// Account is one account of the ledger: something the load did that the
// stack must not lose, checked after every scenario.
type Account interface {
	// Open is called once per scenario, on a whole, primed stack, just
	// before the load starts: it notes what it will compare against (a
	// count in MySQL, say) and may start traffic of its own. The Settle it
	// returns is called once the load has stopped and the stack has been
	// healed.
	Open(ctx context.Context, env *Env) (Settle, error)
}

// Settle closes an account for one run: its figures, problems and checks.
type Settle func(ctx context.Context, run *Run) (Entry, error)

// Env is what an account may use: where the load went, the database as
// the read-only user, the load's HTTP client, and the prefix that every
// URL and Idempotency-Key of this scenario's load starts with.
type Env struct {
	Target Target
	DB     *sql.DB
	Client *http.Client
	Config Config
	// Prefix is "<run ID>-<scenario>": created URLs are
	// https://chaos.example/<Prefix>/<n>, keys <Prefix>-<n>.
	Prefix string
	// Links are the pre-created links the redirects go to (Result.Link
	// indexes them); they live across scenarios.
	Links []Link
}

// Entry is an account's part of a report.
type Entry struct {
	Account string `json:"account"`
	// Figures are shown in the report's ledger table, in order; those
	// with a Column are also a column of the summary table.
	Figures  []Figure  `json:"figures"`
	Problems []Problem `json:"problems,omitempty"`
	// Checks join the scenario's checks; a scenario may waive one by ID.
	Checks []Check `json:"-"`
}

// Figure is one line of an account.
type Figure struct {
	Label string `json:"label"`
	Value string `json:"value"`
	// Column is the heading of the summary table's column showing this
	// figure ("lost creates"); empty for none.
	Column string `json:"column,omitempty"`
}

// Problem names one thing an account faults.
type Problem struct {
	Kind string `json:"kind"` // "lost", "duplicated", …
	Key  string `json:"key,omitempty"`
	URL  string `json:"url,omitempty"`
	Code string `json:"code,omitempty"`
	Why  string `json:"why"`
}

// Accounts returns the accounts every run keeps.
func Accounts() []Account {
	// Trending stays last: its clock starts when Open returns, and the load
	// starts right after the last account opened.
	return []Account{Creates{}, Clicks{}, Deletes{}, Edits{}, Trending{}}
}

// Creates is the account of link creation: every acknowledged create is
// in MySQL under its code and URL, its Idempotency-Key names that code,
// no key made two links, and the code redirects through the target after
// the run.
type Creates struct{}

// Open notes nothing: the scenario's creates are found by their prefix.
func (Creates) Open(_ context.Context, env *Env) (Settle, error) {
	return func(ctx context.Context, run *Run) (Entry, error) {
		// The URLs a load creates embed its run ID and scenario, so the
		// prefix selects exactly them; the scan is fine for the tens of
		// thousands of rows a local stack holds.
		stored, err := queryPairs[string](ctx, env.DB, "SELECT code, url FROM links WHERE url LIKE CONCAT(?, '%')",
			"https://chaos.example/"+env.Prefix+"/")
		if err != nil {
			return Entry{}, fmt.Errorf("query links: %w", err)
		}
		var sent []any // keys
		var acked []Link
		for _, r := range run.Results {
			if r.Kind == Create && r.Outcome == OK {
				acked = append(acked, Link{Code: r.Code, URL: r.URL})
				if r.Key != "" {
					sent = append(sent, r.Key)
				}
			}
		}
		// The table keeps each key as sent, beside its scope (who sent
		// it); the load's keys are unique, so the key alone finds its row.
		keys, err := queryPairsIn[string](ctx, env.DB, "SELECT idem_key, code FROM idempotency_keys WHERE idem_key IN (%s)", sent)
		if err != nil {
			return Entry{}, fmt.Errorf("query idempotency keys: %w", err)
		}
		resolved := lookupAll(ctx, env.Client, env.Target.BaseURL, acked, env.Config.Timeout)
		return checkCreates(run.Results, stored, keys, resolved), nil
	}, nil
}

// The kinds of problem the creates account finds, and the checks named
// after them.
const (
	problemLost       = "lost"
	problemMismatched = "mismatched"
	problemDuplicated = "duplicated"
	problemKey        = "key-mismatched"
	problemUnresolved = "unresolved"
)

// checkCreates compares the load's results with the rows stored for its
// URLs (stored: code -> URL), the Idempotency-Key table (keys: key ->
// code) and why each acknowledged code did not redirect to its URL after
// the run (resolved: code -> reason, "" when it did). It is pure, so it
// can be tested on hand-made inputs.
func checkCreates(results []Result, stored, keys, resolved map[string]string) Entry {
	var acked, unackedStored, failedStored, retried, replayed int
	e := Entry{Account: "creates"}
	n := map[string]int{} // problems by kind
	problem := func(p Problem) {
		e.Problems = append(e.Problems, p)
		n[p.Kind]++
	}
	byURL := map[string][]string{} // URL -> codes stored for it
	for code, url := range stored {
		byURL[url] = append(byURL[url], code)
	}
	// A keyed create makes one link whatever its retries; an unkeyed one
	// may make one per POST (a POST that timed out may have been stored,
	// and its retry makes another).
	allowed := map[string]int{} // URL -> links its create may have made
	for _, r := range results {
		if r.Kind != Create {
			continue
		}
		allowed[r.URL] = 1
		if r.Key == "" {
			allowed[r.URL] = max(1, r.Attempts)
		}
		if r.Attempts > 1 {
			retried++
		}
		if r.Replayed {
			replayed++
		}
		if r.Outcome != OK {
			if len(byURL[r.URL]) > 0 {
				unackedStored++
				if r.Outcome == Failed {
					failedStored++
				}
			}
			continue
		}
		acked++
		p := func(kind, why string) { problem(Problem{Kind: kind, Key: r.Key, URL: r.URL, Code: r.Code, Why: why}) }
		url, ok := stored[r.Code]
		switch {
		case !ok:
			p(problemLost, "acknowledged with 201 but no row has its code")
		case url != r.URL:
			p(problemMismatched, fmt.Sprintf("its code is stored with URL %q", url))
		}
		if k, ok := keys[r.Key]; r.Key != "" && (!ok || k != r.Code) {
			p(problemKey, fmt.Sprintf("Idempotency-Key recorded for code %q (present: %v)", k, ok))
		}
		if why, ok := resolved[r.Code]; !ok || why != "" {
			p(problemUnresolved, cmp.Or(why, "not looked up"))
		}
	}
	for _, u := range slices.Sorted(maps.Keys(byURL)) {
		if codes := byURL[u]; len(codes) > max(1, allowed[u]) {
			slices.Sort(codes)
			problem(Problem{Kind: problemDuplicated, URL: u, Why: fmt.Sprintf("stored %d times, codes %v", len(codes), codes)})
		}
	}

	f := fmt.Sprint
	e.Figures = []Figure{
		{Label: "creates acknowledged (201)", Value: f(acked)},
		{Label: "of those, in MySQL under their code and URL", Value: f(acked - n[problemLost] - n[problemMismatched])},
		{Label: "lost (acknowledged, no row)", Value: f(n[problemLost]), Column: "lost creates"},
		{Label: "stored with another URL", Value: f(n[problemMismatched])},
		{Label: "URLs stored more often than their create could make them (a key that made two links)", Value: f(n[problemDuplicated])},
		{Label: "key recorded for another code", Value: f(n[problemKey])},
		{Label: "acknowledged but not redirecting to their URL after the run", Value: f(n[problemUnresolved])},
		{Label: "not acknowledged (failed or unknown) yet stored", Value: fmt.Sprintf("%d (%d of them failed, not timed out)", unackedStored, failedStored)},
		{Label: "creates that took more than one POST (with their key, if any)", Value: f(retried)},
		{Label: "acknowledged with the answer of an earlier POST (Idempotent-Replayed)", Value: f(replayed)},
	}
	zero := func(id, what string, got int, of string) {
		e.Checks = append(e.Checks, Check{ID: id, What: what, Want: "0", Got: f(got) + of, OK: got == 0, Required: true})
	}
	of := fmt.Sprintf(" of %d", acked)
	zero("creates.lost", "acknowledged creates lost (no row in MySQL)", n[problemLost], of)
	zero("creates.mismatched", "acknowledged codes stored with another URL", n[problemMismatched], "")
	zero("creates.duplicated", "creates that made more links than POSTs could (a key: one)", n[problemDuplicated], "")
	zero("creates.key", "acknowledged creates whose key names another code", n[problemKey], "")
	zero("creates.unresolved", "acknowledged creates that do not redirect to their URL after the run", n[problemUnresolved], of)
	zero("creates.half-written", "creates that failed for the client but were stored (half-written)", failedStored, "")
	return e
}

// queryPairs runs query and returns its rows' two columns, a key and a
// value, as a map.
func queryPairs[V any](ctx context.Context, db *sql.DB, query string, args ...any) (map[string]V, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]V{}
	for rows.Next() {
		var k string
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// queryPairsIn is queryPairs for a query whose "IN (%s)" it fills with
// placeholders for up to 500 of keys at a time.
func queryPairsIn[V any](ctx context.Context, db *sql.DB, query string, keys []any) (map[string]V, error) {
	out := make(map[string]V, len(keys))
	for chunk := range slices.Chunk(keys, 500) {
		m, err := queryPairs[V](ctx, db, fmt.Sprintf(query, "?"+strings.Repeat(",?", len(chunk)-1)), chunk...)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, m)
	}
	return out, nil
}
