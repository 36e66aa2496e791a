package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
)

// TestAppOnAFullVolume drives the stack's controls for the disk-full
// chaos scenario against a real app: a running app's clicks directory is
// not mounted over; RestartWith gives the app a variable for one start;
// the app serves and starts again on a full tmpfs; Close puts the
// directory back on disk.
func TestAppOnAFullVolume(t *testing.T) {
	stacktest.RequireRoot(t)
	s := startFullStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := s.Apps()[0]
	const small = "SHORTENER_CLICKS_SEGMENT_BYTES=65536"

	if err := app.MountClicks(2 << 20); !errors.Is(err, stack.ErrRunning) {
		t.Fatalf("MountClicks of a running app: got %v, want ErrRunning", err)
	}
	if err := app.Term(); err != nil {
		t.Fatal(err)
	}
	if err := app.MountClicks(2 << 20); err != nil {
		t.Fatal(err)
	}
	if err := app.RestartWith(ctx, small); err != nil {
		t.Fatal(err)
	}
	if env := environ(t, app.Pid()); !slices.Contains(env, small) {
		t.Errorf("environment of the app after RestartWith lacks %s", small)
	}
	if _, err := app.FillClicks(); err != nil {
		t.Fatal(err)
	}
	wantReady(t, ctx, app)

	// A plain Restart, on the full volume: the stack's environment, and
	// the app must start all the same (docs/design.md: "starts on a full disk").
	if err := app.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if env := environ(t, app.Pid()); slices.Contains(env, small) {
		t.Errorf("environment of the app after a plain Restart still has %s", small)
	}
	wantReady(t, ctx, app)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if on, err := app.ClicksMounted(); err != nil || on {
		t.Errorf("ClicksMounted after Close: got %v, %v, want false", on, err)
	}
}

// environ returns the environment of the process pid.
func environ(tb testing.TB, pid int) []string {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// wantReady checks that app answers /readyz with 200.
func wantReady(tb testing.TB, ctx context.Context, app *stack.Proc) {
	tb.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+app.Addr()+"/readyz", nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s /readyz: %v", app.Name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Errorf("%s /readyz: got %d, want 200", app.Name, resp.StatusCode)
	}
}
