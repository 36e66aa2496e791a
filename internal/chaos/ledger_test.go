package chaos

import (
	"strings"
	"testing"
)

// acked is a create the client saw acknowledged.
func acked(key, url, code string) Result {
	return Result{Kind: Create, Outcome: OK, Key: key, URL: url, Code: code, Attempts: 1}
}

// ledgerFixture is a clean run: three acknowledged creates, all stored,
// keyed and resolving, plus a failed create that left nothing behind.
func ledgerFixture() ([]Result, map[string]string, map[string]string, map[string]string) {
	results := []Result{
		acked("k1", "https://x/1", "c1"),
		acked("k2", "https://x/2", "c2"),
		acked("k3", "https://x/3", "c3"),
		{Kind: Create, Outcome: Failed, Key: "k4", URL: "https://x/4", Status: 503, Attempts: 4},
		{Kind: Redirect, Outcome: OK, Link: 0},
		{Kind: Redirect, Outcome: Unknown, Link: 1},
	}
	stored := map[string]string{"c1": "https://x/1", "c2": "https://x/2", "c3": "https://x/3"}
	keys := map[string]string{"k1": "c1", "k2": "c2", "k3": "c3"}
	resolved := map[string]string{"c1": "", "c2": "", "c3": ""} // each redirects to its URL
	return results, stored, keys, resolved
}

// failing returns the IDs of e's checks that failed.
func failing(e Entry) []string {
	var out []string
	for _, c := range e.Checks {
		if !c.OK {
			out = append(out, c.ID)
		}
	}
	return out
}

// problems returns e's problems of kind.
func problems(e Entry, kind string) []Problem {
	var out []Problem
	for _, p := range e.Problems {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// figure returns the value of e's figure labelled label.
func figure(t *testing.T, e Entry, label string) string {
	t.Helper()
	for _, f := range e.Figures {
		if f.Label == label {
			return f.Value
		}
	}
	t.Fatalf("no figure %q in %+v", label, e.Figures)
	return ""
}

func TestLedgerClean(t *testing.T) {
	e := checkCreates(ledgerFixture())
	if f := failing(e); len(f) > 0 || len(e.Problems) > 0 {
		t.Fatalf("clean run: checks %v fail, problems %+v", f, e.Problems)
	}
	for label, want := range map[string]string{
		"creates acknowledged (201)":                                    "3",
		"of those, in MySQL under their code and URL":                   "3",
		"lost (acknowledged, no row)":                                   "0",
		"creates that took more than one POST (with their key, if any)": "1",
	} {
		if got := figure(t, e, label); got != want {
			t.Errorf("%s = %s, want %s", label, got, want)
		}
	}
}

// TestLedgerFindsLostCreate: the app answered 201 for k2, but no row has
// its code. No HTTP error was ever seen; only the ledger can tell.
func TestLedgerFindsLostCreate(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	delete(stored, "c2") // c2 never reached MySQL
	delete(keys, "k2")
	resolved["c2"] = "GET: 404 from app1, want 302"
	e := checkCreates(results, stored, keys, resolved)
	lost := problems(e, problemLost)
	if len(lost) != 1 || lost[0].Code != "c2" || lost[0].Key != "k2" {
		t.Fatalf("lost = %+v, want exactly c2 (key k2)", lost)
	}
	if got := figure(t, e, "lost (acknowledged, no row)"); got != "1" {
		t.Errorf("lost figure = %s, want 1", got)
	}
	if f := strings.Join(failing(e), " "); !strings.Contains(f, "creates.lost") || !strings.Contains(f, "creates.unresolved") {
		t.Errorf("failing checks %q, want creates.lost and creates.unresolved", f)
	}
	if u := problems(e, problemUnresolved); len(u) != 1 || !strings.Contains(u[0].Why, "404") {
		t.Errorf("unresolved = %+v, want c2 answering 404", u)
	}
}

// TestLedgerFindsKeyThatMadeTwoLinks: a retry under the same key made a
// second link instead of replaying the first. Each create sends a URL of
// its own, so two rows with one URL are two links from one key.
func TestLedgerFindsKeyThatMadeTwoLinks(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	stored["c3bis"] = "https://x/3"
	e := checkCreates(results, stored, keys, resolved)
	d := problems(e, problemDuplicated)
	if len(d) != 1 || d[0].URL != "https://x/3" || !strings.Contains(d[0].Why, "c3bis") {
		t.Fatalf("duplicated = %+v, want https://x/3 stored as c3 and c3bis", d)
	}
	// The client's own link is still there: a duplicate is not a loss.
	if f := failing(e); len(f) != 1 || f[0] != "creates.duplicated" {
		t.Errorf("failing checks %v, want only creates.duplicated", f)
	}
}

func TestLedgerFindsOtherFaults(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(stored map[string]string, keys map[string]string, resolved map[string]string)
		check string
	}{
		{"code stored with another URL", func(stored map[string]string, _ map[string]string, _ map[string]string) {
			stored["c1"] = "https://x/other"
		}, "creates.mismatched"},
		{"key recorded for another code", func(_ map[string]string, keys map[string]string, _ map[string]string) {
			keys["k1"] = "c9"
		}, "creates.key"},
		{"redirect to the wrong place after the run", func(_ map[string]string, _ map[string]string, resolved map[string]string) {
			resolved["c3"] = `GET: 302 with Location "https://x/1", want "https://x/3"`
		}, "creates.unresolved"},
	}
	for _, tt := range tests {
		results, stored, keys, resolved := ledgerFixture()
		tt.spoil(stored, keys, resolved)
		e := checkCreates(results, stored, keys, resolved)
		if f := failing(e); len(f) != 1 || f[0] != tt.check {
			t.Errorf("%s: failing checks %v, want %s", tt.name, f, tt.check)
		}
	}
}

// TestLedgerCountsUnacknowledgedButStored: a create that timed out (or
// failed) may still have been stored. That is not a loss, but the ledger
// counts it, and a definite failure that was stored (half-written) fails
// its check.
func TestLedgerCountsUnacknowledgedButStored(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	results = append(results, Result{Kind: Create, Outcome: Unknown, Key: "k5", URL: "https://x/5"})
	stored["c5"] = "https://x/5"
	e := checkCreates(results, stored, keys, resolved)
	if got := figure(t, e, "not acknowledged (failed or unknown) yet stored"); got != "1 (0 of them failed, not timed out)" {
		t.Errorf("unacknowledged stored = %q", got)
	}
	if f := failing(e); len(f) > 0 {
		t.Errorf("failing checks %v for a timed-out create that was stored, want none", f)
	}
	stored["c4"] = "https://x/4"
	if f := failing(checkCreates(results, stored, keys, resolved)); len(f) != 1 || f[0] != "creates.half-written" {
		t.Errorf("failing checks %v for a failed create that was stored, want creates.half-written", f)
	}
}

// TestLedgerUnkeyedCreates: a create without an Idempotency-Key has no
// key row to check, and may leave one link per POST (a POST stored but
// unanswered, then its retry), but not more; it is lost like any other.
func TestLedgerUnkeyedCreates(t *testing.T) {
	results, stored, keys, resolved := ledgerFixture()
	u := acked("", "https://x/6", "c6")
	u.Attempts = 2
	results = append(results, u)
	stored["c6"], resolved["c6"] = "https://x/6", ""
	if f := failing(checkCreates(results, stored, keys, resolved)); len(f) > 0 {
		t.Fatalf("an unkeyed create, stored and resolving: failing checks %v, want none", f)
	}
	stored["c6-first"] = "https://x/6" // its first POST, stored unanswered
	if f := failing(checkCreates(results, stored, keys, resolved)); len(f) > 0 {
		t.Errorf("an unkeyed create of 2 POSTs stored twice: failing checks %v, want none", f)
	}
	stored["c6-third"] = "https://x/6"
	if f := failing(checkCreates(results, stored, keys, resolved)); len(f) != 1 || f[0] != "creates.duplicated" {
		t.Errorf("an unkeyed create of 2 POSTs stored three times: failing checks %v, want creates.duplicated", f)
	}
	delete(stored, "c6-third")
	delete(stored, "c6")
	resolved["c6"] = "GET: 404 from app1, want 302"
	if f := strings.Join(failing(checkCreates(results, stored, keys, resolved)), " "); !strings.Contains(f, "creates.lost") {
		t.Errorf("an unkeyed create lost: failing checks %q, want creates.lost", f)
	}
}
