package trending

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// spoolConfig is a Config that validates without servers: New connects
// to Redis lazily, and these tests never run the loop.
func spoolConfig(spool string) Config {
	return Config{
		Redis:     offlineRedis(),
		Node:      "n1",
		Prefix:    KeyPrefix,
		Spool:     spool,
		Tick:      time.Second,
		Refresh:   time.Second,
		Capacity:  10,
		MaxQueued: 1_000,
	}
}

// setAsideCount reads shortener_state_files_set_aside_total{file="trending_spool"}
// from reg, failing if the series is not there.
func setAsideCount(tb testing.TB, reg *prometheus.Registry) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shortener_state_files_set_aside_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "file" && l.GetValue() == "trending_spool" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	tb.Fatal(`shortener_state_files_set_aside_total{file="trending_spool"} is not registered`)
	return 0
}

// batches is q's batches by value, for comparison.
func batches(q *queue) []batch {
	var out []batch
	for _, b := range q.batches {
		out = append(out, *b)
	}
	return out
}

// minute is a Unix minute in December 2026.
const minute = 29_910_000

// validSpool holds a batch of an earlier node name (replayed under it)
// and two of its writer's own, the way save writes them.
var validSpool = `{"node":"n1","last_seq":12,"batches":[` +
	`{"seq":10,"node":"old","counts":[{"c":"a","m":29910000,"n":3}]},` +
	`{"seq":11,"counts":[{"c":"b","m":29910001,"n":2},{"c":"a","m":29910001,"n":1}]},` +
	`{"seq":12,"counts":[{"c":"b","m":29910001,"n":5}]}]}`

// TestNewSpool starts a Ranking on each kind of spool a crash or a power
// loss can leave. A valid one is replayed; one that cannot be read or
// trusted is moved aside, logged and counted, and the Ranking starts with
// an empty queue.
func TestNewSpool(t *testing.T) {
	// In a zone other than UTC, so the set-aside name's UTC is tested.
	now := time.Date(2026, 12, 5, 7, 30, 0, 0, time.FixedZone("CET", 3600))
	const aside = ".corrupt-20261205T063000Z"
	for _, tc := range []struct {
		name  string
		spool func(path string) error // nil: no spool
		want  []batch                 // the queue, if the spool is replayed
		last  int64                   // the queue's last sequence
		bad   bool                    // set aside
	}{
		{name: "missing"},
		{
			name:  "valid",
			spool: writeSpool(validSpool),
			want: []batch{
				{Seq: 10, Node: "old", Sent: true, Counts: map[slot]uint64{{"a", minute}: 3}},
				{Seq: 11, Sent: true, Counts: map[slot]uint64{{"b", minute + 1}: 2, {"a", minute + 1}: 1}},
				{Seq: 12, Sent: true, Counts: map[slot]uint64{{"b", minute + 1}: 5}},
			},
			last: 12,
		},
		{
			// Written under another node name: its own batches keep that
			// name, and its last sequence is not this node's.
			name:  "valid, another node",
			spool: writeSpool(strings.Replace(validSpool, `"node":"n1"`, `"node":"n0"`, 1)),
			want: []batch{
				{Seq: 10, Node: "old", Sent: true, Counts: map[slot]uint64{{"a", minute}: 3}},
				{Seq: 11, Node: "n0", Sent: true, Counts: map[slot]uint64{{"b", minute + 1}: 2, {"a", minute + 1}: 1}},
				{Seq: 12, Node: "n0", Sent: true, Counts: map[slot]uint64{{"b", minute + 1}: 5}},
			},
		},
		{name: "empty", spool: writeSpool(""), bad: true},
		{name: "truncated", spool: writeSpool(validSpool[:len(validSpool)/2]), bad: true},
		{name: "zeros (a power loss before the data reached the disk)", spool: writeSpool(string(make([]byte, 512))), bad: true},
		{name: "garbage", spool: writeSpool("\x8f\x02garbage{]"), bad: true},
		{name: "trailing garbage", spool: writeSpool(validSpool + "}x"), bad: true},
		{name: "negative count", spool: writeSpool(strings.Replace(validSpool, `"n":3`, `"n":-3`, 1)), bad: true},
		{name: "zero count", spool: writeSpool(strings.Replace(validSpool, `"n":3`, `"n":0`, 1)), bad: true},
		{name: "empty code", spool: writeSpool(strings.Replace(validSpool, `"c":"a"`, `"c":""`, 1)), bad: true},
		{name: "minute not positive", spool: writeSpool(strings.Replace(validSpool, `"m":29910000`, `"m":-1`, 1)), bad: true},
		{name: "sequence not positive", spool: writeSpool(strings.Replace(validSpool, `"seq":10`, `"seq":0`, 1)), bad: true},
		{name: "sequences out of order", spool: writeSpool(strings.Replace(validSpool, `"seq":12`, `"seq":11`, 1)), bad: true},
		{name: "sequence above last_seq", spool: writeSpool(strings.Replace(validSpool, `"last_seq":12`, `"last_seq":11`, 1)), bad: true},
		{name: "no node", spool: writeSpool(strings.Replace(validSpool, `"node":"n1"`, `"node":""`, 1)), bad: true},
		{
			// Reading fails with an error other than not-exist (EISDIR):
			// it is set aside all the same.
			name:  "unreadable: a directory in its place",
			spool: func(path string) error { return os.Mkdir(path, 0o755) },
			bad:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trending.spool")
			var before []byte
			if tc.spool != nil {
				if err := tc.spool(path); err != nil {
					t.Fatal(err)
				}
				before, _ = os.ReadFile(path)
			}
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			r, err := New(spoolConfig(path), nil, func() time.Time { return now }, slog.New(slog.NewTextHandler(&logs, nil)), reg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { r.Close() })

			if got := batches(&r.q); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("queue: got %+v, want %+v", got, tc.want)
			}
			if r.q.lastSeq != tc.last {
				t.Errorf("last sequence: got %d, want %d", r.q.lastSeq, tc.last)
			}
			want := 0.0
			if tc.bad {
				want = 1
			}
			if got := setAsideCount(t, reg); got != want {
				t.Errorf("set aside: got %v, want %v", got, want)
			}
			if !tc.bad {
				if strings.Contains(logs.String(), "level=WARN") {
					t.Errorf("a warning for a usable spool:\n%s", logs.String())
				}
				return
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the spool is still in place (%v)", err)
			}
			fi, err := os.Lstat(path + aside)
			if err != nil {
				t.Fatalf("not set aside: %v", err)
			}
			if !fi.IsDir() {
				if got, _ := os.ReadFile(path + aside); !bytes.Equal(got, before) {
					t.Errorf("set aside: got %q, want the spool's %q", got, before)
				}
			}
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "path="+path) || !strings.Contains(l, "err=") {
				t.Errorf("no warning with the path and the error:\n%s", l)
			}
		})
	}
}

func writeSpool(s string) func(path string) error {
	return func(path string) error { return os.WriteFile(path, []byte(s), 0o644) }
}

// TestSpoolSaveLoad saves a queue, over a temporary file a crash left
// behind, and loads it back: the same batches, now all marked sent.
// Saving the emptied queue removes the spool.
func TestSpoolSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clicks", "trending.spool")
	q := queue{chunk: 2}
	for i, c := range []string{"a", "b", "c", "a", "d"} {
		q.add(c, minute+int64(i/2), uint64(i+1), 100)
	}
	q.batches[0].Sent = true
	q.batches[0].Node = "old"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := q.save(path, "n1"); err != nil {
		t.Fatalf("save: %v", err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file is left after save (%v)", err)
	}

	var got queue
	if err := got.load(path, "n1"); err != nil {
		t.Fatalf("load: %v", err)
	}
	want := batches(&q)
	for i := range want {
		want[i].Sent = true
	}
	if !reflect.DeepEqual(batches(&got), want) {
		t.Errorf("loaded: got %+v, want %+v", batches(&got), want)
	}
	if got.lastSeq != q.lastSeq || got.slots != q.slots {
		t.Errorf("loaded: got last sequence %d and %d slots, want %d and %d", got.lastSeq, got.slots, q.lastSeq, q.slots)
	}

	for q.head() != nil {
		q.pop()
	}
	if err := q.save(path, "n1"); err != nil {
		t.Fatalf("save the empty queue: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the spool of an empty queue is still there (%v)", err)
	}
}

// TestNewRemovesLeftoverTemp starts a Ranking beside the temporary file of
// a save a crash cut short: the spool is replayed, the temporary file
// removed, and nothing is set aside.
func TestNewRemovesLeftoverTemp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trending.spool")
	if err := os.WriteFile(path, []byte(validSpool), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", []byte(validSpool[:20]), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r, err := New(spoolConfig(path), nil, time.Now, quietLog(), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer r.Close()
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file is still there (%v)", err)
	}
	if got := len(r.q.batches); got != 3 {
		t.Errorf("replayed batches: got %d, want 3", got)
	}
	if got := setAsideCount(t, reg); got != 0 {
		t.Errorf("set aside: got %v, want 0", got)
	}
}
