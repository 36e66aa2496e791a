package main

import "context"

// task is a goroutine run starts and joins before it returns: every
// background loop of the instance is one, so none outlives the resources
// it uses (Redis, MySQL, the journal), which close after it.
type task struct {
	stop context.CancelFunc
	done chan struct{} // closed once f has returned
	err  error         // f's result, once done
}

// goTask runs f in a goroutine with a context of its own that only stop
// ends: a task is stopped in run's shutdown order, not when the signal
// arrives.
func goTask(ctx context.Context, f func(context.Context) error) *task {
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t := &task{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.err = f(tctx)
	}()
	return t
}

// join stops the task and waits for it, returning its error.
func (t *task) join() error {
	t.stop()
	<-t.done
	return t.err
}
