package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// kind is everything the stack knows about one sort of server. Adding a
// server (nginx, the app) means writing one of these and listing it in
// kinds; starting, signalling, pid files and readiness polling are shared.
type kind struct {
	name string
	// program is the executable's base name; it is also how the first word
	// of /proc/<pid>/cmdline must read for a pid file to be trusted.
	program string
	// tools are further executables the kind needs (clients, installers).
	tools []string
	// tier orders start-up and shutdown: Close stops higher tiers first.
	tier int
	// configure writes config files and data before each start. fresh is
	// true when Start sets up a new stack and false on Restart, where state
	// that the server or others rewrote (sentinel configs) must be kept.
	configure func(ctx context.Context, p *Proc, fresh bool) error
	// args returns the command-line arguments after the program.
	args func(p *Proc) []string
	// ready returns nil once p serves; it is polled until it does.
	ready func(ctx context.Context, p *Proc) error
	// setup, if set, runs once p is ready (creating users, say); it must be
	// idempotent because it runs on every start.
	setup func(ctx context.Context, p *Proc) error
}

// kinds lists every kind. It is a function rather than a package variable
// because the kinds' functions reach back into Proc, which would make a
// variable's initialisation cyclic.
func kinds() []kind {
	return []kind{mysqlKind(), redisKind(), sentinelKind()}
}

func lookupKind(name string) (kind, error) {
	for _, k := range kinds() {
		if k.name == name {
			return k, nil
		}
	}
	return kind{}, fmt.Errorf("%w: kind %q", ErrNoStack, name)
}

// matches reports whether argv, read from /proc/<pid>/cmdline, is p's
// server: the program is right and some argument names p's port or a path
// inside p's directory. Servers that set a process title (redis-server shows
// "redis-server 127.0.0.1:6380") still pass, and a pid reused by any other
// program, or by the same program serving another port, does not.
func (k kind) matches(p *Proc, argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	// A process title may pack everything into argv[0].
	words := strings.Fields(strings.Join(argv, " "))
	if len(words) == 0 || strings.TrimSuffix(filepath.Base(words[0]), ":") != k.program {
		return false
	}
	port := strconv.Itoa(p.Port)
	for _, w := range words[1:] {
		if strings.HasSuffix(w, ":"+port) || strings.HasSuffix(w, "="+port) ||
			strings.HasPrefix(w, p.dir()+string(filepath.Separator)) || strings.Contains(w, "="+p.dir()+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// CheckPrograms returns an error wrapping ErrMissingProgram that lists every
// server binary or client the stack needs but cannot find, or nil when all
// are installed.
func CheckPrograms() error {
	var missing []string
	for _, k := range kinds() {
		for _, name := range append([]string{k.program}, k.tools...) {
			if _, err := programPath(name); err != nil {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissingProgram, strings.Join(missing, ", "))
	}
	return nil
}

// programPath finds name on PATH or in the sbin directories, which a
// non-login root shell or CI's environment may leave off PATH.
func programPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrMissingProgram, name)
}

// errNotReady is what a ready check returns while a server is up but not yet
// answering as wanted.
var errNotReady = errors.New("not ready")
