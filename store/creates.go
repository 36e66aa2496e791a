package store

import (
	"context"
	"errors"
	"fmt"
	"shortener"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
)

// Creates that arrive while an instance's create statements are running
// go into MySQL together, as one multi-row INSERT: group commit, done by
// the application. A single-row INSERT costs MariaDB about 130-140 µs of
// CPU (parse, two unique-key checks, commit and its redo-log flush); in
// statements of 4 rows, 47 µs a row, and of 8, 34 µs (8 connections on
// the local stack). The statement is atomic: a taken code or ID anywhere
// in it inserts nothing, and the rows then go in one at a time, each
// getting its own answer (insertLink). At low load nothing waits: a
// create that finds a statement slot free runs at once, alone.

// DefaultCreateStatements is how many create statements an instance runs
// at once by default (Config.CreateStatements). One makes the largest
// statements: in make bench's create row (two instances, 32 clients),
// MariaDB spent 73-83 µs a create with one, 80-124 with two, 135-144
// with four, and 146-175 creating one row per statement.
const DefaultCreateStatements = 1

// maxCreateRows bounds the rows of one create statement; 64 links of at
// most a few KiB each stay far below max_allowed_packet.
const maxCreateRows = 64

// A createReq's states: waiting in the queue, taken into a statement, or
// abandoned by its caller (its context ended first) and never inserted.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// createReq is one Create waiting for its statement.
type createReq struct {
	link  shortener.Link
	state atomic.Int32
	done  chan error // buffered: the statement never waits for the caller
}

// createGroup runs an instance's create statements: at most limit at
// once, each taking every create queued when it starts (up to
// maxCreateRows).
type createGroup struct {
	s     *Store
	limit int

	mu      sync.Mutex
	running int          // statements running
	queue   []*createReq // creates waiting for one

	multi atomic.Uint64 // statements of more than one row run
}

// create inserts l, with the creates that queue beside it.
func (g *createGroup) create(ctx context.Context, l shortener.Link) error {
	r := &createReq{link: l, done: make(chan error, 1)}
	g.mu.Lock()
	if g.running < g.limit {
		g.running++
		g.mu.Unlock()
		r.state.Store(reqTaken)
		g.insert(ctx, []*createReq{r})
		g.next()
		return <-r.done
	}
	g.queue = append(g.queue, r)
	g.mu.Unlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return fmt.Errorf("create link %s: %w: %w", l.Code, shortener.ErrUnavailable, ctx.Err())
		}
		// Taken: its statement is running, bounded by the query
		// timeout; its answer is the truth about the row.
		return <-r.done
	}
}

// next starts a statement for the creates queued, if any are, in a
// goroutine of its own (the caller that ran the last one has its answer
// to give), or frees the slot.
func (g *createGroup) next() {
	g.mu.Lock()
	var batch []*createReq
	n := 0
	for ; n < len(g.queue) && len(batch) < maxCreateRows; n++ {
		if r := g.queue[n]; r.state.CompareAndSwap(reqQueued, reqTaken) {
			batch = append(batch, r)
		}
	}
	if n == len(g.queue) {
		g.queue = nil
	} else {
		g.queue = append([]*createReq(nil), g.queue[n:]...)
	}
	if len(batch) == 0 {
		g.running--
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	go func() {
		g.insert(context.Background(), batch)
		g.next()
	}()
}

// insert runs one statement for batch and answers each of its creates.
// The statement serves every create in it, so it runs under the query
// timeout alone, whatever becomes of the context of the one that started
// it (whose values it keeps).
func (g *createGroup) insert(ctx context.Context, batch []*createReq) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.s.timeout)
	defer cancel()
	if len(batch) == 1 {
		batch[0].done <- insertLink(ctx, g.s.db, batch[0].link)
		return
	}
	args := make([]any, 0, 10*len(batch))
	for _, r := range batch {
		args = append(args, linkRow(r.link)...)
	}
	g.multi.Add(1)
	var err error
	for try := 1; ; try++ {
		_, err = insertValues(ctx, g.s.db, "INSERT INTO links ("+insertColumns+") VALUES ", insertRow, "", args)
		if !g.s.again(ctx, err, try) {
			break
		}
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 { // ER_DUP_ENTRY: nothing went in
		for _, r := range batch {
			r.done <- insertLink(ctx, g.s.db, r.link)
		}
		return
	}
	for _, r := range batch {
		if err != nil {
			r.done <- fmt.Errorf("create link %s: %w: %w", r.link.Code, shortener.ErrUnavailable, err)
		} else {
			r.done <- nil
		}
	}
}
