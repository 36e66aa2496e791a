package stack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A stack with Config.Galera runs MariaDB as a three-node Galera cluster
// instead of one server: mysql-1, mysql-2 and mysql-3, each with its SQL
// port on 127.0.0.1 as the single server has, and its traffic with its
// peers (group communication, incremental and full state transfers) on a
// loopback address of its own, its peer host (galeraHost), which is what
// lets Partition cut a node off from its peers while its SQL port stays
// reachable: Galera binds its outgoing group connections to that address
// too, so two iptables rules, on packets from and to it, cut every link.
//
// A node starts in one of two ways (startNode), decided under a lock of
// the stack so that two restarts at once cannot make two clusters: with
// no other node running it bootstraps a new cluster from its own data
// (--wsrep-new-cluster), and otherwise it joins the running ones, which
// send it what it missed: only the missed transactions from a donor's
// write-set cache (IST) when its data has a known position, or a whole
// copy of a donor's data by mariabackup (SST) when not. A node that was
// killed leaves no position in its grastate.dat ("seqno: -1"), and no
// mysqld_safe runs here to find it, so configureGalera does what that
// script does: mariadbd --wsrep-recover reads it from InnoDB, and it is
// written to grastate.dat, so that a restart after a SIGKILL rejoins by
// IST in seconds instead of by SST (31 s measured).
//
// The server reads every option from the node's my.cnf
// (--defaults-file, galeraConf) rather than the command line, because
// the state-transfer scripts mariadbd runs read their options from that
// file too, and without one they read the system's /etc/mysql.
//
// Start makes a new cluster without any SST (galera_boot.go): node 1's
// data is made once, with the database and users, and copied to the
// other two, which are sent only the few events since (an IST; even so
// the mariabackup scripts take 5-10 s a node, one node at a time, so a
// fresh cluster is ready in 12-20 s, against some 25 s a node by SST).
// A stack started again on its old data, or StartMySQL after every node
// went down, bootstraps from the most advanced node.

// galeraNodes is how many nodes a Galera cluster of the stack has: three,
// the fewest that keep a majority (a primary component) when one fails.
const galeraNodes = 3

// galeraProvider is the Galera library, as Debian's galera-4 installs it.
const galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// galeraClusterName is every stack's wsrep_cluster_name. Clusters of
// parallel stacks never meet: each node lists only its own stack's peers
// in wsrep_cluster_address, at addresses no other stack uses.
const galeraClusterName = "shortener"

// galeraTimeouts are the group communication's timeouts, shorter than
// Galera's defaults (keepalive 1 s, suspect 5 s, inactive 15 s, install
// 7.5 s): a node that stops answering (frozen, cut off) stalls every
// commit in the cluster until the others evict it, so the local stack
// suspects one after PT3S of silence instead of PT5S. A commit behind a
// frozen node took 6.4 s with the defaults, 4.2-4.4 s with these and
// 3.4 s with suspect PT2S (TestGalera, two-core machine). Shorter would
// evict healthy nodes that a busy two-core machine does not schedule for
// a second or two: make test runs packages in parallel, and a node's
// group thread was seen 1.5 s late at start-up.
const galeraTimeouts = "evs.keepalive_period=PT0.5S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"

// galeraCacheSize bounds each node's write-set cache (gcache), which is
// what a rejoining node can be sent by IST: past it, SST, which a node
// thawed after a freeze cannot take while it runs (mariabackup), so it
// exits. Under the chaos load (1,000 requests/s with analytics, whose
// visitor sketches make the click batches' write-sets large) 64M held
// about 20 s of writes and a node frozen for 20 s found its first
// missing write-set gone (chaos run 20261205T165005); 256M holds over a
// minute. The file is allocated whole: 768M for the three nodes.
const galeraCacheSize = "256M"

// GaleraPorts are a Galera node's ports for its peers, listened on at
// its own loopback address (Proc.GaleraHost).
type GaleraPorts struct {
	// Group is group communication's port (gmcast.listen_addr), which
	// the nodes connect to each other on.
	Group int `json:"group"`
	// IST is where the node receives incremental state transfers
	// (ist.recv_addr).
	IST int `json:"ist"`
	// SST is where the node receives full state transfers
	// (wsrep_sst_receive_address).
	SST int `json:"sst"`
}

// galeraName is the process name of the Galera node with index i (0-based).
func galeraName(i int) string { return "mysql-" + strconv.Itoa(i+1) }

// galera reports whether p is a node of a Galera cluster.
func (p *Proc) galera() bool { return p.Kind == KindMySQL && p.s.st.Galera }

// GaleraHost returns the loopback address a Galera node talks to its
// peers on, or "" for any other process. It is 127.2.x.y, x and y the
// high and low bytes of the node's SQL port: no two running stacks share
// a port, so none shares an address, and a partition rule naming it
// touches this node alone.
func (p *Proc) GaleraHost() string {
	if !p.galera() {
		return ""
	}
	return galeraHost(p.Port)
}

func galeraHost(sqlPort int) string {
	return fmt.Sprintf("127.2.%d.%d", sqlPort>>8&0xff, sqlPort&0xff)
}

// peerAddr is the node's address for port on its peer host.
func (p *Proc) peerAddr(port int) string {
	return net.JoinHostPort(p.GaleraHost(), strconv.Itoa(port))
}

// peerPortsFree checks that a Galera node's peer ports are free on its
// peer host, where it will bind them; other processes pass.
func peerPortsFree(ps procState) error {
	if ps.Peer == (GaleraPorts{}) {
		return nil
	}
	host := galeraHost(ps.Port)
	for _, port := range []int{ps.Peer.Group, ps.Peer.IST, ps.Peer.SST} {
		if !portFreeOn(host, port) {
			return fmt.Errorf("%s needs %s:%d: %w", ps.Name, host, port, ErrPortInUse)
		}
	}
	return nil
}

func galeraKind() kind {
	return kind{
		name:    KindMySQL,
		program: "mariadbd",
		// The state transfers run mariabackup, piped through socat.
		tools:     []string{"mariadb-install-db", "mariabackup", "socat", galeraProvider},
		configure: configureGalera,
		args:      galeraArgs,
		ready:     galeraReady,
		setup:     setupGalera,
	}
}

func galeraConfFile(p *Proc) string { return filepath.Join(p.dir(), "my.cnf") }

// galeraConf renders a node's my.cnf: the single server's settings
// (mysqlSettings), Galera's, and the state transfer's.
func galeraConf(p *Proc) string {
	var peers []string
	for _, n := range p.s.MySQLNodes() {
		peers = append(peers, n.peerAddr(n.peer.Group))
	}
	provider := []string{
		"gmcast.listen_addr=tcp://" + p.peerAddr(p.peer.Group),
		"ist.recv_addr=" + p.peerAddr(p.peer.IST),
		"gcache.size=" + galeraCacheSize,
		galeraTimeouts,
		// No gvwstate.dat: a node that restores its last view from it
		// comes back under its old identity, which its peers, having just
		// evicted it, keep out for many seconds (18 s measured after a
		// SIGKILL). The file is for a whole cluster's crash, which Start
		// and StartMySQL recover from anyway (mostAdvanced).
		"pc.recovery=false",
	}
	lines := []string{
		"# Written by package stack (galera.go) at every start of the node.",
		"[mysqld]",
	}
	// The single server's options, as the file spells them; its first,
	// --no-defaults, is this file's --defaults-file instead.
	for _, s := range mysqlArgs(p)[1:] {
		lines = append(lines, strings.TrimPrefix(s, "--"))
	}
	lines = append(lines,
		"wsrep-on=ON",
		"wsrep-provider="+galeraProvider,
		"wsrep-cluster-name="+galeraClusterName,
		"wsrep-node-name="+p.Name,
		"wsrep-node-address="+p.peerAddr(p.peer.Group),
		"wsrep-node-incoming-address="+p.Addr(),
		"wsrep-cluster-address=gcomm://"+strings.Join(peers, ","),
		`wsrep-provider-options="`+strings.Join(provider, ";")+`"`,
		"wsrep-sst-method=mariabackup",
		// root has no password and logs in over the socket (installDB).
		"wsrep-sst-auth=root:",
		"wsrep-sst-receive-address="+p.peerAddr(p.peer.SST),
		// What Galera requires: row-based replication, and
		// auto-increment locks that do not serialise inserts.
		"binlog-format=ROW",
		"innodb-autoinc-lock-mode=2",
		"",
		// The state-transfer scripts log to the server's log, not syslog.
		"[sst]",
		"sst-syslog=-1",
	)
	return strings.Join(lines, "\n") + "\n"
}

// galeraArgs: the options file first, as mariadbd requires, then how
// this start joins the cluster.
func galeraArgs(p *Proc) []string {
	args := []string{"--defaults-file=" + galeraConfFile(p)}
	if p.bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	return args
}

// ErrBehind reports a Galera node that cannot start: no other node runs,
// so it would bootstrap the cluster, but another's data is ahead of its
// own, and the transactions only that one has would be lost.
var ErrBehind = errors.New("stack: another Galera node's data is ahead")

// startNode launches a Galera node: as a joiner when another node of the
// stack runs, else as a new cluster's first node, if its data is the
// most advanced (mostAdvanced; otherwise ErrBehind: Stack.StartMySQL
// starts a stopped cluster in the right order). The choice and a
// bootstrap's whole start happen under the stack's galeraMu, so that of
// nodes started at once one bootstraps and the others, waiting, see it
// running and join it. The caller holds p.ctl.
func (p *Proc) startNode(ctx context.Context, fresh bool) error {
	p.s.galeraMu.Lock()
	nodes := p.s.MySQLNodes()
	if slices.ContainsFunc(nodes, func(n *Proc) bool { return n != p && n.Running() }) {
		p.s.galeraMu.Unlock()
		return p.join(ctx, fresh)
	}
	defer p.s.galeraMu.Unlock()
	first, err := mostAdvanced(ctx, nodes)
	if err != nil {
		return err
	}
	if first != p {
		return fmt.Errorf("no other node runs, so %s would bootstrap the cluster, but %s's data is ahead: %w; start it first (stack up, or Stack.StartMySQL, starts them in order)",
			p.Name, first.Name, ErrBehind)
	}
	p.bootstrap = true
	defer func() { p.bootstrap = false }()
	p.s.log.Info("bootstrapping a Galera cluster", "proc", p.Name)
	return p.launch(ctx, fresh)
}

// joinAttempts bounds how often join launches a joiner that aborted, and
// joinRetryWait is how long it waits before the next launch: longer than
// evs.inactive_timeout (galeraTimeouts), so that the members have
// dropped every trace of the aborted incarnation and whatever view
// change or state transfer it was part of has settled. Launched again at
// once, a joiner aborted the same way three times in a row within 5 s
// (TestGalera in CI, each time right after an IST from the same donor).
const (
	joinAttempts  = 4
	joinRetryWait = 7 * time.Second
)

// join launches p as a joiner of the running cluster, again if it
// aborted during start-up (after joinRetryWait), up to joinAttempts in all, as MariaDB's own
// service unit does (Restart=on-abort). A joiner that the others do not
// take into a primary component in time sees a non-primary view of
// itself alone, leaves and aborts, with its data untouched; on a busy
// two-core machine this happened on one start in many (TestGalera in
// CI, a joiner started right after the bootstrap node was ready). Any
// other failure is returned at once. The caller holds p.ctl.
func (p *Proc) join(ctx context.Context, fresh bool) error {
	for attempt := 1; ; attempt++ {
		err := p.launch(ctx, fresh)
		if err == nil || attempt == joinAttempts || !aborted(err) || ctx.Err() != nil {
			return err
		}
		p.s.log.Warn("the joiner aborted during start-up; starting it again", "proc", p.Name, "attempt", attempt, "in", joinRetryWait, "err", err)
		if !sleep(ctx, joinRetryWait) {
			return err
		}
	}
}

// aborted tells whether err is a server's exit on SIGABRT.
func aborted(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGABRT
}

// configureGalera writes the node's my.cnf and readies its data for this
// start: a bootstrap without data installs it; data whose position was
// lost in a crash gets it back (recoverGrastate), so that it rejoins by
// IST; a bootstrap is marked safe in grastate.dat, which Galera
// otherwise refuses for a node that was not the last to leave. A joiner
// whose position cannot be recovered has its data removed: SST will
// send it a whole copy.
func configureGalera(ctx context.Context, p *Proc, _ bool) error {
	if err := os.MkdirAll(mysqlTmpDir(p), 0o755); err != nil {
		return err
	}
	if err := WriteFileAtomic(galeraConfFile(p), []byte(galeraConf(p)), 0o644); err != nil {
		return err
	}
	if p.bootstrap && !hasSystemTables(p) {
		if err := installDB(ctx, p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(mysqlDataDir(p), 0o700); err != nil {
		return err
	}
	gs, err := recoverGrastate(ctx, p)
	switch {
	case err != nil && p.bootstrap:
		return err
	case err != nil:
		p.s.log.Warn("no position to rejoin from: removing the data for a full state transfer", "proc", p.Name, "err", err)
		return resetDataDir(p)
	case gs != nil && p.bootstrap && !gs.SafeToBootstrap:
		return setSafeToBootstrap(p, true)
	}
	return nil
}

// resetDataDir empties the node's data directory.
func resetDataDir(p *Proc) error {
	if err := os.RemoveAll(mysqlDataDir(p)); err != nil {
		return err
	}
	return os.Mkdir(mysqlDataDir(p), 0o700)
}

// galeraReady is a node's readiness: it takes queries as a synced member
// of a primary component. A joiner becomes so once its state transfer is
// done and it has applied what came meanwhile.
func galeraReady(ctx context.Context, p *Proc) error {
	st, err := p.s.GaleraStatus(ctx, p)
	if err != nil {
		return err
	}
	if !st.Synced() {
		return fmt.Errorf("%s: %s", p.Name, st)
	}
	return nil
}

// setupGalera creates the database and users (setupMySQL) on a bootstrap
// whose data lacks any of them: a joiner has them from the cluster, and
// on a cluster every statement that changes them is a transaction of the
// cluster's, even one that finds them there, which a node started from a
// copy of older data would then have to be sent (a state transfer, some
// 20 s even by IST, its scripts being slow).
func setupGalera(ctx context.Context, p *Proc) error {
	if !p.bootstrap {
		return nil
	}
	var have int
	err := withDB(ctx, rootDSN(p), func(db *sql.DB) error {
		return db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?) + "+
			"(SELECT COUNT(*) FROM mysql.db WHERE Db = ? AND User IN (?, ?) AND Host IN ('127.0.0.1', 'localhost'))",
			p.s.st.Database, p.s.st.Database, appUser, readOnlyUser).Scan(&have)
	})
	if err != nil {
		return fmt.Errorf("look for the database and users: %w", err)
	}
	if have == 1+2*2 { // the database, and each user's grant from both hosts
		return nil
	}
	return setupMySQL(ctx, p)
}
