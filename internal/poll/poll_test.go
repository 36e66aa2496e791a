package poll

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestUntilReturnsWhenTheCheckHolds(t *testing.T) {
	calls := 0
	Until(t, "the third call", func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("check called %d times, want 3", calls)
	}
}

// fakeTB is a test whose deadline is near, recording the failure that
// Until reports instead of failing the real test.
type fakeTB struct {
	testing.TB
	deadline time.Time
	failed   string
}

func (f *fakeTB) Helper()                     {}
func (f *fakeTB) Deadline() (time.Time, bool) { return f.deadline, true }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestUntilNamesWhatItAwaitedAndTheLastError(t *testing.T) {
	f := &fakeTB{deadline: time.Now().Add(margin + 50*time.Millisecond)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		Until(f, "the replica", func() error { n++; return fmt.Errorf("offset %d behind", n) })
		t.Error("Until returned for a check that never holds")
	}()
	<-done
	if !strings.Contains(f.failed, "for the replica; last: offset ") || !strings.Contains(f.failed, " behind") {
		t.Errorf("failure %q, want it to name the replica and the last error", f.failed)
	}
}

// TestSleepsSayWhy: a test that sleeps says why on the line or the line
// above, since a sleep is not how a test waits for a condition (Until
// is): it paces a loop that acts, or lets time pass on purpose. An
// uncommented sleep is most often a wait that Until should be.
func TestSleepsSayWhy(t *testing.T) {
	const sleep = "time." + "Sleep(" // not itself a sleep to find
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root %s: %v", root, err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if !strings.Contains(l, sleep) && !strings.Contains(l, "chromedp."+"Sleep(") {
				continue
			}
			if strings.Contains(l, "//") {
				continue
			}
			if i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "//") {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s:%d sleeps without saying why (a comment on the line or the one above); to wait for a condition, use poll.Until", rel, i+1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
