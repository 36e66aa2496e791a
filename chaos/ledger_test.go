package chaos

import (
	"net/http"
	"strings"
	"testing"
)

// acked is a create the client saw acknowledged.
func acked(key, url, code string) Result {
	return Result{Kind: Create, Outcome: OK, Key: key, URL: url, Code: code, Attempts: 1}
}

// ledgerFixture is a clean run: three acknowledged creates, all stored,
// keyed and resolving, plus a failed create that left nothing behind.
func ledgerFixture() ([]Result, []StoredLink, map[string]string, map[string]Resolution) {
	results := []Result{
		acked("k1", "https://x/1", "c1"),
		acked("k2", "https://x/2", "c2"),
		acked("k3", "https://x/3", "c3"),
		{Kind: Create, Outcome: Failed, Key: "k4", URL: "https://x/4", Status: 503, Attempts: 4},
		{Kind: Redirect, Outcome: OK, Link: 0},
		{Kind: Redirect, Outcome: Unknown, Link: 1},
	}
	stored := []StoredLink{{"c1", "https://x/1"}, {"c2", "https://x/2"}, {"c3", "https://x/3"}}
	keys := map[string]string{"k1": "c1", "k2": "c2", "k3": "c3"}
	resolved := map[string]Resolution{
		"c1": {Status: 302, Location: "https://x/1"},
		"c2": {Status: 302, Location: "https://x/2"},
		"c3": {Status: 302, Location: "https://x/3"},
	}
	return results, stored, keys, resolved
}

func TestLedgerClean(t *testing.T) {
	l := checkLedger(ledgerFixture())
	if !l.OK() {
		t.Fatalf("clean run: ledger finds problems: %+v", l)
	}
	if l.Acknowledged != 3 || l.Stored != 3 || l.Redirects != 1 || l.UnacknowledgedStored != 0 || l.Retried != 1 {
		t.Errorf("clean run: acknowledged %d stored %d redirects %d unacknowledged-stored %d retried %d, want 3 3 1 0 1",
			l.Acknowledged, l.Stored, l.Redirects, l.UnacknowledgedStored, l.Retried)
	}
}

// TestLedgerFindsLostCreate: the app answered 201 for k2, but no row has
// its code. No HTTP error was ever seen; only the ledger can tell.
func TestLedgerFindsLostCreate(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	stored = []StoredLink{stored[0], stored[2]} // c2 never reached MySQL
	delete(keys, "k2")
	resolved["c2"] = Resolution{Status: http.StatusNotFound}
	l := checkLedger(results, stored, keys, resolved)
	if len(l.Lost) != 1 || l.Lost[0].Code != "c2" || l.Lost[0].Key != "k2" {
		t.Fatalf("lost = %+v, want exactly c2 (key k2)", l.Lost)
	}
	if l.Stored != 2 || l.OK() {
		t.Errorf("stored %d, OK %v; want 2 and false", l.Stored, l.OK())
	}
	if len(l.Unresolved) != 1 || !strings.Contains(l.Unresolved[0].Why, "404") {
		t.Errorf("unresolved = %+v, want c2 answering 404", l.Unresolved)
	}
}

// TestLedgerFindsKeyThatMadeTwoLinks: a retry under the same key made a
// second link instead of replaying the first. Each create sends a URL of
// its own, so two rows with one URL are two links from one key.
func TestLedgerFindsKeyThatMadeTwoLinks(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	stored = append(stored, StoredLink{"c3bis", "https://x/3"})
	l := checkLedger(results, stored, keys, resolved)
	if len(l.Duplicated) != 1 || l.Duplicated[0].URL != "https://x/3" || !strings.Contains(l.Duplicated[0].Why, "c3bis") {
		t.Fatalf("duplicated = %+v, want https://x/3 stored as c3 and c3bis", l.Duplicated)
	}
	if l.OK() {
		t.Error("ledger OK with a duplicated link, want not OK")
	}
	// The client's own link is still there: a duplicate is not a loss.
	if len(l.Lost) != 0 {
		t.Errorf("lost = %+v, want none", l.Lost)
	}
}

func TestLedgerFindsOtherFaults(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(results []Result, stored []StoredLink, keys map[string]string, resolved map[string]Resolution) []StoredLink
		check func(Ledger) bool
	}{
		{
			"code stored with another URL",
			func(_ []Result, stored []StoredLink, _ map[string]string, _ map[string]Resolution) []StoredLink {
				stored[0].URL = "https://x/other"
				return stored
			},
			func(l Ledger) bool { return len(l.Mismatched) == 1 && l.Mismatched[0].Code == "c1" },
		},
		{
			"key recorded for another code",
			func(_ []Result, stored []StoredLink, keys map[string]string, _ map[string]Resolution) []StoredLink {
				keys["k1"] = "c9"
				return stored
			},
			func(l Ledger) bool { return len(l.KeyMismatched) == 1 && l.KeyMismatched[0].Key == "k1" },
		},
		{
			"redirect to the wrong place after the run",
			func(_ []Result, stored []StoredLink, _ map[string]string, resolved map[string]Resolution) []StoredLink {
				resolved["c3"] = Resolution{Status: 302, Location: "https://x/1"}
				return stored
			},
			func(l Ledger) bool { return len(l.Unresolved) == 1 && l.Unresolved[0].Code == "c3" },
		},
		{
			"wrong Location during the run",
			func(results []Result, stored []StoredLink, _ map[string]string, _ map[string]Resolution) []StoredLink {
				results[4].Outcome, results[4].WrongLocation = Failed, true
				return stored
			},
			func(l Ledger) bool { return l.WrongLocation == 1 },
		},
	}
	for _, tt := range tests {
		results, stored, keys, resolved := ledgerFixture()
		stored = tt.spoil(results, stored, keys, resolved)
		l := checkLedger(results, stored, keys, resolved)
		if !tt.check(l) || l.OK() {
			t.Errorf("%s: ledger %+v does not report it", tt.name, l)
		}
	}
}

// TestLedgerCountsUnacknowledgedButStored: a create that timed out (or
// failed) may still have been stored. That is not a loss, but the ledger
// counts it, and tells a definite failure (half-written) from a timeout.
func TestLedgerCountsUnacknowledgedButStored(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	results = append(results, Result{Kind: Create, Outcome: Unknown, Key: "k5", URL: "https://x/5"})
	stored = append(stored, StoredLink{"c4", "https://x/4"}, StoredLink{"c5", "https://x/5"})
	l := checkLedger(results, stored, keys, resolved)
	if l.UnacknowledgedStored != 2 || l.FailedStored != 1 {
		t.Errorf("unacknowledged stored %d, failed stored %d; want 2 and 1", l.UnacknowledgedStored, l.FailedStored)
	}
	if !l.OK() {
		t.Errorf("ledger not OK for stored unacknowledged creates, want OK: %+v", l)
	}
}
