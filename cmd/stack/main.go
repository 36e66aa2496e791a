// Command stack runs the shortener's whole topology on 127.0.0.1 — MariaDB
// (with SHORTENER_STACK_MYSQL=galera, a three-node Galera cluster), three
// Redis nodes, three sentinels, two app instances and nginx in front of
// them — and gives people, tests and chaos runs the controls they need:
// up and down, status and the Redis master, and kill, term, stop (freeze),
// cont, restart, partition and heal of any of its processes by name;
// `stack -h` (usage, below) lists them. The state directory (-dir)
// defaults to $SHORTENER_STACK_DIR, else .stack in the repository's root.
// "make up" builds bin/shortener and bin/stack and runs "bin/stack up".
//
// The processes outlive the command: each later invocation finds them
// through the pid files in the state directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"shortener/internal/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		// Errors from package stack already say "stack: ".
		msg := err.Error()
		if !strings.HasPrefix(msg, "stack: ") {
			msg = "stack: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake on the command line; main exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (stack -h for help)" }

const usage = `usage: stack [-dir DIR] [-bin PATH] COMMAND [NAME...]

commands:
  up                start the stack (MariaDB :3307, Redis :6380-6382, sentinels :26380-26382,
                    app1 :8081, app2 :8082, nginx :8080) and wait until it is ready
  down              stop every process of the stack
  status            list the processes, their pids, ports and states, and the Redis master
  master            print the Redis master as the sentinels see it
  kill NAME...      SIGKILL
  term NAME...      SIGTERM and wait until it exits (an app drains first)
  stop NAME...      SIGSTOP (freeze)
  cont NAME...      SIGCONT (thaw)
  restart NAME...   stop if running, start again, wait until ready
  partition NAME... drop the process's port with iptables (needs root): a black hole
  heal NAME...      remove the partition

NAME: mysql redis-1 redis-2 redis-3 sentinel-1 sentinel-2 sentinel-3 app1 app2 nginx
      (with Galera, mysql-1 mysql-2 mysql-3 in place of mysql)

SHORTENER_STACK_MYSQL=galera makes up start MariaDB as a three-node Galera
cluster: mysql-1 :3307, mysql-2 :3308, mysql-3 :3309, their peers' traffic
(group :4567/:4577/:4587, IST :4568/:4578/:4588, SST :4444/:4445/:4446) on
a loopback address of each node's own. Partition cuts a node off from its
peers, its SQL port left reachable; restart rejoins it (IST, else SST).

flags (before or after COMMAND):
`

// options are what up needs; the flags set dir and bin,
// $SHORTENER_STACK_MYSQL galera, tests the rest.
type options struct {
	dir            string // state directory
	bin            string // shortener binary
	galera         bool   // MariaDB as a Galera cluster
	local          bool   // on docs/design.md's ports, not free ones
	killWithParent bool   // tests: the servers die with the test binary
	sys            system // the machine, for installing missing programs
}

// run parses the command line and runs one command.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o := options{local: true}
	switch m := getenv("SHORTENER_STACK_MYSQL"); m {
	case "", "mariadb":
	case "galera":
		o.galera = true
	default:
		return usageError{fmt.Sprintf("SHORTENER_STACK_MYSQL=%q: want galera, or mariadb (the default: one server)", m)}
	}
	o.sys = hostSystem(stdout, stderr, o.galera)
	fs := flag.NewFlagSet("stack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.dir, "dir", stack.DefaultDir(getenv), "state directory: pids, logs, data, api-key, Redis and Sentinel passwords ($SHORTENER_STACK_DIR)")
	fs.StringVar(&o.bin, "bin", defaultBinary(stack.RepoRoot()), "the shortener binary that up runs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError{"no command"}
	}
	cmd := fs.Arg(0)
	// Flags may also follow the command: "stack up -dir /tmp/s".
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return err
	}
	names := fs.Args()

	whole := map[string]func() error{ // the commands that take no names
		"up":     func() error { return up(ctx, o, stdout, stderr) },
		"down":   func() error { return down(o.dir, stdout) },
		"status": func() error { return status(ctx, o.dir, stdout) },
		"master": func() error { return master(ctx, o.dir, stdout) },
	}
	if f, ok := whole[cmd]; ok {
		if len(names) > 0 {
			return usageError{fmt.Sprintf("%s takes no names, got %q", cmd, names)}
		}
		return f()
	}
	if _, ok := controls[cmd]; !ok {
		return usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
	if len(names) == 0 {
		return usageError{cmd + " needs at least one NAME"}
	}
	return control(ctx, o.dir, cmd, names, stdout)
}

// defaultBinary is the shortener built beside this command ("make up" puts
// both in bin/), else bin/shortener in the repository.
func defaultBinary(root string) string {
	if exe, err := os.Executable(); err == nil {
		sibling := filepath.Join(filepath.Dir(exe), "shortener")
		if fi, err := os.Stat(sibling); err == nil && !fi.IsDir() {
			return sibling
		}
	}
	return filepath.Join(root, "bin", "shortener")
}
