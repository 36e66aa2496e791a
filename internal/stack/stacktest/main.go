package stacktest

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// What a test package's tests share lives until they have all run: the
// shared stack (Shared), the app binary (AppBinary). Main ends it.
var (
	inMain atomic.Bool
	endsMu sync.Mutex
	ends   []func() error // run by Main after the tests, last first
)

// Main runs m's tests, then stops what they shared: the stack of Shared,
// the binary of AppBinary. A test package that uses either calls it from
// its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }
//
// A failure to stop is printed and fails the run.
func Main(m *testing.M) int {
	inMain.Store(true)
	code := m.Run()
	endsMu.Lock()
	defer endsMu.Unlock()
	for _, end := range slices.Backward(ends) {
		if err := end(); err != nil {
			fmt.Fprintf(os.Stderr, "stacktest: %v\n", err)
			code = 1
		}
	}
	ends = nil
	return code
}

// atEnd has Main run end once the package's tests are done.
func atEnd(end func() error) {
	endsMu.Lock()
	defer endsMu.Unlock()
	ends = append(ends, end)
}

// requireMain fails the test unless the package's TestMain runs Main,
// which alone stops what the tests share.
func requireMain(tb testing.TB) {
	tb.Helper()
	if !inMain.Load() {
		tb.Fatal("stacktest: this package's TestMain must run stacktest.Main, which stops what its tests share: func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }")
	}
}
