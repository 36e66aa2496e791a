package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"shortener/internal/stack"
)

// heal undoes whatever a scenario may have left broken, so that the next
// scenario starts from a whole stack, and polls until the stack is whole
// (see healthy); it returns the last reason it was not if HealTimeout
// passes first. It removes partitions, thaws frozen processes, puts an
// app's clicks directory back on disk (stopping the app, which drains)
// and restarts those that are down; each step is a no-op for a process
// that is fine. Sentinels come back before Redis nodes, so a restarted node
// asks them who the master is rather than guessing.
func (r *Runner) heal(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.HealTimeout)
	defer cancel()
	var errs []error // errors.Join drops the nils
	procs := slices.Concat(r.s.MySQLNodes(), r.s.Sentinels(), r.s.Redis(), r.s.Apps())
	if n := r.s.Nginx(); n != nil {
		procs = append(procs, n)
	}
	for _, p := range procs {
		errs = append(errs, p.Heal(ctx))
		if p.Frozen() {
			errs = append(errs, p.Cont())
		}
		if on, err := p.ClicksMounted(); err != nil {
			errs = append(errs, err)
		} else if on {
			if err := p.Term(); err != nil && !errors.Is(err, stack.ErrNotRunning) {
				errs = append(errs, err)
			}
			errs = append(errs, p.UnmountClicks())
		}
		if !p.Running() {
			errs = append(errs, p.Restart(ctx))
		}
	}
	err := stack.Poll(ctx, 200*time.Millisecond, func(ctx context.Context) error { return healthy(ctx, r.s, r.t, r.probe) })
	if err == nil {
		return nil // whatever step failed, the stack is whole
	}
	return fmt.Errorf("heal stack: %w", errors.Join(append(errs, fmt.Errorf("wait healthy: %w", err))...))
}

// healthy returns nil when the stack is whole, else the first thing wrong:
// whole is every process running, none frozen or partitioned, no app's
// clicks directory on a tmpfs (a disk-full run's), the
// Galera nodes synced members of one component of all of them, the
// sentinels naming a master that reports itself master with both other
// nodes linked to it as replicas, every app ready and nginx answering
// (the target's apps and base URL).
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
		if on, err := p.ClicksMounted(); err != nil {
			return err
		} else if on {
			return fmt.Errorf("%s's clicks directory is on a tmpfs", p.Name)
		}
	}
	for _, p := range s.MySQLNodes() {
		if !s.Galera() {
			break
		}
		g, err := s.GaleraStatus(ctx, p)
		switch {
		case err != nil:
			return err
		case !g.Synced() || g.ClusterSize != len(s.MySQLNodes()):
			return fmt.Errorf("%s is not a synced member of the whole cluster: %s", p.Name, g)
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
	a, err := send(ctx, c, http.MethodGet, url, "", nil, 2*time.Second) // healthy bounds ctx as well
	if err == nil && a.status != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", strings.TrimPrefix(url, "http://"), a.status)
	}
	return err
}
