package stack

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The Sentinel settings every deployment of the shortener shares: the
// local stack's defaults, and what deploy/ renders for containers and
// Kubernetes, so that what the chaos runs prove is what ships.
const (
	// DefaultMasterName is the name the sentinels monitor.
	DefaultMasterName = "shortener"
	// DefaultQuorum is how many sentinels must agree the master is down.
	DefaultQuorum = 2
	// DefaultDownAfter is the sentinels' down-after-milliseconds.
	DefaultDownAfter = time.Second
	// DefaultFailoverTimeout is the sentinels' failover-timeout, short so
	// that a second failover may follow the first soon.
	DefaultFailoverTimeout = 3 * time.Second
)

// RedisNode is what one Redis node's configuration depends on.
type RedisNode struct {
	// Bind is the address to listen on: "127.0.0.1" locally, "0.0.0.0" in
	// a container.
	Bind string
	Port int
	// Dir is the node's working directory.
	Dir string
	// ReplicaOf is the master as "host port"; empty for a master.
	ReplicaOf string
	// AnnounceHost is the name the node gives the sentinels and its master
	// (replica-announce-ip) where its own address is not what others
	// reach, as with containers addressed by name; empty for none.
	AnnounceHost string
}

// RedisConf renders a Redis node's configuration: a cache, with no
// persistence, whose replicas sync from memory at once.
func RedisConf(n RedisNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bind %s\nport %d\nprotected-mode no\ndaemonize no\n", n.Bind, n.Port)
	fmt.Fprintf(&b, "dir %s\nlogfile \"\"\n", strconv.Quote(n.Dir))
	// A cache: no persistence, and a replica that (re)joins syncs from
	// memory at once instead of after the default five-second delay.
	b.WriteString("save \"\"\nappendonly no\n")
	b.WriteString("repl-diskless-sync yes\nrepl-diskless-sync-delay 0\nreplica-read-only yes\n")
	if n.AnnounceHost != "" {
		fmt.Fprintf(&b, "replica-announce-ip %s\n", n.AnnounceHost)
	}
	if n.ReplicaOf != "" {
		fmt.Fprintf(&b, "replicaof %s\n", n.ReplicaOf)
	}
	return b.String()
}

// SentinelNode is what one sentinel's configuration depends on.
type SentinelNode struct {
	Bind string
	Port int
	Dir  string
	// MasterName, MasterHost and MasterPort name the master to monitor
	// at first; the sentinel rewrites its file as the master changes.
	MasterName string
	MasterHost string
	MasterPort int
	// Quorum, DownAfter and FailoverTimeout default to the Default values.
	Quorum          int
	DownAfter       time.Duration
	FailoverTimeout time.Duration
	// AnnounceHost, when set, makes the sentinel announce that name and
	// resolve and announce host names (containers addressed by name).
	AnnounceHost string
}

// SentinelConf renders a sentinel's initial configuration.
func SentinelConf(n SentinelNode) string {
	if n.MasterName == "" {
		n.MasterName = DefaultMasterName
	}
	if n.Quorum == 0 {
		n.Quorum = DefaultQuorum
	}
	if n.DownAfter == 0 {
		n.DownAfter = DefaultDownAfter
	}
	if n.FailoverTimeout == 0 {
		n.FailoverTimeout = DefaultFailoverTimeout
	}
	var b strings.Builder
	fmt.Fprintf(&b, "bind %s\nport %d\nprotected-mode no\ndaemonize no\n", n.Bind, n.Port)
	fmt.Fprintf(&b, "dir %s\nlogfile \"\"\n", strconv.Quote(n.Dir))
	if n.AnnounceHost != "" {
		// Before the monitor line: the sentinel resolves its master's name.
		fmt.Fprintf(&b, "sentinel resolve-hostnames yes\nsentinel announce-hostnames yes\nsentinel announce-ip %s\n", n.AnnounceHost)
	}
	name := n.MasterName
	fmt.Fprintf(&b, "sentinel monitor %s %s %d %d\n", name, n.MasterHost, n.MasterPort, n.Quorum)
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", name, n.DownAfter.Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", name, n.FailoverTimeout.Milliseconds())
	fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", name)
	return b.String()
}
