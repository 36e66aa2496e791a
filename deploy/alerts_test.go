package deploy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAlertRuleUnits runs the alert rules' unit tests,
// prometheus/alerts_test.yaml, with `promtool test rules` (Debian's
// prometheus package): series go in, and each alert must fire, or stay
// quiet, at the times and with the labels and annotations the file says.
// TestAlertRules only checks that the rules parse.
func TestAlertRuleUnits(t *testing.T) {
	requireTool(t, "promtool", "prometheus")
	out, err := exec.Command("promtool", "test", "rules", "prometheus/alerts_test.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
