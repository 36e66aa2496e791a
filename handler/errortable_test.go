package handler

import (
	"maps"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestErrorTable keeps docs/api.md's table of error codes by status
// equal to statusOf.
func TestErrorTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Errors\n")
	if !ok {
		t.Fatal(`docs/api.md has no "## Errors" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (\\d{3}) \\| (.*) \\|$")
	code := regexp.MustCompile("`([a-z_]+)`")
	got := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		status, _ := strconv.Atoi(m[1])
		for _, c := range code.FindAllStringSubmatch(m[2], -1) {
			got[c[1]] = status
		}
	}
	if !maps.Equal(got, statusOf) {
		for c, s := range statusOf {
			if got[c] != s {
				t.Errorf("code %s: docs/api.md says %d, statusOf %d", c, got[c], s)
			}
		}
		for c := range got {
			if _, ok := statusOf[c]; !ok {
				t.Errorf("docs/api.md lists %s, which statusOf does not have", c)
			}
		}
	}
}
