package stack

import (
	"context"
	"errors"
	"time"
)

// FreezeCycle is a gray failure: it freezes every process of procs
// together (SIGSTOP) for frozen, thaws them together (SIGCONT) for
// thawed, and repeats until ctx ends, when it returns the number of
// cycles begun. The servers stay up and answer, only late: a node
// frozen 300 ms of every 400 ms answers within a sentinel's down-after
// (1 s), so the sentinels never fail it over, while every client with a
// deadline below 300 ms sees most of its requests time out.
//
// Whatever happens, FreezeCycle thaws every process before it returns:
// a process left frozen would take the stack down with it. A control
// that fails ends the cycle with its error (the thaw's joined).
func FreezeCycle(ctx context.Context, procs []*Proc, frozen, thawed time.Duration) (cycles int, err error) {
	defer func() { err = errors.Join(err, AtOnce(procs, (*Proc).Cont)) }()
	for ctx.Err() == nil {
		cycles++
		if err := AtOnce(procs, (*Proc).Stop); err != nil {
			return cycles, err
		}
		if !sleep(ctx, frozen) {
			break
		}
		if err := AtOnce(procs, (*Proc).Cont); err != nil {
			return cycles, err
		}
		sleep(ctx, thawed)
	}
	return cycles, nil
}

// sleep waits d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
