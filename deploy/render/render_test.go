package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated files")

// TestGeneratedFiles checks that the nginx, Redis and Sentinel configs in
// deploy/ are what the shared renderers make today; -update rewrites them.
func TestGeneratedFiles(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		if *update {
			if err := os.WriteFile(filepath.FromSlash("../"+path), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(filepath.FromSlash("../" + path))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what the shared templates render (%v); run: cd deploy && go test ./render -update", path, err)
		}
	}
}
