package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"shortener/internal/stack"
)

// system is what ensurePrograms needs from the machine, so that a test can
// play a machine without the servers, without root or without apt-get.
type system struct {
	// programs are what the stack runs and missing those of them that
	// are not installed.
	programs []stack.Program
	missing  func() []stack.Program
	euid     int
	lookPath func(string) (string, error)
	// run runs a command with its output going to the user.
	run func(ctx context.Context, env []string, name string, args ...string) error
}

// hostSystem is the machine this command runs on, for a stack with a
// Galera cluster if galera.
func hostSystem(stdout, stderr io.Writer, galera bool) system {
	programs, missing := stack.Programs(), stack.MissingPrograms
	if galera {
		programs = append(programs, stack.GaleraPrograms()...)
		missing = func() []stack.Program {
			return append(stack.MissingPrograms(), stack.MissingGaleraPrograms()...)
		}
	}
	return system{
		programs: programs,
		missing:  missing,
		euid:     os.Geteuid(),
		lookPath: exec.LookPath,
		run: func(ctx context.Context, env []string, name string, args ...string) error {
			cmd := exec.CommandContext(ctx, name, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stdin = nil // apt-get must never wait for an answer
			cmd.Stdout, cmd.Stderr = stdout, stderr
			return cmd.Run()
		},
	}
}

// ensurePrograms makes sure the stack's programs are installed. Missing
// ones are installed with apt-get when this runs as root and apt-get is
// there; otherwise the error names the exact packages to install. Nothing
// else is ever downloaded.
func ensurePrograms(ctx context.Context, sys system, stdout io.Writer) error {
	miss := sys.missing()
	if len(miss) == 0 {
		return nil
	}
	names := make([]string, len(miss))
	for i, m := range miss {
		names[i] = m.Name
	}
	pkgs := stack.Packages(miss)
	aptGet, aptErr := sys.lookPath("apt-get")
	if sys.euid != 0 || aptErr != nil {
		how := "sudo apt-get install -y " + strings.Join(pkgs, " ")
		if aptErr != nil {
			how = "install the Debian packages " + strings.Join(pkgs, " ") + " (this machine has no apt-get)"
		}
		return fmt.Errorf("%w: %s; %s, then run up again", stack.ErrMissingProgram, strings.Join(names, ", "), how)
	}
	// All of the stack's packages at once, so one apt-get run suffices.
	all := stack.Packages(sys.programs)
	fmt.Fprintf(stdout, "missing %s: installing %s with apt-get\n", strings.Join(names, ", "), strings.Join(all, " "))
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	if err := sys.run(ctx, env, aptGet, "update"); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	args := append([]string{"install", "-y", "--no-install-recommends"}, all...)
	if err := sys.run(ctx, env, aptGet, args...); err != nil {
		return fmt.Errorf("apt-get install: %w", err)
	}
	if still := sys.missing(); len(still) > 0 {
		return fmt.Errorf("%w after apt-get install: %v", stack.ErrMissingProgram, still)
	}
	return nil
}
