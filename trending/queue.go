package trending

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// slot is a link's clicks in one minute: the unit a batch carries, from
// which the batch derives every bucket it increments.
type slot struct {
	Code   string
	Minute int64 // Unix minutes
}

// batch is a group of clicks sent to Redis in one atomic script under a
// sequence number. Redis keeps each node's highest applied sequence and
// ignores a batch at or below it, so a batch sent twice (a lost reply, a
// replay after a crash) counts once. Batches are applied in sequence order.
type batch struct {
	Seq int64
	// Node is the node whose sequence Seq belongs to: empty for this
	// instance's own batches; a spool replayed under another node name
	// (an automatic node ID that changed across the restart) keeps the
	// name it was written under, so its batches are still judged against
	// the right mark.
	Node string
	// Sent is set before the first attempt: from then on the batch may
	// have been applied, and new clicks go to a new batch rather than
	// into this one (they would be skipped with it).
	Sent   bool
	Counts map[slot]uint64
}

// queue holds the batches not yet known to be in Redis, oldest first, and
// is the whole of the merge-back: while the breaker is open, clicks keep
// joining the last batch (up to chunk slots each), and once Redis is back
// the batches are applied one by one, each exactly once.
type queue struct {
	batches []*batch
	slots   int   // slots held in all batches
	lastSeq int64 // highest sequence handed out
	chunk   int   // slots per batch: one script stays well under a deadline
	dirty   bool  // changed since the spool was written
}

// add counts n clicks of code in minute m; seq supplies a new batch's
// sequence number (above every earlier one).
func (q *queue) add(code string, m int64, n uint64, seq int64) {
	var b *batch
	if k := len(q.batches); k > 0 && !q.batches[k-1].Sent {
		b = q.batches[k-1]
		if _, ok := b.Counts[slot{code, m}]; !ok && len(b.Counts) >= q.chunk {
			b = nil
		}
	}
	if b == nil {
		q.lastSeq = max(q.lastSeq+1, seq)
		b = &batch{Seq: q.lastSeq, Counts: map[slot]uint64{}}
		q.batches = append(q.batches, b)
	}
	s := slot{code, m}
	if _, ok := b.Counts[s]; !ok {
		q.slots++
	}
	b.Counts[s] += n
	q.dirty = true
}

// head is the oldest batch, nil when the queue is empty.
func (q *queue) head() *batch {
	if len(q.batches) == 0 {
		return nil
	}
	return q.batches[0]
}

// pop drops the oldest batch once it is in Redis.
func (q *queue) pop() {
	q.slots -= len(q.batches[0].Counts)
	q.batches[0] = nil
	q.batches = q.batches[1:]
	q.dirty = true
}

// spoolFile is the spool's format: the queue as it stood, so a restarted
// instance replays exactly what the crashed one had not yet seen applied.
type spoolFile struct {
	Node    string       `json:"node"`
	LastSeq int64        `json:"last_seq"`
	Batches []spoolBatch `json:"batches"`
}

type spoolBatch struct {
	Seq    int64        `json:"seq"`
	Node   string       `json:"node,omitempty"`
	Counts []spoolCount `json:"counts"`
}

type spoolCount struct {
	Code   string `json:"c"`
	Minute int64  `json:"m"`
	N      uint64 `json:"n"`
}

// save writes the queue to path atomically (a temporary file renamed over
// it), or removes the file when the queue is empty. A process killed at
// any point leaves either the old spool or the new one.
func (q *queue) save(path, node string) error {
	if path == "" || !q.dirty {
		return nil
	}
	if len(q.batches) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove spool: %w", err)
		}
		q.dirty = false
		return nil
	}
	f := spoolFile{Node: node, LastSeq: q.lastSeq}
	for _, b := range q.batches {
		sb := spoolBatch{Seq: b.Seq, Node: b.Node, Counts: make([]spoolCount, 0, len(b.Counts))}
		for s, n := range b.Counts {
			sb.Counts = append(sb.Counts, spoolCount{s.Code, s.Minute, n})
		}
		f.Batches = append(f.Batches, sb)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode spool: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write spool: %w", err)
	}
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write spool: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write spool: %w", err)
	}
	q.dirty = false
	return nil
}

// load reads a spool written by save; a missing file is an empty queue.
// Every loaded batch counts as sent: the crashed instance may have applied
// it, and only its sequence number can tell.
func (q *queue) load(path, node string) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read spool: %w", err)
	}
	var f spoolFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("decode spool %s: %w", path, err)
	}
	if f.Node == node {
		q.lastSeq = max(q.lastSeq, f.LastSeq)
	}
	for _, sb := range f.Batches {
		owner := sb.Node
		if owner == "" && f.Node != node {
			owner = f.Node
		}
		b := &batch{Seq: sb.Seq, Node: owner, Sent: true, Counts: make(map[slot]uint64, len(sb.Counts))}
		for _, c := range sb.Counts {
			b.Counts[slot{c.Code, c.Minute}] += c.N
		}
		q.slots += len(b.Counts)
		q.batches = append(q.batches, b)
	}
	return nil
}
