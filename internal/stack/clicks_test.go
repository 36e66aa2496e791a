package stack

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// requireRoot skips a test that mounts unless it runs as root, failing it
// instead under SHORTENER_INTEGRATION=1, as stacktest.RequireRoot does
// for the tests outside this package (which it cannot import from here).
func requireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() == 0 {
		return
	}
	const msg = "test needs root to mount a tmpfs; run `make test` as root, as CI does"
	if os.Getenv("SHORTENER_INTEGRATION") == "1" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// writeFiles writes name -> content under dir.
func writeFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil {
			tb.Fatal(err)
		}
	}
}

// wantFiles checks that dir holds exactly files, name -> content.
func wantFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if len(ents) != len(files) {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		tb.Errorf("%s holds %v, want %d files", dir, names, len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			tb.Errorf("%s/%s: got %q, %v, want %q", dir, name, got, err, want)
		}
	}
}

func TestCopyTreeKeepsHoles(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	// A journal segment: a header, a hole, a record, a hole to its size.
	seg := filepath.Join(from, "1.clicks")
	f, err := os.OpenFile(seg, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{0, 300 << 10} {
		if _, err := f.WriteAt([]byte("clicks"), at); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(f.Truncate(16<<20), f.Close()); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, filepath.Join(from, "sub"), map[string]string{"trending.spool": "{}"})
	writeFiles(t, from, map[string]string{fillerName: "x"})

	if err := copyTree(from, to, fillerName); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(seg)
	b, err := os.ReadFile(filepath.Join(to, "1.clicks"))
	if err != nil || string(a) != string(b) {
		t.Fatalf("copied segment differs (%v)", err)
	}
	fi, err := os.Stat(filepath.Join(to, "1.clicks"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Blocks*512 > 1<<20 {
		t.Errorf("copied segment takes %d bytes on disk, want its holes kept (two pages written of 16 MiB)", st.Blocks*512)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("copied segment mode %v, want 0600", fi.Mode().Perm())
	}
	wantFiles(t, filepath.Join(to, "sub"), map[string]string{"trending.spool": "{}"})
	if _, err := os.Stat(filepath.Join(to, fillerName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the skipped filler was copied (%v)", err)
	}
}

func TestSnapshotAndRestoreClicks(t *testing.T) {
	s := attachEmpty(t)
	app := s.Apps()[0]
	dir := app.ClicksDir()
	old := map[string]string{"LOCK": "", "1.clicks": "one", "trending.spool": "{}"}
	writeFiles(t, dir, old)
	if err := app.SnapshotClicks(); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"1.clicks": "one, more", "2.clicks": "two"})
	if err := app.RestoreClicks(); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, old)
	if err := app.RestoreClicks(); err == nil {
		t.Error("a second RestoreClicks found a snapshot, want it used up")
	}
	if err := s.Redis()[0].SnapshotClicks(); err == nil {
		t.Error("SnapshotClicks of a Redis node: got nil error")
	}
}

func TestFillClicksRefusesADisk(t *testing.T) {
	app := attachEmpty(t).Apps()[0]
	writeFiles(t, app.ClicksDir(), map[string]string{"LOCK": ""})
	if _, err := app.FillClicks(); !errors.Is(err, ErrNotMounted) {
		t.Fatalf("FillClicks on the real disk: got %v, want ErrNotMounted", err)
	}
	if _, err := os.Stat(filepath.Join(app.ClicksDir(), fillerName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FillClicks left a filler on the real disk (%v)", err)
	}
}

func TestMountFillUnmountClicks(t *testing.T) {
	requireRoot(t)
	s := attachEmpty(t)
	app := s.Apps()[0]
	dir := app.ClicksDir()
	files := map[string]string{"LOCK": "", "trending.spool": `{"batches":[]}`}
	writeFiles(t, dir, files)

	if err := app.MountClicks(1 << 20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a failed test must not leave a mount behind
		if on, _ := app.ClicksMounted(); on {
			syscall.Unmount(dir, 0)
		}
	})
	if on, err := app.ClicksMounted(); err != nil || !on {
		t.Fatalf("ClicksMounted after MountClicks: got %v, %v, want true", on, err)
	}
	wantFiles(t, dir, files) // carried onto the tmpfs
	if err := app.MountClicks(1 << 20); err == nil {
		t.Error("a second MountClicks: got nil error")
	}

	n, err := app.FillClicks()
	if err != nil {
		t.Fatal(err)
	}
	if n < 900<<10 {
		t.Errorf("FillClicks took %d bytes of a 1 MiB tmpfs, want nearly all", n)
	}
	err = os.WriteFile(filepath.Join(dir, "1.clicks"), make([]byte, 4096), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a write to the filled tmpfs: got %v, want ENOSPC", err)
	}
	if err := app.FreeClicks(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1.clicks"), []byte("one"), 0o644); err != nil {
		t.Errorf("a write after FreeClicks: %v", err)
	}
	files["1.clicks"] = "one"
	if _, err := app.FillClicks(); err != nil { // left for the unmount to drop
		t.Fatal(err)
	}

	if err := app.UnmountClicks(); err != nil {
		t.Fatal(err)
	}
	if on, err := app.ClicksMounted(); err != nil || on {
		t.Fatalf("ClicksMounted after UnmountClicks: got %v, %v, want false", on, err)
	}
	wantFiles(t, dir, files) // carried back, without the filler
	if err := app.UnmountClicks(); !errors.Is(err, ErrNotMounted) {
		t.Errorf("a second UnmountClicks: got %v, want ErrNotMounted", err)
	}

	// Close puts back a tmpfs an interrupted run left.
	if err := app.MountClicks(1 << 20); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if on, err := app.ClicksMounted(); err != nil || on {
		t.Fatalf("ClicksMounted after Close: got %v, %v, want false", on, err)
	}
	wantFiles(t, dir, files)
}

func TestRestartWithChecksItsEnvironment(t *testing.T) {
	s := attachEmpty(t)
	for _, tc := range []struct {
		proc *Proc
		env  []string
	}{
		{s.Apps()[0], []string{"SHORTENER_CLICKS_SEGMENT_BYTES"}},
		{s.Apps()[0], []string{"=65536"}},
		{s.Redis()[0], []string{"A=b"}},
	} {
		if err := tc.proc.RestartWith(t.Context(), tc.env...); err == nil {
			t.Errorf("RestartWith(%s, %q): got nil error", tc.proc.Name, tc.env)
		}
	}
}

// TestRestartWithEnvironment: RestartWith's variables come after the
// stack's, so they win, and only for that start.
func TestRestartWithEnvironment(t *testing.T) {
	app := attachEmpty(t).Apps()[0]
	app.extraEnv = []string{"SHORTENER_CLICKS_SEGMENT_BYTES=65536"} // as RestartWith sets it while it launches
	env, err := app.environment()
	if err != nil {
		t.Fatal(err)
	}
	if last := env[len(env)-1]; last != "SHORTENER_CLICKS_SEGMENT_BYTES=65536" {
		t.Errorf("environment ends %q, want RestartWith's variable last", last)
	}
	app.extraEnv = nil
	if env, err = app.environment(); err != nil || slices.Contains(env, "SHORTENER_CLICKS_SEGMENT_BYTES=65536") {
		t.Errorf("environment of a plain start: %q, %v, want no RestartWith variable", env, err)
	}
}

// TestCopyTreeSkipsVanishedFiles: a file listed but gone before its copy
// (the app's temporary spool renamed into place meanwhile) is left out,
// as cp -a leaves it out, rather than failing the snapshot.
func TestCopyTreeSkipsVanishedFiles(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	writeFiles(t, from, map[string]string{"trending.spool.tmp": "{}"})
	entries, err := os.ReadDir(from)
	if err != nil || len(entries) != 1 {
		t.Fatalf("listing: %v, %v", entries, err)
	}
	gone := filepath.Join(from, "trending.spool.tmp")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	step := copyEntry(from, to, nil)
	if err := step(gone, entries[0], nil); err != nil {
		t.Errorf("an entry gone after the listing: %v", err)
	}
	if err := step(gone, nil, &fs.PathError{Op: "lstat", Path: gone, Err: fs.ErrNotExist}); err != nil {
		t.Errorf("an entry the walk could not stat: %v", err)
	}
	if err := copySparse(gone, filepath.Join(to, "x"), 0o600); !errors.Is(err, errVanished) {
		t.Errorf("copySparse of a file gone: %v, want errVanished", err)
	}
	if left, _ := os.ReadDir(to); len(left) != 0 {
		t.Errorf("the copy holds %d entries, want none", len(left))
	}
}
