package stack

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// A partition drops every TCP packet sent to a server's port on the
// loopback interface, with one iptables rule in the INPUT chain:
//
//	iptables -I INPUT -i lo -p tcp --dport PORT -m comment --comment "shortener-stack DIR NAME" -j DROP
//
// The server keeps running, but new connections hang in SYN-SENT and
// requests on open ones are never delivered: a black hole, which is how a
// network partition or a dead host looks to a client, unlike a SIGKILL (an
// instant refusal) or a SIGSTOP (the kernel still completes handshakes).
//
// The comment names the stack's directory and the process, so Heal and
// Close remove exactly this stack's rules and never another stack's (tests
// run several stacks at once) nor the machine's own.

const (
	iptablesProgram = "iptables"
	// iptablesWait is how long iptables waits for the xtables lock that
	// parallel stacks' calls contend for.
	iptablesWait = "5"
	// iptablesTimeout bounds one iptables call.
	iptablesTimeout = 15 * time.Second
	// commentPrefix starts every rule comment of this package.
	commentPrefix = "shortener-stack "
	// maxComment is what the comment match accepts (255 bytes).
	maxComment = 255
)

// Partition black-holes the server's port with an iptables rule (see the
// comment above), leaving the process running. It needs root. Partitioning
// a partitioned server does nothing; Heal, Restart and Close undo it.
func (p *Proc) Partition(ctx context.Context) error {
	return p.control("partition", "", func() error {
		if on, err := p.partitioned(ctx); err != nil || on {
			return err
		}
		args := append([]string{"-w", iptablesWait, "-I", "INPUT"}, p.dropRule()...)
		if _, err := iptables(ctx, args...); err != nil {
			return err
		}
		p.s.log.Info("partitioned", "proc", p.Name, "port", p.Port)
		return nil
	})
}

// Heal removes the server's partition rules; a server that is not
// partitioned is left alone.
func (p *Proc) Heal(ctx context.Context) error {
	return p.control("heal", "", func() error { return p.heal(ctx) })
}

// Partitioned reports whether a partition rule for the server is in place.
// Without root it reports false without asking iptables: only root can
// have added one, and only root may list the rules.
func (p *Proc) Partitioned(ctx context.Context) (bool, error) {
	on, err := p.partitioned(ctx)
	if err != nil {
		return false, fmt.Errorf("partitioned %s: %w", p.Name, err)
	}
	return on, nil
}

func (p *Proc) partitioned(ctx context.Context) (bool, error) {
	if os.Geteuid() != 0 {
		return false, nil
	}
	rules, err := stackRules(ctx, p.s.dir)
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if r.comment == p.ruleComment() {
			return true, nil
		}
	}
	return false, nil
}

// heal is Heal without the lock. Without root no rule can exist (Partition
// needs root to add one), so it does not ask iptables.
func (p *Proc) heal(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return nil
	}
	n, err := deleteRules(ctx, p.s.dir, func(r rule) bool { return r.comment == p.ruleComment() })
	if n > 0 {
		p.s.log.Info("healed", "proc", p.Name, "port", p.Port)
	}
	return err
}

// healAll removes every partition rule of the stack in dir.
func healAll(ctx context.Context, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if _, err := programPath(iptablesProgram); err != nil {
		return nil // no iptables, no rules
	}
	_, err := deleteRules(ctx, dir, func(rule) bool { return true })
	return err
}

// dropRule is the rule after "-I INPUT" / "-D INPUT".
func (p *Proc) dropRule() []string {
	return []string{"-i", "lo", "-p", "tcp", "--dport", strconv.Itoa(p.Port),
		"-m", "comment", "--comment", p.ruleComment(), "-j", "DROP"}
}

// ruleComment names the stack directory and the process. A directory that
// would make the comment too long, or that holds characters iptables would
// quote differently when it lists the rule, is replaced by its hash.
func (p *Proc) ruleComment() string {
	return stackComment(p.s.dir) + p.Name
}

// stackComment is the prefix of every rule comment of the stack in dir.
func stackComment(dir string) string {
	c := commentPrefix + dir + " "
	if len(c)+32 > maxComment || strings.ContainsAny(dir, "\"\\' \t\n") {
		h := fnv.New64a()
		h.Write([]byte(dir))
		c = fmt.Sprintf("%s#%016x ", commentPrefix, h.Sum64())
	}
	return c
}

// rule is one listed iptables rule of a stack.
type rule struct {
	spec    []string // the arguments after "-A INPUT"
	comment string
}

// stackRules lists the INPUT rules whose comment marks them as the stack's.
func stackRules(ctx context.Context, dir string) ([]rule, error) {
	out, err := iptables(ctx, "-w", iptablesWait, "-S", "INPUT")
	if err != nil {
		return nil, err
	}
	prefix := stackComment(dir)
	var rules []rule
	for line := range strings.Lines(out) {
		words, err := splitRule(strings.TrimSpace(line))
		if err != nil || len(words) < 2 || words[0] != "-A" || words[1] != "INPUT" {
			continue
		}
		for i := 2; i+1 < len(words); i++ {
			if words[i] == "--comment" && strings.HasPrefix(words[i+1], prefix) {
				rules = append(rules, rule{spec: words[2:], comment: words[i+1]})
				break
			}
		}
	}
	return rules, nil
}

// deleteRules deletes the stack's rules that match, as iptables lists
// them, so that a rule is removed exactly however iptables rewrote it
// ("-m tcp" added, say). It returns how many it deleted.
func deleteRules(ctx context.Context, dir string, match func(rule) bool) (int, error) {
	rules, err := stackRules(ctx, dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, r := range rules {
		if !match(r) {
			continue
		}
		args := append([]string{"-w", iptablesWait, "-D", "INPUT"}, r.spec...)
		if _, err := iptables(ctx, args...); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// iptables runs iptables and returns its standard output.
func iptables(ctx context.Context, args ...string) (string, error) {
	prog, err := programPath(iptablesProgram)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, iptablesTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// splitRule splits a line of "iptables -S" into words, honouring the
// double quotes (and backslash escapes within them) that iptables puts
// around a comment with spaces.
func splitRule(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
		case c == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unbalanced quotes in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
