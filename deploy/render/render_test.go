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
		// Scripts must be executable where the image copies them.
		mode := os.FileMode(0o644)
		if filepath.Ext(path) == ".sh" {
			mode = 0o755
		}
		file := filepath.FromSlash("../" + path)
		if *update {
			if err := os.WriteFile(file, want, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, mode); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what the shared templates render (%v); run: cd deploy && go test ./render -update", path, err)
		}
		if fi, err := os.Stat(file); err == nil && fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v; run: cd deploy && go test ./render -update", path, fi.Mode().Perm(), mode)
		}
	}
}
