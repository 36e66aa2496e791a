#!/bin/sh
# Initialises the data directory on the first start, then runs mariadbd
# with an init file that makes sure the database and its user exist with
# the password from the environment (MARIADB_PASSWORD, or a file named by
# MARIADB_PASSWORD_FILE: a Docker or Kubernetes secret). The settings are
# the local stack's (package stack).
#
# The user gets what the app needs and no more: it runs its own
# migrations (store/migrations: CREATE, ALTER, INDEX and DROP on its
# database) and reads and writes its tables (SELECT, INSERT, UPDATE,
# DELETE); GET_LOCK, which serialises the migrations, needs no privilege.
# Privileges an older image granted (ALL) are revoked at every start.
#
# Galera: with MARIADB_GALERA_NODES (every node of the cluster, comma-
# separated host or host:port, the port ignored: the apps' list,
# SHORTENER_MYSQL_NODES, does) the server is a node of a MariaDB Galera
# cluster; MARIADB_GALERA_SELF is this node as that list names it, and
# MARIADB_GALERA_ADDRESS the address the others reach it at (default:
# MARIADB_GALERA_SELF); MARIADB_GALERA_REQUIRED=1 refuses to start without
# the list (a node that must not run alone), MARIADB_GALERA_GCACHE sizes
# the write-set cache that a node rejoining after an absence catches up
# from (128M, Galera's default). A new cluster is bootstrapped
# (--wsrep-new-cluster) by one node only, and only when no cluster can
# exist without it:
#
#   - its grastate.dat says safe_to_bootstrap: 1 (it was the last node of
#     the cluster to stop; the others cannot form one without it), or
#   - it has no Galera state yet (a new install), is the first of the list,
#     and no other node listens on Galera's port 4567 (none runs yet).
#
# Every other start joins: a node with no state waits for another to
# listen first (so that the first node finds none at a new install, and
# no node crash-loops meanwhile), then takes a full copy (SST);
# a node that crashed (seqno -1) recovers its position from InnoDB first
# (what galera_recovery does for systemd) so that it catches up from a
# donor's write-set cache (IST) instead of copying everything. A cluster
# whose nodes all crashed forms again once all are back (pc.recovery).
# If none has safe_to_bootstrap and they did not crash, an operator picks
# the node with the highest seqno (mariadbd --wsrep-recover) and sets
# safe_to_bootstrap: 1 in its grastate.dat (docs/deploy.md).
#
# SST by mariabackup, as the local stack's: the donor stays writable
# while it copies (rsync, which needs no package beyond mariadb-server,
# makes it read-only for the whole copy), and the apps keep writing
# through a donor (store: Donor/Desynced still takes writes). At a new
# install, or when a single MariaDB with data turns Galera, the first
# node is the only donor there is, and it is the apps' writer. The donor
# logs into itself as the image's user over its socket (unix_socket: no
# password to share). A joiner asks the nodes at the end of the list
# first, away from the one the apps write through, to spare it the
# copy's reads. A rejoin after a short absence is an IST of the
# write-sets it missed: seconds.
#
# MARIADB_DATADIR, MARIADB_RUNDIR, MARIADB_PORT and TMPDIR move the data,
# the socket and init file, the port and the temporary files (deploy's
# test runs the script outside a container); the image keeps the defaults.
#
#   shortener-mariadb         run the server
#   shortener-mariadb ready   exit 0 only if the server answers a query over
#                             its socket (as the image's user, mysql, by
#                             unix_socket) and, with Galera, is ready
#                             (wsrep_ready ON), Synced (wsrep_local_state
#                             4) and in the primary component: the
#                             healthcheck and readiness probe
set -eu
data=${MARIADB_DATADIR:-/var/lib/mysql}
run=${MARIADB_RUNDIR:-/run/mysqld}
nodes=$(printf '%s' "${MARIADB_GALERA_NODES:-}" | tr ',' ' ')

if [ "${1:-}" = ready ]; then
	status=$(mariadb --socket="$run/mysqld.sock" --connect-timeout=2 --batch --skip-column-names -e \
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state', 'wsrep_cluster_status')" 2>/dev/null) || exit 1
	[ -z "$nodes" ] && exit 0
	tab=$(printf '\t')
	for want in "wsrep_ready${tab}ON" "wsrep_local_state${tab}4" "wsrep_cluster_status${tab}Primary"; do
		printf '%s\n' "$status" | grep -qx "$want" || exit 1
	done
	exit 0
elif [ -n "${1:-}" ]; then
	echo "usage: shortener-mariadb [ready]" >&2
	exit 2
fi

if [ -n "${MARIADB_PASSWORD_FILE:-}" ]; then
	MARIADB_PASSWORD=$(cat "$MARIADB_PASSWORD_FILE")
fi
: "${MARIADB_PASSWORD:?set MARIADB_PASSWORD or MARIADB_PASSWORD_FILE}"
db=${MARIADB_DATABASE:-shortener}
user=${MARIADB_USER:-shortener}

if [ ! -d "$data/mysql" ]; then
	mariadb-install-db --no-defaults --datadir="$data" --auth-root-authentication-method=socket \
		--skip-test-db >/dev/null
fi
# SQL string escaping: backslashes, then quotes.
pw=$(printf '%s' "$MARIADB_PASSWORD" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")
umask 077
{
	# printf, not a here-document: one would unescape the backslashes.
	printf 'CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;\n' "$db"
	printf "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s';\n" "$user" "$pw"
	printf "ALTER USER '%s'@'%%' IDENTIFIED BY '%s';\n" "$user" "$pw"
	printf "REVOKE ALL PRIVILEGES, GRANT OPTION FROM '%s'@'%%';\n" "$user"
	printf "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP ON \`%s\`.* TO '%s'@'%%';\n" "$db" "$user"
} >"$run/init.sql"

set -- --no-defaults --datadir="$data" --port="${MARIADB_PORT:-3306}" --bind-address=0.0.0.0 \
	--socket="$run/mysqld.sock" --pid-file="$run/mariadbd.pid" --tmpdir="${TMPDIR:-/tmp}" \
	--skip-log-bin --skip-name-resolve \
	--innodb-buffer-pool-size="${MARIADB_BUFFER_POOL:-128M}" --innodb-log-file-size=64M \
	--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci
if [ -z "$nodes" ]; then
	if [ "${MARIADB_GALERA_REQUIRED:-}" = 1 ]; then
		echo "this node runs only in a Galera cluster: set MARIADB_GALERA_NODES (compose: SHORTENER_MYSQL_NODES)" >&2
		exit 2
	fi
	exec mariadbd "$@" --init-file="$run/init.sql"
fi

# Galera from here on.
self=${MARIADB_GALERA_SELF:?set MARIADB_GALERA_SELF to this node as MARIADB_GALERA_NODES names it}
hosts="" first="" peers="" donors=""
for n in $nodes; do
	h=${n%:*}
	hosts="$hosts${hosts:+,}$h"
	[ -n "$first" ] || first=$h
	if [ "$h" != "$self" ]; then
		peers="$peers $h"
		donors="$h,$donors"
	fi
done
case ",$hosts," in
*",$self,"*) ;;
*) echo "MARIADB_GALERA_SELF=$self is not in MARIADB_GALERA_NODES ($hosts)" >&2 && exit 2 ;;
esac
# A joiner asks for a donor from the end of the list first, away from
# the apps' writer (the first healthy node), then any (the trailing
# comma).
#
# When a node dies or freezes the others stall every commit until they
# evict it: the group communication's timeouts are the local stack's
# (internal/stack/galera.go, galeraTimeouts; a test compares them),
# which evict one after 3 s of silence instead of Galera's 5 s.
# max_connections: each write an app gives up on meanwhile (its 1 s
# deadline) keeps its server thread blocked until the eviction, and the
# retries open new connections; the compose end-to-end test saw 151,
# MariaDB's default, run out on the node the apps moved to.
#
# pc.recovery (unlike the local stack, which has no use for it: it
# restarts a crashed cluster itself from its most advanced node): a
# cluster whose nodes all crashed, as a host's reboot crashes a compose
# stack's, forms again by itself once all are back. Its price: a node
# restarted before the others evicted it may come back under its old
# identity, which they keep out a while; measured here by hand, 7-15 s
# to Synced instead of 5-7 s (restarted after the eviction: 10-12 s
# either way).
timeouts="evs.keepalive_period=PT0.5S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"
set -- "$@" --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so \
	--wsrep-cluster-name="${MARIADB_GALERA_CLUSTER:-shortener}" --wsrep-cluster-address="gcomm://$hosts" \
	--wsrep-node-name="$self" --wsrep-node-address="${MARIADB_GALERA_ADDRESS:-$self}" \
	--wsrep-sst-method=mariabackup --wsrep-sst-auth="$(id -un):" --wsrep-sst-donor="$donors" \
	--wsrep-provider-options="gcache.size=${MARIADB_GALERA_GCACHE:-128M};gcache.recover=yes;pc.recovery=true;$timeouts" \
	--binlog-format=ROW --innodb-autoinc-lock-mode=2 --max-connections="${MARIADB_MAX_CONNECTIONS:-1000}"

# The server takes these from a defaults file, not its command line: the
# state transfer scripts read that file too (without one, the package's
# /etc/mysql), and mariadb-backup, handed the server's command line,
# refuses options it does not know (innodb-buffer-pool-size). [sst]
# sends the scripts' errors to the server's log rather than syslog,
# which no container has.
shift # --no-defaults
{
	echo "# Written by shortener-mariadb at every start."
	echo "[mysqld]"
	for a; do printf '%s\n' "${a#--}"; done
	echo "[sst]"
	echo "sst-syslog=-1"
} >"$run/my.cnf"
set -- --defaults-file="$run/my.cnf"

# listening says whether any other node accepts a connection on Galera's
# port: a running node, or one starting to join.
listening() {
	for p in $peers; do
		if timeout 2 bash -c "exec 3<>/dev/tcp/$p/4567" 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

state=$data/grastate.dat
if grep -q '^safe_to_bootstrap: *1' "$state" 2>/dev/null; then
	echo "galera $self: bootstrapping the cluster: this node stopped last (safe_to_bootstrap: 1)"
	exec mariadbd "$@" --wsrep-new-cluster --init-file="$run/init.sql"
fi
if [ ! -f "$state" ]; then
	if [ "$self" = "$first" ] && ! listening; then
		echo "galera $self: bootstrapping a new cluster: no state, first of $hosts, no other node listens"
		exec mariadbd "$@" --wsrep-new-cluster --init-file="$run/init.sql"
	fi
	waited=0
	until listening; do
		if [ $((waited % 30)) -eq 0 ]; then
			echo "galera $self: no state; waiting for another node of $hosts to listen on 4567"
		fi
		sleep 2
		waited=$((waited + 2))
	done
fi
# A crash leaves seqno -1: the position is in InnoDB.
if grep -q '^seqno: *-1' "$state" 2>/dev/null; then
	mariadbd "$@" --wsrep-recover --log-error="$run/recover.log" || true
	pos=$(sed -n 's/.*WSREP: Recovered position: *//p' "$run/recover.log" | tail -n 1)
	if [ -n "$pos" ]; then
		echo "galera $self: recovered position $pos"
		set -- "$@" --wsrep-start-position="$pos"
	fi
fi
echo "galera $self: joining $hosts"

# A joiner that the group evicts while it receives its state transfer (a
# busy machine misses keep-alives) logs "Failed to JOIN the cluster after
# SST", closes its link to the group and stays up outside it for good: it
# answers queries but never joins, so neither the container's restart
# policy nor a pod's restart sees a failure (TestComposeGalera waited
# three minutes on such a node). So a joiner runs under a watch: once it
# answers over its socket, three checks in a row 5 s apart that find it
# not connected to the group (wsrep_connected OFF, which a node cut off
# from its peers does not show: it stays connected and keeps trying) stop
# it, and the container exits to be started again, joining anew.
watch_join() {
	off=0
	while kill -0 "$1" 2>/dev/null; do
		sleep 5
		c=$(mariadb --socket="$run/mysqld.sock" --connect-timeout=2 --batch --skip-column-names \
			-e "SHOW GLOBAL STATUS LIKE 'wsrep_connected'" 2>/dev/null | cut -f2) || c=""
		if [ "$c" = OFF ]; then off=$((off + 1)); else off=0; fi
		if [ "$off" -ge 3 ]; then
			echo "galera $self: outside the cluster for 15 s (a join that failed); stopping mariadbd to start again"
			: >"$run/watch-stopped"
			kill -TERM "$1" 2>/dev/null || true
			return
		fi
	done
}
rm -f "$run/watch-stopped"
mariadbd "$@" --init-file="$run/init.sql" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
watch_join "$pid" &
status=0
# wait returns early when a trapped signal arrives: wait again until
# mariadbd has exited, and exit as it did.
while kill -0 "$pid" 2>/dev/null; do
	if wait "$pid"; then status=0; else status=$?; fi
done
# Stopped by the watch, it shut down cleanly: still a failure.
if [ "$status" -eq 0 ] && [ -f "$run/watch-stopped" ]; then status=1; fi
exit "$status"
