package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kind is everything the stack knows about one sort of server. Adding a
// server (nginx, the app) means writing one of these and listing it in
// kinds; starting, signalling, pid files and readiness polling are shared.
type kind struct {
	name string
	// program is the executable's base name; it is also how the first word
	// of /proc/<pid>/cmdline must read for a pid file to be trusted. It is
	// empty for the app, whose binary the caller builds and names (path).
	program string
	// path, if set, returns the executable to run instead of looking
	// program up on PATH.
	path func(p *Proc) string
	// tools are further executables the kind needs (clients, installers).
	tools []string
	// grace is how long a SIGTERM may take before SIGKILL follows; zero
	// means termGrace.
	grace time.Duration
	// env, if set, returns the server's whole environment; otherwise it
	// inherits this process's.
	env func(p *Proc) ([]string, error)
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

// kinds lists every kind, each after those it depends on; Close stops
// them in reverse. It is a function rather than a package variable
// because the kinds' functions reach back into Proc, which would make a
// variable's initialisation cyclic.
func kinds() []kind {
	return []kind{mysqlKind(), redisKind(), sentinelKind(), appKind(), nginxKind()}
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
	if len(words) == 0 || strings.TrimSuffix(filepath.Base(words[0]), ":") != k.programName(p) {
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

// programName is the base name p's executable runs under.
func (k kind) programName(p *Proc) string {
	if k.path != nil {
		return filepath.Base(k.path(p))
	}
	return k.program
}

// executable returns the path of the program to run for p.
func (k kind) executable(p *Proc) (string, error) {
	if k.path == nil {
		return programPath(k.program)
	}
	path := k.path(p)
	if !isExecutable(path) {
		return "", fmt.Errorf("%w: %s is missing or not an executable file", ErrMissingProgram, path)
	}
	return path, nil
}

// isExecutable reports whether path is an executable file.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Program is an executable the stack runs, with the Debian package that
// ships it, so that a missing one can be named and installed. A Name
// that is an absolute path is a file that must exist, such as the Galera
// library MariaDB loads.
type Program struct {
	Name    string // e.g. "mariadbd"
	Package string // e.g. "mariadb-server"
}

// debianPackages maps every installed program the stack runs to its
// Debian package. iptables is not a server; Partition runs it.
var debianPackages = map[string]string{
	"mariadbd":           "mariadb-server",
	"mariadb-install-db": "mariadb-server",
	"redis-server":       "redis-server",
	"redis-sentinel":     "redis-sentinel",
	"nginx":              "nginx",
	iptablesProgram:      "iptables",
	// A Galera cluster's (galera.go): the provider library, and the
	// state transfer's backup tool and its pipe.
	galeraProvider: "galera-4",
	"mariabackup":  "mariadb-backup",
	"socat":        "socat",
}

// Programs lists every installed program the stack may run: the servers,
// their tools, and iptables for Partition. The shortener binary is not
// among them; the caller builds it.
func Programs() []Program {
	return append(programs(kinds()...), Program{iptablesProgram, debianPackages[iptablesProgram]})
}

// programs lists the installed programs the kinds run.
func programs(ks ...kind) []Program {
	var out []Program
	for _, k := range ks {
		for _, name := range append([]string{k.program}, k.tools...) {
			if name != "" { // the app's, which the caller builds
				out = append(out, Program{name, debianPackages[name]})
			}
		}
	}
	return out
}

// GaleraPrograms lists what a stack with Config.Galera needs besides
// Programs: the Galera library and the state transfer's programs. They
// are apart because the default stack runs without them.
func GaleraPrograms() []Program {
	return slices.DeleteFunc(programs(galeraKind()), func(g Program) bool {
		return slices.Contains(programs(mysqlKind()), g)
	})
}

// MissingPrograms returns the programs of Programs that are not installed.
func MissingPrograms() []Program {
	return missing(Programs())
}

// MissingGaleraPrograms returns the programs of GaleraPrograms that are
// not installed.
func MissingGaleraPrograms() []Program {
	return missing(GaleraPrograms())
}

func missing(progs []Program) []Program {
	var out []Program
	for _, prog := range progs {
		if _, err := programPath(prog.Name); err != nil {
			out = append(out, prog)
		}
	}
	return out
}

// MissingError describes missing programs and the Debian packages that
// ship them, wrapping ErrMissingProgram, or returns nil for none.
func MissingError(miss []Program) error {
	if len(miss) == 0 {
		return nil
	}
	names := make([]string, len(miss))
	for i, m := range miss {
		names[i] = m.Name
	}
	return fmt.Errorf("%w: %s (apt-get install %s)", ErrMissingProgram,
		strings.Join(names, ", "), strings.Join(Packages(miss), " "))
}

// Packages returns the distinct Debian packages that ship progs, in order.
func Packages(progs []Program) []string {
	var out []string
	seen := map[string]bool{}
	for _, prog := range progs {
		if !seen[prog.Package] {
			seen[prog.Package] = true
			out = append(out, prog.Package)
		}
	}
	return out
}

// programPath finds name on PATH or in the sbin directories, which a
// non-login root shell or CI's environment may leave off PATH; an
// absolute name (a library) needs only to exist.
func programPath(name string) (string, error) {
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%w: %s", ErrMissingProgram, name)
		}
		return name, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrMissingProgram, name)
}
