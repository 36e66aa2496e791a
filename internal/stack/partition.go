package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
// A Galera node is partitioned from its peers instead, its SQL port left
// reachable, with two rules on its peer host (Proc.GaleraHost), which its
// group, IST and SST traffic use and nothing else does:
//
//	iptables -I INPUT -i lo -s HOST -m comment --comment "shortener-stack NAME" -j DROP
//	iptables -I INPUT -i lo -d HOST -m comment --comment "shortener-stack NAME" -j DROP
//
// Dropping its group port alone would not do: each pair of nodes shares
// one connection, opened by either side, so the node's own outgoing
// connections would carry on. Cut off, it drops out of the primary
// component and refuses queries (error 1047) until healed, when it
// rejoins by IST.
//
// Partitioned, Heal, Restart and Close look for the rules and delete them
// by the same specification (iptables -C, -D), which iptables matches
// however it lists a rule ("-m tcp" added). The port, or the address
// derived from one, makes it this stack's rule, since no two running
// stacks share a port, and the comment keeps the machine's own rules out
// of reach and tells a reader whose rule it is.

const (
	iptablesProgram = "iptables"
	// iptablesWait is how long iptables waits for the xtables lock that
	// parallel stacks' calls contend for.
	iptablesWait = "5"
	// iptablesTimeout bounds one iptables call.
	iptablesTimeout = 15 * time.Second
)

// Partition black-holes the server's port with an iptables rule, or cuts
// a Galera node off from its peers (see the comment above), leaving the
// process running. It needs root. Partitioning a partitioned server does
// nothing; Heal, Restart and Close undo it.
func (p *Proc) Partition(ctx context.Context) error {
	return p.control("partition", "", func() error {
		added := false
		for _, rule := range p.partitionRules() {
			on, err := p.hasRule(ctx, rule)
			if err == nil && !on {
				err, added = p.iptables(ctx, "-I", rule), true
			}
			if err != nil {
				return err
			}
		}
		if added {
			p.s.log.Info("partitioned", p.logAttrs()...)
		}
		return nil
	})
}

// Heal removes the server's partition rule; a server that is not
// partitioned is left alone.
func (p *Proc) Heal(ctx context.Context) error {
	return p.control("heal", "", func() error { return p.heal(ctx) })
}

// Partitioned reports whether a partition rule for the server is in place
// (for a Galera node, either of its two). Without root, or without
// iptables, it reports false without asking: Partition needs both to add
// a rule.
func (p *Proc) Partitioned(ctx context.Context) (bool, error) {
	on, err := p.partitioned(ctx)
	if err != nil {
		return false, fmt.Errorf("partitioned %s: %w", p.Name, err)
	}
	return on, nil
}

func (p *Proc) partitioned(ctx context.Context) (bool, error) {
	for _, rule := range p.partitionRules() {
		if on, err := p.hasRule(ctx, rule); err != nil || on {
			return on, err
		}
	}
	return false, nil
}

// hasRule reports whether rule is in the INPUT chain; false without root
// or iptables.
func (p *Proc) hasRule(ctx context.Context, rule []string) (bool, error) {
	if _, err := programPath(iptablesProgram); os.Geteuid() != 0 || err != nil {
		return false, nil
	}
	err := p.iptables(ctx, "-C", rule)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 { // "does a matching rule exist in that chain?"
		return false, nil
	}
	return err == nil, err
}

// Deafen drops every packet the server sends to the given client ports
// (its clients' ends of their connections), with one iptables rule each:
//
//	iptables -I INPUT -i lo -p tcp --sport PORT --dport CLIENT -m comment --comment "shortener-stack NAME deafened" -j DROP
//
// The connections stay open and the clients' requests still arrive, but
// nothing comes back: a subscriber on such a connection hears no message
// and notices nothing, as behind a half-dead link. Heal, Restart and
// Close undo it.
func (p *Proc) Deafen(ctx context.Context, clients []int) error {
	return p.control("deafen", "", func() error {
		for _, c := range clients {
			if slices.Contains(p.deaf, c) {
				continue
			}
			if err := p.iptables(ctx, "-I", p.deafRule(c)); err != nil {
				return err
			}
			p.deaf = append(p.deaf, c)
		}
		p.s.log.Info("deafened", "proc", p.Name, "port", p.Port, "clients", clients)
		return nil
	})
}

// Deafened returns the client ports Deafen cut off, until Heal.
func (p *Proc) Deafened() []int {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	return slices.Clone(p.deaf)
}

// deafRule is the match and target of the rule that drops what p sends
// to client.
func (p *Proc) deafRule(client int) []string {
	return []string{"-i", "lo", "-p", "tcp", "--sport", strconv.Itoa(p.Port), "--dport", strconv.Itoa(client),
		"-m", "comment", "--comment", "shortener-stack " + p.Name + " deafened", "-j", "DROP"}
}

// heal is Heal without the lock.
func (p *Proc) heal(ctx context.Context) error {
	healed := false
	for _, c := range p.deaf {
		if on, err := p.hasRule(ctx, p.deafRule(c)); err != nil {
			return err
		} else if on {
			if err := p.iptables(ctx, "-D", p.deafRule(c)); err != nil {
				return err
			}
		}
		healed = true
	}
	p.deaf = nil
	for _, rule := range p.partitionRules() {
		on, err := p.hasRule(ctx, rule)
		if err == nil && on {
			err, healed = p.iptables(ctx, "-D", rule), true
		}
		if err != nil {
			return err
		}
	}
	if healed {
		p.s.log.Info("healed", p.logAttrs()...)
	}
	return nil
}

// logAttrs name p and what a partition cuts off in a log line.
func (p *Proc) logAttrs() []any {
	if host := p.GaleraHost(); host != "" {
		return []any{"proc", p.Name, "peer_host", host}
	}
	return []any{"proc", p.Name, "port", p.Port}
}

// partitionRules are the match and target of p's partition rules in the
// INPUT chain: one on its port, or two on a Galera node's peer host.
func (p *Proc) partitionRules() [][]string {
	tail := []string{"-m", "comment", "--comment", "shortener-stack " + p.Name, "-j", "DROP"}
	if host := p.GaleraHost(); host != "" {
		return [][]string{
			append([]string{"-i", "lo", "-s", host}, tail...),
			append([]string{"-i", "lo", "-d", host}, tail...),
		}
	}
	return [][]string{append([]string{"-i", "lo", "-p", "tcp", "--dport", strconv.Itoa(p.Port)}, tail...)}
}

// iptables inserts (-I), checks (-C) or deletes (-D) one of p's
// partition rules.
func (p *Proc) iptables(ctx context.Context, op string, rule []string) error {
	prog, err := programPath(iptablesProgram)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, iptablesTimeout)
	defer cancel()
	args := append([]string{"-w", iptablesWait, op, "INPUT"}, rule...)
	if out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
