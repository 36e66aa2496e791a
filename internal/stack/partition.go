package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// A partition drops every TCP packet sent to a server's port on the
// loopback interface, with one iptables rule in the INPUT chain:
//
//	iptables -I INPUT -i lo -p tcp --dport PORT -m comment --comment "shortener-stack NAME" -j DROP
//
// The server keeps running, but new connections hang in SYN-SENT and
// requests on open ones are never delivered: a black hole, which is how a
// network partition or a dead host looks to a client, unlike a SIGKILL (an
// instant refusal) or a SIGSTOP (the kernel still completes handshakes).
//
// Partitioned, Heal, Restart and Close look for the rule and delete it by
// the same specification (iptables -C, -D), which iptables matches however
// it lists the rule ("-m tcp" added). The port makes it this stack's rule,
// since no two running stacks share a port, and the comment keeps the
// machine's own rules out of reach and tells a reader whose rule it is.

const (
	iptablesProgram = "iptables"
	// iptablesWait is how long iptables waits for the xtables lock that
	// parallel stacks' calls contend for.
	iptablesWait = "5"
	// iptablesTimeout bounds one iptables call.
	iptablesTimeout = 15 * time.Second
)

// Partition black-holes the server's port with an iptables rule (see the
// comment above), leaving the process running. It needs root. Partitioning
// a partitioned server does nothing; Heal, Restart and Close undo it.
func (p *Proc) Partition(ctx context.Context) error {
	return p.control("partition", "", func() error {
		if on, err := p.partitioned(ctx); err != nil || on {
			return err
		}
		if err := p.iptables(ctx, "-I"); err != nil {
			return err
		}
		p.s.log.Info("partitioned", "proc", p.Name, "port", p.Port)
		return nil
	})
}

// Heal removes the server's partition rule; a server that is not
// partitioned is left alone.
func (p *Proc) Heal(ctx context.Context) error {
	return p.control("heal", "", func() error { return p.heal(ctx) })
}

// Partitioned reports whether a partition rule for the server is in place.
// Without root, or without iptables, it reports false without asking:
// Partition needs both to add a rule.
func (p *Proc) Partitioned(ctx context.Context) (bool, error) {
	on, err := p.partitioned(ctx)
	if err != nil {
		return false, fmt.Errorf("partitioned %s: %w", p.Name, err)
	}
	return on, nil
}

func (p *Proc) partitioned(ctx context.Context) (bool, error) {
	if _, err := programPath(iptablesProgram); os.Geteuid() != 0 || err != nil {
		return false, nil
	}
	err := p.iptables(ctx, "-C")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 { // "does a matching rule exist in that chain?"
		return false, nil
	}
	return err == nil, err
}

// heal is Heal without the lock.
func (p *Proc) heal(ctx context.Context) error {
	if on, err := p.partitioned(ctx); err != nil || !on {
		return err
	}
	if err := p.iptables(ctx, "-D"); err != nil {
		return err
	}
	p.s.log.Info("healed", "proc", p.Name, "port", p.Port)
	return nil
}

// iptables inserts (-I), checks (-C) or deletes (-D) p's partition rule.
func (p *Proc) iptables(ctx context.Context, op string) error {
	prog, err := programPath(iptablesProgram)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, iptablesTimeout)
	defer cancel()
	args := []string{"-w", iptablesWait, op, "INPUT", "-i", "lo", "-p", "tcp", "--dport", strconv.Itoa(p.Port),
		"-m", "comment", "--comment", "shortener-stack " + p.Name, "-j", "DROP"}
	if out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
