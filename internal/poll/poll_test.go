package poll

import (
	"fmt"
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
