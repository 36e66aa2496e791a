package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSentinelScript runs the notification script against a fake
// redis-cli: on -failover-abort-no-good-slave it asks the other sentinels
// for SENTINEL FAILOVER until one grants it, and it does nothing on any
// other event.
func TestSentinelScript(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	// The fake answers SENTINEL SENTINELS with two sentinels (as
	// redis-cli --raw prints the key/value pairs) and SENTINEL FAILOVER
	// with NOGOODSLAVE on port 26381, OK elsewhere.
	fake := `#!/bin/sh
echo "$*" >>` + calls + `
case "$*" in
*"sentinel sentinels"*) printf 'name\nabc\nip\n127.0.0.1\nport\n26381\nrunid\nabc\nname\ndef\nip\n10.0.0.3\nport\n26382\n' ;;
*"-p 26381 --raw sentinel failover"*) echo "NOGOODSLAVE No suitable replica to promote" ;;
*"sentinel failover"*) echo OK ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "redis-cli"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "notify.sh")
	if err := os.WriteFile(script, []byte(SentinelScript(26380)), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		os.Remove(calls)
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v\n%s", script, args, err, out)
		}
		b, _ := os.ReadFile(calls)
		return string(b)
	}

	got := run("-failover-abort-no-good-slave", "master shortener 127.0.0.1 6381")
	want := "-p 26380 --raw sentinel sentinels shortener\n" +
		"-h 127.0.0.1 -p 26381 --raw sentinel failover shortener\n" +
		"-h 10.0.0.3 -p 26382 --raw sentinel failover shortener\n"
	if got != want {
		t.Errorf("after an aborted failover, redis-cli was called with\n%s\nwant\n%s", got, want)
	}
	for _, ev := range [][]string{{"+sdown", "master shortener 127.0.0.1 6381"}, {"-failover-abort-not-elected", "master shortener 127.0.0.1 6381"}} {
		if got := run(ev...); strings.TrimSpace(got) != "" {
			t.Errorf("on %s, redis-cli was called: %s", ev[0], got)
		}
	}
}
