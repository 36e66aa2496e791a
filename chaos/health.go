package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"shortener/stack"
)

// healthPoll is how often WaitHealthy looks again.
const healthPoll = 200 * time.Millisecond

// Heal undoes whatever a scenario may have left broken: it removes
// partitions, thaws frozen processes and restarts those that are down, so
// that the next scenario starts from a whole stack. Each step is a no-op
// for a process that is fine. Sentinels come back before Redis nodes, so a
// restarted node asks them who the master is rather than guessing.
func Heal(ctx context.Context, s *stack.Stack) error {
	var errs []error
	procs := slices.Concat([]*stack.Proc{s.MySQL()}, s.Sentinels(), s.Redis(), s.Apps())
	if n := s.Nginx(); n != nil {
		procs = append(procs, n)
	}
	for _, p := range procs {
		if err := p.Heal(ctx); err != nil {
			errs = append(errs, err)
		}
		if p.Frozen() {
			if err := p.Cont(); err != nil {
				errs = append(errs, err)
			}
		}
		if !p.Running() {
			if err := p.Restart(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("heal stack: %w", err)
	}
	return nil
}

// WaitHealthy polls until the stack is whole: every process running, none
// frozen or partitioned, the sentinels naming a master that reports itself
// master with both other nodes linked to it as replicas, every app ready
// and nginx answering (the target's apps and base URL). It returns the
// last reason it was not, if ctx ends first.
func WaitHealthy(ctx context.Context, s *stack.Stack, t Target, c *http.Client) error {
	if err := stack.Poll(ctx, healthPoll, func(ctx context.Context) error { return healthy(ctx, s, t, c) }); err != nil {
		return fmt.Errorf("wait healthy: %w", err)
	}
	return nil
}

// healthy returns nil when the stack is whole, else the first thing wrong.
func healthy(ctx context.Context, s *stack.Stack, t Target, c *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, p := range s.Procs() {
		switch {
		case !p.Running():
			return fmt.Errorf("%s is down", p.Name)
		case p.Frozen():
			return fmt.Errorf("%s is frozen", p.Name)
		}
		if on, err := p.Partitioned(ctx); err != nil {
			return err
		} else if on {
			return fmt.Errorf("%s is partitioned", p.Name)
		}
	}
	m, err := s.Master(ctx)
	if err != nil {
		return err
	}
	if err := s.Replicated(ctx, m); err != nil {
		return err
	}
	for _, a := range t.Apps {
		if err := want200(ctx, c, a.URL+"/readyz"); err != nil {
			return err
		}
	}
	return want200(ctx, c, t.BaseURL+"/healthz")
}

// want200 GETs url and wants 200.
func want200(ctx context.Context, c *http.Client, url string) error {
	a, err := send(ctx, c, url, "", nil, 2*time.Second) // healthy bounds ctx as well
	if err == nil && a.status != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", strings.TrimPrefix(url, "http://"), a.status)
	}
	return err
}
