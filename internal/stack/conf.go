package stack

import (
	"cmp"
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
	// Password is the node's requirepass and masterauth (every node's is
	// the same, as any may become the master); empty renders neither.
	// deploy/ renders without one, so that no secret is in its files,
	// and its image's entrypoint appends both from the environment.
	Password string
}

// RedisConf renders a Redis node's configuration: a cache, with no
// persistence, whose replicas sync from memory at once. protected-mode
// is off because the nodes are reached from other addresses in
// containers; with a password it would not act anyway.
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
	if n.Password != "" {
		fmt.Fprintf(&b, "requirepass %s\nmasterauth %s\n", confQuote(n.Password), confQuote(n.Password))
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
	// Script is the path of the sentinel's notification script, the
	// file SentinelScript renders; empty for none.
	Script string
	// Password is the sentinel's requirepass, which it also uses with the
	// other sentinels (so all share it), and RedisPassword the Redis
	// nodes' (its auth-pass). Empty renders no auth lines; as with
	// RedisNode.Password, deploy/ renders without and its image's
	// entrypoint appends them.
	Password      string
	RedisPassword string
}

// SentinelConf renders a sentinel's initial configuration, its auth lines
// (sentinelAuth) last.
func SentinelConf(n SentinelNode) string {
	n.MasterName = cmp.Or(n.MasterName, DefaultMasterName)
	n.Quorum = cmp.Or(n.Quorum, DefaultQuorum)
	n.DownAfter = cmp.Or(n.DownAfter, DefaultDownAfter)
	n.FailoverTimeout = cmp.Or(n.FailoverTimeout, DefaultFailoverTimeout)
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
	if n.Script != "" {
		fmt.Fprintf(&b, "sentinel notification-script %s %s\n", name, n.Script)
	}
	return b.String() + sentinelAuth(n)
}

// sentinelAuth renders a sentinel's auth lines: requirepass and
// auth-pass, each only with its password.
func sentinelAuth(n SentinelNode) string {
	var b strings.Builder
	if n.Password != "" {
		fmt.Fprintf(&b, "requirepass %s\n", confQuote(n.Password))
	}
	if n.RedisPassword != "" {
		fmt.Fprintf(&b, "sentinel auth-pass %s %s\n", cmp.Or(n.MasterName, DefaultMasterName), confQuote(n.RedisPassword))
	}
	return b.String()
}

// withSentinelAuth returns conf, a sentinel's config as the sentinel last
// rewrote it, with its auth lines replaced by n's (sentinelAuth), for the
// sentinel's next start. The file must be kept across starts (it holds
// the sentinel's ID, epochs and the nodes it knows), but the sentinel
// rewrites its passwords in it: requirepass also as "user default on
// #<sha256>", which a later requirepass would not override, and auth-pass
// unquoted, which a password with a space or a quote breaks. So the
// rewritten lines go and the current ones are appended, on every start;
// deploy/redis/entrypoint.sh does the same with sed.
func withSentinelAuth(conf string, n SentinelNode) string {
	name := cmp.Or(n.MasterName, DefaultMasterName)
	var b strings.Builder
	for line := range strings.Lines(conf) {
		w := strings.Fields(line)
		switch {
		case len(w) >= 1 && strings.EqualFold(w[0], "requirepass"),
			len(w) >= 2 && strings.EqualFold(w[0], "user") && w[1] == "default",
			len(w) >= 3 && strings.EqualFold(w[0], "sentinel") && strings.EqualFold(w[1], "auth-pass") && w[2] == name:
			continue
		}
		b.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String() + sentinelAuth(n)
}

// confQuote quotes s as a Redis config argument: in double quotes, in
// which Redis unescapes \\, \" and \xHH (but not Go's \u escapes, so
// strconv.Quote will not do for a secret).
func confQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// SentinelScript renders the notification script of the sentinel
// listening on port (on this host): it finishes a failover that Sentinel
// gave up on for want of a replica it may promote.
//
// A sentinel accepts a replica only if the replica's link to the dead
// master has been down for at most 10 x down-after plus the time the
// sentinel itself has seen the master down. A sentinel restarted after
// the master died has seen that for a second, so once the quorum
// returns it may win the election and find no replica good enough
// (-failover-abort-no-good-slave); the next election comes two
// failover-timeouts later and may go the same way (8 to 39 s in the
// sentinels-minority runs). A sentinel that stayed up has seen the
// master down all along and accepts the replicas. So on that event the
// script asks every sentinel in turn for SENTINEL FAILOVER, which each
// grants only with a replica its own view accepts, until one does.
// Sentinel runs the script for warning-level events only, with the
// event's type and description, and its own environment, which must hold
// the sentinels' password as REDISCLI_AUTH; it must exit quickly.
func SentinelScript(port int) string {
	return fmt.Sprintf(`#!/bin/sh
# Written by package stack (SentinelScript); see its comment.
# $1: event type, $2: "master <name> <ip> <port>" for master events.
# redis-cli authenticates with $REDISCLI_AUTH, the sentinels' password,
# from the sentinel's environment.
[ "$1" = "-failover-abort-no-good-slave" ] || exit 0
set -- $2
[ "$1" = master ] || exit 0
name=$2
others=$(timeout 2 redis-cli -p %d --raw sentinel sentinels "$name" 2>/dev/null |
	awk 'k == "ip" { ip = $0 } k == "port" { print ip ":" $0 } { k = $0 }')
for s in $others 127.0.0.1:%d; do
	r=$(timeout 2 redis-cli -h "${s%%:*}" -p "${s##*:}" --raw sentinel failover "$name" 2>&1)
	echo "sentinel $s: SENTINEL FAILOVER $name: $r"
	[ "$r" = OK ] && exit 0
done
exit 0
`, port, port)
}
