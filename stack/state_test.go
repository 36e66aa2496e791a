package stack

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSocketPath(t *testing.T) {
	short := "/tmp/st"
	if got, want := socketPath(short), filepath.Join(short, "mysql.sock"); got != want {
		t.Errorf("socketPath(%q): got %q, want %q", short, got, want)
	}
	long := "/tmp/" + strings.Repeat("a-very-long-test-directory-name/", 4)
	got := socketPath(long)
	if len(got) > maxSocketPath || strings.HasPrefix(got, long) {
		t.Errorf("socketPath(long): got %q (%d bytes), want a short path outside the dir", got, len(got))
	}
	if again := socketPath(long); again != got {
		t.Errorf("socketPath(long) twice: got %q then %q, want the same", got, again)
	}
	if other := socketPath(long + "x"); other == got {
		t.Errorf("socketPath of two dirs: both %q", got)
	}
}

func TestPickPorts(t *testing.T) {
	got, err := pickPorts([]int{0, 6380, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got[1] != 6380 {
		t.Errorf("configured port: got %d, want 6380", got[1])
	}
	seen := map[int]bool{}
	for _, p := range got {
		if seen[p] {
			t.Errorf("port %d picked twice in %v", p, got)
		}
		seen[p] = true
		if p != 6380 && (p < 15000 || p >= ephemeralLow()) {
			t.Errorf("picked port %d outside %d..%d", p, 15000, ephemeralLow()-1)
		}
	}
}
