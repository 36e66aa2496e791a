package chaos

import "testing"

// TestScenariosAreWhole: every scenario of the matrix has a name of its
// own, a fault and a heal, and waives only checks that exist.
func TestScenariosAreWhole(t *testing.T) {
	run := &Run{Report: &Report{}}
	known := map[string]bool{}
	for _, c := range commonChecks(run) {
		known[c.ID] = true
	}
	for _, c := range checkCreates(nil, nil, nil, nil).Checks {
		known[c.ID] = true
	}
	seen := map[string]bool{}
	for _, sc := range Scenarios() {
		if sc.Name == "" || seen[sc.Name] || sc.Inject == nil || sc.Heal == nil || sc.Fault == "" || sc.Expect == "" {
			t.Errorf("scenario %q: want a unique name, a fault row, a promise, Inject and Heal", sc.Name)
		}
		seen[sc.Name] = true
		for _, id := range sc.Waive {
			if !known[id] {
				t.Errorf("scenario %s waives %q, which no common or ledger check has", sc.Name, id)
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
	rep.Checks = append(rep.Checks, Check{ID: "redirects", OK: false, Required: true})
	verdict(rep, Scenario{}, Config{EnforceTiming: true})
	if rep.Holds {
		t.Error("a failed required check holds, want not")
	}
}
