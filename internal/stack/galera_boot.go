package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file starts a Galera cluster as a whole (Start) and keeps each
// node's saved state, grastate.dat: which cluster its data belongs to, up
// to which transaction, and whether it may bootstrap.

// startGalera starts the cluster: a new one is seeded first (seedGalera),
// then StartMySQL starts every node, the most advanced first.
func (s *Stack) startGalera(ctx context.Context) error {
	if !slices.ContainsFunc(s.MySQLNodes(), hasSystemTables) {
		if err := s.seedGalera(ctx); err != nil {
			return fmt.Errorf("seed the Galera cluster: %w", err)
		}
	}
	return s.StartMySQL(ctx)
}

// StartMySQL starts every MariaDB process of the stack that is down and
// returns once it is ready. With Galera and no node running, the node
// with the most advanced data (mostAdvanced) starts first and bootstraps
// the cluster, and the others join it one at a time; it returns once
// all are synced members of one primary component (WaitSynced). A chaos run that
// killed every node brings the cluster back with it: a Restart of each
// would do only in that order. Without a deadline on ctx, it gives up
// after two minutes.
func (s *Stack) StartMySQL(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultStartTimeout)
	defer cancel()
	nodes := s.MySQLNodes()
	down := slices.DeleteFunc(slices.Clone(nodes), (*Proc).Running)
	if len(down) == 0 {
		return nil
	}
	if s.Galera() && len(down) == len(nodes) {
		first, err := mostAdvanced(ctx, nodes)
		if err != nil {
			return err
		}
		if err := first.Restart(ctx); err != nil {
			return err
		}
		down = slices.DeleteFunc(down, func(n *Proc) bool { return n == first })
	}
	// One at a time (a single MariaDB is one): two Galera joiners
	// started together raced, and one saw a non-primary view of itself
	// alone, left and aborted (TestGalera in CI, on the restart after
	// every node was killed).
	for _, n := range down {
		if err := n.Restart(ctx); err != nil {
			return err
		}
	}
	return s.WaitSynced(ctx)
}

// seedGalera makes a new cluster's data with no full state transfer:
// the first node's is installed, bootstrapped once (which gives the
// cluster its UUID), given the database and users, and shut down
// cleanly, which records its position in grastate.dat; then it is
// copied to the other nodes, which thus start from the first node's
// position and join it by IST (of the few transactions since: the
// bootstrap and each join is one). Joining by SST instead takes some
// 25 s a node, one node at a time from a donor, on a two-core machine.
func (s *Stack) seedGalera(ctx context.Context) error {
	nodes := s.MySQLNodes()
	first := nodes[0]
	begin := time.Now()
	if err := first.start(ctx, true); err != nil {
		return err
	}
	if err := first.Term(); err != nil {
		return err
	}
	for _, n := range nodes[1:] {
		if err := copyDataDir(first, n); err != nil {
			return fmt.Errorf("copy %s's data to %s: %w", first.Name, n.Name, err)
		}
	}
	s.log.Info("seeded the Galera nodes' data", "from", first.Name, "took", time.Since(begin).Round(time.Millisecond))
	return nil
}

// copyDataDir gives to a copy of from's data directory, which must be
// shut down cleanly, through a temporary directory and a rename: an
// interrupted copy leaves no half a directory. The copy may not
// bootstrap (from may); the write-set cache is from's own and stays
// behind.
func copyDataDir(from, to *Proc) error {
	if err := os.MkdirAll(to.dir(), 0o755); err != nil {
		return err
	}
	dst := mysqlDataDir(to)
	tmp := dst + ".copy"
	if err := errors.Join(os.RemoveAll(tmp), os.RemoveAll(dst)); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	if err := copyTree(mysqlDataDir(from), tmp, "galera.cache"); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return setSafeToBootstrap(to, false)
}

// mostAdvanced picks, of nodes that are all down, the one to bootstrap
// the cluster from: the one Galera marked safe to bootstrap (the last to
// leave a cluster that shut down in turn), else the one whose data holds
// the most transactions (its position recovered from InnoDB where a
// crash or a simultaneous stop left none in grastate.dat); the first of
// equals. Nodes without a position (no data, or none recoverable) come
// last, as they need SST; if none has one, the first node with data, or
// else the first node, which installs new data.
func mostAdvanced(ctx context.Context, nodes []*Proc) (*Proc, error) {
	states := make([]*grastate, len(nodes))
	err := AtOnce(nodes, func(n *Proc) error {
		gs, err := recoverGrastate(ctx, n)
		if err != nil {
			// Not a candidate: without a position it joins by SST.
			n.s.log.Warn("no recoverable Galera position", "proc", n.Name, "err", err)
			return nil
		}
		states[slices.Index(nodes, n)] = gs
		return nil
	})
	if err != nil {
		return nil, err
	}
	best := -1
	for i, gs := range states {
		switch {
		case gs == nil:
		case gs.SafeToBootstrap:
			return nodes[i], nil
		case best < 0 || gs.Seqno > states[best].Seqno:
			best = i
		}
	}
	if best < 0 {
		best = max(0, slices.IndexFunc(nodes, hasSystemTables))
	}
	return nodes[best], nil
}

// grastate is a node's saved state, grastate.dat.
type grastate struct {
	UUID string
	// Seqno is the last transaction in the data, -1 when the node did not
	// shut down cleanly (or is running).
	Seqno int64
	// SafeToBootstrap is set on the last node to leave a cluster.
	SafeToBootstrap bool
}

func grastateFile(p *Proc) string { return filepath.Join(mysqlDataDir(p), "grastate.dat") }

// readGrastate reads p's grastate.dat; nil, without error, when there is
// none (new or empty data).
func readGrastate(p *Proc) (*grastate, error) {
	b, err := os.ReadFile(grastateFile(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	gs, err := parseGrastate(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", grastateFile(p), err)
	}
	return gs, nil
}

// parseGrastate parses a grastate.dat:
//
//	# GALERA saved state
//	version: 2.1
//	uuid:    b20f62bf-f0b9-11f1-a3f4-7bc993d932d7
//	seqno:   -1
//	safe_to_bootstrap: 0
func parseGrastate(b []byte) (*grastate, error) {
	gs := &grastate{Seqno: -1}
	seen := false
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "uuid":
			gs.UUID, seen = v, true
		case "seqno":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("seqno %q: %w", v, err)
			}
			gs.Seqno = n
		case "safe_to_bootstrap":
			gs.SafeToBootstrap = v == "1"
		}
	}
	if !seen {
		return nil, errors.New("no uuid: not a Galera saved state")
	}
	return gs, nil
}

// setSafeToBootstrap sets the safe_to_bootstrap flag of p's grastate.dat.
func setSafeToBootstrap(p *Proc, safe bool) error {
	gs, err := readGrastate(p)
	if err != nil {
		return err
	}
	if gs == nil {
		return fmt.Errorf("%s: no saved state", grastateFile(p))
	}
	gs.SafeToBootstrap = safe
	return writeGrastate(p, gs)
}

// writeGrastate replaces p's grastate.dat with gs, in Galera's format.
func writeGrastate(p *Proc, gs *grastate) error {
	safe := 0
	if gs.SafeToBootstrap {
		safe = 1
	}
	b := fmt.Appendf(nil, "# GALERA saved state\nversion: 2.1\nuuid:    %s\nseqno:   %d\nsafe_to_bootstrap: %d\n", gs.UUID, gs.Seqno, safe)
	return WriteFileAtomic(grastateFile(p), b, 0o660)
}

// recoveredPosition is how mariadbd --wsrep-recover reports the position.
var recoveredPosition = regexp.MustCompile(`WSREP: Recovered position: ([0-9a-f-]{36}):(-?[0-9]+)`)

// recoverGrastate returns p's saved state (nil for none), its position
// first recovered if a crash left none: mariadbd --wsrep-recover reads
// the last committed transaction from InnoDB and exits, as mysqld_safe
// has it do before it starts a node, and the position is written to
// grastate.dat, where the node's next start finds it, as after a clean
// shutdown. Without it, a node rejoins by SST, not IST. The recovery's
// output goes to p's log.
func recoverGrastate(ctx context.Context, p *Proc) (*grastate, error) {
	gs, err := readGrastate(p)
	if err != nil || gs == nil || gs.Seqno >= 0 {
		return gs, err
	}
	prog, err := programPath("mariadbd")
	if err != nil {
		return nil, err
	}
	// The options file may be missing or stale when Start picks the node
	// to bootstrap.
	if err := WriteFileAtomic(galeraConfFile(p), []byte(galeraConf(p)), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(mysqlTmpDir(p), 0o755); err != nil {
		return nil, err
	}
	args := []string{"--defaults-file=" + galeraConfFile(p), "--wsrep-recover"}
	begin := time.Now()
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	if logf, lerr := os.OpenFile(p.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); lerr == nil {
		fmt.Fprintf(logf, "--- stack %s: %s %s\n%s", time.Now().Format(time.RFC3339Nano), prog, strings.Join(args, " "), out)
		logf.Close()
	}
	m := recoveredPosition.FindSubmatch(out)
	if err != nil || m == nil || string(m[2]) == "-1" {
		return nil, fmt.Errorf("mariadbd --wsrep-recover: %w: no position recovered (%s)", cmp.Or(err, errors.New("exit 0")), p.LogFile())
	}
	gs.UUID = string(m[1])
	gs.Seqno, _ = strconv.ParseInt(string(m[2]), 10, 64)
	if err := writeGrastate(p, gs); err != nil {
		return nil, err
	}
	p.s.log.Info("recovered the Galera position", "proc", p.Name, "position", fmt.Sprintf("%s:%d", gs.UUID, gs.Seqno),
		"took", time.Since(begin).Round(time.Millisecond))
	return gs, nil
}
