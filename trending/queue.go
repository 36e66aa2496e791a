package trending

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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

// save writes the queue to path durably, or removes the file when the
// queue is empty. The new spool is written to path.tmp, synced, renamed
// over path, and the directory synced: a process killed or a machine
// losing power at any point leaves either the old spool or the new one,
// whole. Without the syncs a power loss can leave the renamed file empty
// (the rename reached the disk before the data) or bring the old spool
// back; an old spool only replays batches Redis skips as duplicates, but
// the new one's clicks would be lost.
func (q *queue) save(path, node string) error {
	if path == "" || !q.dirty {
		return nil
	}
	if len(q.batches) == 0 {
		if err := os.Remove(path); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove spool: %w", err)
			}
		} else if err := syncDir(filepath.Dir(path)); err != nil {
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
	if err := writeFileSynced(path, data); err != nil {
		return fmt.Errorf("write spool: %w", err)
	}
	q.dirty = false
	return nil
}

// writeFileSynced replaces path with data durably: temporary file, fsync,
// rename, fsync of the directory.
func writeFileSynced(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(tmp) //nolint:errcheck // the write's error is the one to report
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// load reads a spool written by save; a missing file is an empty queue.
// Every loaded batch counts as sent: the crashed instance may have applied
// it, and only its sequence number can tell. A spool that cannot be read,
// decoded or trusted is an error and leaves q untouched; the caller sets
// it aside (setAside) rather than refusing to start.
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
		return fmt.Errorf("decode spool: %w", err)
	}
	if err := f.check(); err != nil {
		return fmt.Errorf("check spool: %w", err)
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

// check refuses a spool that decodes but that save cannot have written,
// and whose replay would go wrong: Redis applies a node's batches only in
// rising sequence order (one out of order would be skipped, its clicks
// lost), the writer's own batches are at or below its last sequence (or a
// new batch could reuse a replayed one's number and be skipped), and
// every count names a code, a minute and at least one click. Negative
// counts already fail to decode into uint64.
func (f *spoolFile) check() error {
	if f.Node == "" {
		return errors.New("no node")
	}
	last := map[string]int64{} // per node, the last sequence seen
	for i, b := range f.Batches {
		owner := cmp.Or(b.Node, f.Node)
		switch {
		case b.Seq <= 0:
			return fmt.Errorf("batch %d: sequence %d is not positive", i, b.Seq)
		case b.Seq <= last[owner]:
			return fmt.Errorf("batch %d: sequence %d of node %q follows %d", i, b.Seq, owner, last[owner])
		case b.Node == "" && b.Seq > f.LastSeq:
			return fmt.Errorf("batch %d: sequence %d is above last_seq %d", i, b.Seq, f.LastSeq)
		}
		last[owner] = b.Seq
		for _, c := range b.Counts {
			if c.Code == "" || c.Minute <= 0 || c.N == 0 {
				return fmt.Errorf("batch %d: count %+v is not a code's clicks in a minute", i, c)
			}
		}
	}
	return nil
}

// removeStaleTemp removes path.tmp, which only a save interrupted before
// its rename leaves behind: it may be cut short, and the spool beside it
// is the last one written whole.
func removeStaleTemp(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// setAside moves a spool load refused to path.corrupt-<UTC time>, where
// an operator can read it and a later start does not trip on it again,
// or removes it if it cannot be moved (os.Remove: a directory in the
// spool's place is only removed if empty). It answers where the file went
// ("" if removed or left in place, the error saying which).
func setAside(path string, now time.Time) (string, error) {
	to := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	err := os.Rename(path, to)
	if err == nil {
		return to, nil
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return "", fmt.Errorf("left in place: %w", errors.Join(err, rerr))
	}
	return "", nil
}
