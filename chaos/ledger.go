package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	// The MySQL driver, for the read-only user the ledger checks with.
	_ "github.com/go-sql-driver/mysql"
)

// The ledger counts what was sent against what was stored. Dashboards
// that count HTTP errors miss a create that was acknowledged and then
// lost; only comparing the client's record with the database finds it.

// StoredLink is a row of the links table.
type StoredLink struct {
	Code string
	URL  string
}

// Resolution is how a code answered through nginx after the run.
type Resolution struct {
	Status   int
	Location string
	Err      string
}

// Ledger is the check of one run's creates and redirects.
type Ledger struct {
	// Acknowledged is how many creates got 201.
	Acknowledged int `json:"acknowledged"`
	// Stored is how many of them are in MySQL under their code and URL.
	Stored int `json:"stored"`
	// Lost are acknowledged creates with no row for their code: the link
	// the client was promised does not exist.
	Lost []Problem `json:"lost"`
	// Mismatched are acknowledged creates whose code is stored with
	// another URL.
	Mismatched []Problem `json:"mismatched"`
	// Duplicated are URLs stored more than once. Every create sends a URL
	// of its own under a key of its own, so a second row for a URL is a
	// key that made two links.
	Duplicated []Problem `json:"duplicated"`
	// Unresolved are acknowledged creates that did not redirect to their
	// URL through nginx after the run.
	Unresolved []Problem `json:"unresolved"`
	// KeyMismatched are acknowledged creates whose Idempotency-Key is
	// recorded for another code (or not at all).
	KeyMismatched []Problem `json:"key_mismatched"`
	// UnacknowledgedStored counts creates that did not get 201 (failed or
	// unknown) yet are in MySQL: not a loss, but what a client that gave
	// up without retrying would never learn.
	UnacknowledgedStored int `json:"unacknowledged_stored"`
	// FailedStored counts the creates among those whose client saw a
	// definite failure (not a timeout): the "half-written" case.
	FailedStored int `json:"failed_stored"`
	// Retried counts creates that took more than one POST; Replayed,
	// those acknowledged with the answer of an earlier POST of theirs
	// (Idempotent-Replayed): the key at work.
	Retried  int `json:"retried"`
	Replayed int `json:"replayed"`
	// Redirects, WrongLocation: redirects answered during the run, and
	// those answered with a Location other than their link's URL.
	Redirects     int `json:"redirects"`
	WrongLocation int `json:"wrong_location"`
}

// Problem names one create the ledger faults.
type Problem struct {
	Key  string `json:"key,omitempty"`
	URL  string `json:"url"`
	Code string `json:"code,omitempty"`
	Why  string `json:"why"`
}

// OK reports whether the ledger found nothing wrong.
func (l Ledger) OK() bool {
	return len(l.Lost) == 0 && len(l.Mismatched) == 0 && len(l.Duplicated) == 0 &&
		len(l.Unresolved) == 0 && len(l.KeyMismatched) == 0 && l.WrongLocation == 0
}

// checkLedger compares the load's results with the rows stored for its
// URLs (stored), the Idempotency-Key table (keys: key -> code) and how
// each acknowledged code resolved after the run (resolved). It is pure, so
// it can be tested on hand-made inputs.
func checkLedger(results []Result, stored []StoredLink, keys map[string]string, resolved map[string]Resolution) Ledger {
	var l Ledger
	byURL := map[string][]string{} // URL -> codes stored for it
	byCode := map[string]string{}  // code -> URL stored
	for _, s := range stored {
		byURL[s.URL] = append(byURL[s.URL], s.Code)
		byCode[s.Code] = s.URL
	}
	for _, r := range results {
		switch r.Kind {
		case Redirect:
			if r.Outcome != Unknown {
				l.Redirects++
			}
			if r.WrongLocation {
				l.WrongLocation++
			}
			continue
		case Create:
		default:
			continue
		}
		if r.Attempts > 1 {
			l.Retried++
		}
		if r.Replayed {
			l.Replayed++
		}
		if r.Outcome != OK {
			if len(byURL[r.URL]) > 0 {
				l.UnacknowledgedStored++
				if r.Outcome == Failed {
					l.FailedStored++
				}
			}
			continue
		}
		l.Acknowledged++
		p := Problem{Key: r.Key, URL: r.URL, Code: r.Code}
		url, ok := byCode[r.Code]
		switch {
		case !ok:
			p.Why = "acknowledged with 201 but no row has its code"
			l.Lost = append(l.Lost, p)
		case url != r.URL:
			p.Why = fmt.Sprintf("its code is stored with URL %q", url)
			l.Mismatched = append(l.Mismatched, p)
		default:
			l.Stored++
		}
		if k, ok := keys[r.Key]; !ok || k != r.Code {
			p.Why = fmt.Sprintf("Idempotency-Key recorded for code %q (present: %v)", k, ok)
			l.KeyMismatched = append(l.KeyMismatched, p)
		}
		if res, ok := resolved[r.Code]; !ok || res.Status != http.StatusFound || res.Location != r.URL {
			p.Why = fmt.Sprintf("resolves to %d %q (%s), want 302 to its URL", res.Status, res.Location, res.Err)
			l.Unresolved = append(l.Unresolved, p)
		}
	}
	urls := make([]string, 0, len(byURL))
	for u := range byURL {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	for _, u := range urls {
		if codes := byURL[u]; len(codes) > 1 {
			sort.Strings(codes)
			l.Duplicated = append(l.Duplicated, Problem{URL: u, Why: fmt.Sprintf("stored %d times, codes %v", len(codes), codes)})
		}
	}
	return l
}

// ledgerDB reads what the ledger compares against, as the read-only user.
type ledgerDB struct {
	db *sql.DB
}

// openLedgerDB opens dsn, which should be a user that can only SELECT.
func openLedgerDB(dsn string) (*ledgerDB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("open ledger database: %w", err)
	}
	db.SetMaxOpenConns(2)
	return &ledgerDB{db: db}, nil
}

func (d *ledgerDB) Close() error { return d.db.Close() }

// links returns every link whose URL starts with prefix. The URLs a load
// creates embed its run ID and scenario, so the prefix selects exactly
// them; the scan is fine for the tens of thousands of rows a local stack
// holds.
func (d *ledgerDB) links(ctx context.Context, prefix string) ([]StoredLink, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT code, url FROM links WHERE url LIKE CONCAT(?, '%')", prefix)
	if err != nil {
		return nil, fmt.Errorf("query links: %w", err)
	}
	defer rows.Close()
	var out []StoredLink
	for rows.Next() {
		var s StoredLink
		if err := rows.Scan(&s.Code, &s.URL); err != nil {
			return nil, fmt.Errorf("scan link: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query links: %w", err)
	}
	return out, nil
}

// keys returns the code recorded for every Idempotency-Key with prefix.
func (d *ledgerDB) keys(ctx context.Context, prefix string) (map[string]string, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT idem_key, code FROM idempotency_keys WHERE idem_key LIKE CONCAT(?, '%')", prefix)
	if err != nil {
		return nil, fmt.Errorf("query idempotency keys: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, c string
		if err := rows.Scan(&k, &c); err != nil {
			return nil, fmt.Errorf("scan idempotency key: %w", err)
		}
		out[k] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query idempotency keys: %w", err)
	}
	return out, nil
}

// resolveAll resolves every code through base with a few workers and
// returns how each answered.
func resolveAll(c *http.Client, base string, codes []string, timeout time.Duration) map[string]Resolution {
	const workers = 8
	out := make(map[string]Resolution, len(codes))
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for code := range work {
				status, loc, _, err := get(c, base, code, timeout)
				res := Resolution{Status: status, Location: loc}
				if err != nil {
					res.Err = err.Error()
				}
				mu.Lock()
				out[code] = res
				mu.Unlock()
			}
		})
	}
	for _, code := range codes {
		work <- code
	}
	close(work)
	wg.Wait()
	return out
}
