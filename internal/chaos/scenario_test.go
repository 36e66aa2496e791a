package chaos

import (
	"slices"
	"testing"
)

// TestScenariosAreWhole: every scenario of the matrix has a name of its
// own, a fault and a heal, and waives or requires only checks that exist.
func TestScenariosAreWhole(t *testing.T) {
	run := &Run{Report: &Report{}, Phases: make([]Window, 4)}
	known := map[string]bool{}
	clicks, _ := checkClicks(nil, nil, nil, nil, nil, nil)
	for _, c := range slices.Concat(commonChecks(run), checkCreates(nil, nil, nil, nil).Checks, clicks.Checks,
		checkDeletes(0, nil, nil, Window{}).Checks, checkEdits(0, nil, nil, Window{}).Checks, trendingEntry(run, nil, nil).Checks) {
		known[c.ID] = true
	}
	seen := map[string]bool{}
	for _, sc := range Scenarios() {
		if sc.Name == "" || seen[sc.Name] || sc.Inject == nil || sc.Heal == nil || sc.Fault == "" || sc.Expect == "" {
			t.Errorf("scenario %q: want a unique name, a fault row, a promise, Inject and Heal", sc.Name)
		}
		seen[sc.Name] = true
		for _, id := range slices.Concat(sc.Waive, sc.Require) {
			if !known[id] {
				t.Errorf("scenario %s waives or requires %q, which no common or ledger check has", sc.Name, id)
			}
		}
		if got, err := ScenarioNamed(sc.Name); err != nil || got.Name != sc.Name {
			t.Errorf("ScenarioNamed(%q) = %q, %v", sc.Name, got.Name, err)
		}
	}
	if _, err := ScenarioNamed("nope"); err == nil {
		t.Error("ScenarioNamed(nope) found one")
	}
}

// TestWaivedChecksDoNotDecide: a waived check and a timing check without
// EnforceTiming are reported but do not fail the row; a failed required
// check does.
func TestWaivedChecksDoNotDecide(t *testing.T) {
	rep := &Report{Checks: []Check{
		{ID: "creates", OK: false, Required: true},
		{ID: "slow", OK: false, Required: true, Timing: true},
	}}
	verdict(rep, Scenario{Waive: []string{"creates"}}, Config{})
	if !rep.Holds || rep.Checks[0].Required || rep.Checks[1].Required {
		t.Errorf("holds %v, checks %+v: want the row to hold with both reported", rep.Holds, rep.Checks)
	}
	// A check reported in general decides the row of a scenario that
	// requires it.
	rep.Checks = []Check{{ID: "trending.quality", OK: false}}
	verdict(rep, Scenario{}, Config{})
	if !rep.Holds {
		t.Error("a failed informational check fails the row, want it reported")
	}
	verdict(rep, Scenario{Require: []string{"trending.quality"}}, Config{})
	if rep.Holds || !rep.Checks[0].Required {
		t.Errorf("holds %v, check %+v: want the required check to fail the row", rep.Holds, rep.Checks[0])
	}
	rep.Checks = append(rep.Checks, Check{ID: "redirects", OK: false, Required: true})
	verdict(rep, Scenario{}, Config{EnforceTiming: true})
	if rep.Holds {
		t.Error("a failed required check holds, want not")
	}
}
