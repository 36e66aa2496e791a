package stack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// ErrNotGalera reports a Galera question about a process that is not a
// node of a Galera cluster.
var ErrNotGalera = errors.New("stack: not a Galera node")

// Galera reports whether the stack's MariaDB is a Galera cluster
// (Config.Galera).
func (s *Stack) Galera() bool { return s.st.Galera }

// MySQLNodes returns the MariaDB processes: the Galera nodes mysql-1,
// mysql-2 and mysql-3 in order, or the single server mysql alone; none
// for a stack without MariaDB.
func (s *Stack) MySQLNodes() []*Proc { return slices.Clone(s.byKind[KindMySQL]) }

// MySQLAddrs returns the SQL "host:port" of every MySQLNodes process, in
// order: what apps get as SHORTENER_MYSQL_NODES on a Galera cluster.
func (s *Stack) MySQLAddrs() []string {
	var addrs []string
	for _, p := range s.byKind[KindMySQL] {
		addrs = append(addrs, p.Addr())
	}
	return addrs
}

// Galera node states, wsrep_local_state.
const (
	GaleraJoining = 1
	GaleraDonor   = 2 // a donor, or desynced
	GaleraJoined  = 3
	GaleraSynced  = 4
)

// GaleraStatus is what a Galera node says of itself and its cluster
// (SHOW STATUS LIKE 'wsrep_%').
type GaleraStatus struct {
	// Ready is wsrep_ready: the node takes queries. A node outside a
	// primary component refuses them with error 1047 (ER_UNKNOWN_COM_ERROR,
	// "WSREP has not yet prepared node for application use").
	Ready bool
	// Connected is wsrep_connected: the node is connected to a group.
	Connected bool
	// State is wsrep_local_state (GaleraJoining … GaleraSynced) and
	// StateComment its name, wsrep_local_state_comment ("Synced",
	// "Joining: receiving State Transfer", "Initialized" outside a
	// primary component, …).
	State        int
	StateComment string
	// ClusterStatus is wsrep_cluster_status: "Primary" in a component
	// with a majority of the last one, "non-Primary" or "Disconnected"
	// otherwise.
	ClusterStatus string
	// ClusterSize is wsrep_cluster_size: the members of the node's
	// component, itself included.
	ClusterSize int
	// LastCommitted is wsrep_last_committed, the cluster-wide sequence
	// number of the last transaction the node committed.
	LastCommitted int64
}

// Primary reports whether the node is in a primary component.
func (g GaleraStatus) Primary() bool { return g.ClusterStatus == "Primary" }

// Synced reports whether the node takes queries as a synced member of a
// primary component.
func (g GaleraStatus) Synced() bool { return g.Ready && g.State == GaleraSynced && g.Primary() }

// String reads "Synced, Primary, cluster size 3", and names a node that
// does not take queries so.
func (g GaleraStatus) String() string {
	s := fmt.Sprintf("%s, %s, cluster size %d", g.StateComment, g.ClusterStatus, g.ClusterSize)
	if !g.Ready {
		s += ", not ready"
	}
	return s
}

// GaleraStatus asks the Galera node p, as root over its socket, how it
// and its cluster stand. A node outside a primary component answers too
// (SHOW STATUS is among the few statements it takes); a frozen one
// makes the call fail when ctx ends, or after a few seconds.
func (s *Stack) GaleraStatus(ctx context.Context, p *Proc) (GaleraStatus, error) {
	var g GaleraStatus
	if !p.galera() {
		return g, fmt.Errorf("galera status of %s: %w", p.Name, ErrNotGalera)
	}
	vars := map[string]string{}
	err := withDB(ctx, rootDSN(p), func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN "+
			"('wsrep_ready', 'wsrep_connected', 'wsrep_local_state', 'wsrep_local_state_comment', "+
			"'wsrep_cluster_status', 'wsrep_cluster_size', 'wsrep_last_committed')")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			vars[k] = v
		}
		return rows.Err()
	})
	if err != nil {
		return g, fmt.Errorf("galera status of %s: %w", p.Name, err)
	}
	g.Ready = vars["wsrep_ready"] == "ON"
	g.Connected = vars["wsrep_connected"] == "ON"
	g.State, _ = strconv.Atoi(vars["wsrep_local_state"])
	g.StateComment = vars["wsrep_local_state_comment"]
	g.ClusterStatus = vars["wsrep_cluster_status"]
	g.ClusterSize, _ = strconv.Atoi(vars["wsrep_cluster_size"])
	g.LastCommitted, _ = strconv.ParseInt(vars["wsrep_last_committed"], 10, 64)
	return g, nil
}

// WaitSynced waits until every node of the Galera cluster is a synced
// member of one primary component of all three: what Start returns
// after, and what a chaos run waits for after it heals or restarts a
// node. On a stack without Galera it returns at once. Without a deadline
// on ctx, it gives up after a minute; its error then says how each node
// last stood.
func (s *Stack) WaitSynced(ctx context.Context) error {
	if !s.Galera() {
		return nil
	}
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	nodes := s.MySQLNodes()
	err := Poll(ctx, readyPoll, func(ctx context.Context) error {
		var errs []error
		for _, p := range nodes {
			g, err := s.GaleraStatus(ctx, p)
			switch {
			case err != nil:
				errs = append(errs, err)
			case !g.Synced() || g.ClusterSize != len(nodes):
				errs = append(errs, fmt.Errorf("%s: %s", p.Name, g))
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("wait for %d synced Galera nodes: %w", len(nodes), err)
	}
	return nil
}
