package stacktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// app is the shortener binary a test package builds, once.
var app struct {
	once sync.Once
	path string
	err  error
}

// AppBinary builds cmd/shortener on first use, once per test binary, and
// returns its path; tests that need no app do not wait for the build.
// Main removes it after the tests.
func AppBinary(tb testing.TB) string {
	tb.Helper()
	requireMain(tb)
	app.once.Do(func() {
		dir, err := os.MkdirTemp("", "shortener-app-")
		if err != nil {
			app.err = fmt.Errorf("build the app: %w", err)
			return
		}
		atEnd(func() error { return os.RemoveAll(dir) })
		goCmd, err := exec.LookPath("go")
		if err != nil {
			app.err = fmt.Errorf("find the go command to build the app: %w", err)
			return
		}
		app.path = filepath.Join(dir, "shortener")
		if out, err := exec.Command(goCmd, "build", "-o", app.path, "shortener/cmd/shortener").CombinedOutput(); err != nil {
			app.err = fmt.Errorf("go build shortener/cmd/shortener: %w\n%s", err, out)
		}
	})
	if app.err != nil {
		tb.Fatal(app.err)
	}
	return app.path
}
