#!/usr/bin/env bash
# docker.sh: the Docker daemon and base image that deploy/ builds on.
#
#   deploy/docker.sh daemon   start dockerd on its own socket and data root
#                             (harmless when it already runs); prints the
#                             DOCKER_HOST to export
#   deploy/docker.sh base     build the local Debian base image with
#                             mmdebstrap and docker import it, unless an
#                             image of the same package list exists
#                             (cached between runs; a base made with
#                             another list is made again)
#   deploy/docker.sh stop     stop the daemon this script started
#
# Debian's docker.io does not start a daemon on install here, and no image
# registry is reachable, so the service images build FROM a base made from
# Debian's package mirror: mmdebstrap --variant=minbase bookworm with the
# servers already included (redis-server, redis-sentinel, nginx-light,
# mariadb-server with galera-4, and mariadb-backup, the Galera nodes'
# state transfer), so that no image build needs the network. Production
# builds pass BASE=debian:bookworm-slim instead and the Dockerfiles install
# the same packages with apt-get.
set -euo pipefail

SOCK=${SHORTENER_DOCKER_SOCK:-/run/shortener-docker.sock}
ROOT=${SHORTENER_DOCKER_ROOT:-/var/lib/shortener-docker}
EXEC=${SHORTENER_DOCKER_EXEC:-/run/shortener-docker}
PIDF=${SHORTENER_DOCKER_PID:-/run/shortener-docker.pid}
LOG=${SHORTENER_DOCKER_LOG:-/var/log/shortener-dockerd.log}
BASE=${SHORTENER_BASE:-shortener-base:bookworm}
# Debian's client (20.10) speaks the daemon's API version; another client
# earlier on PATH may not.
DOCKER=${DOCKER:-/usr/bin/docker}
export DOCKER_HOST=unix://$SOCK

ping() { "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

daemon() {
	if ping; then
		echo "export DOCKER_HOST=$DOCKER_HOST"
		return
	fi
	mkdir -p "$ROOT" "$EXEC"
	# setsid: the daemon outlives this script and its process group. It
	# must not keep any descriptor this script inherited either: a lock
	# held by a caller (flock ports.lock ... deploy/docker.sh daemon)
	# would be held by dockerd and containerd until they stop.
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
		done
		exec setsid dockerd --host "$DOCKER_HOST" --data-root "$ROOT" --exec-root "$EXEC" \
			--pidfile "$PIDF" >"$LOG" 2>&1 </dev/null
	) &
	for _ in $(seq 1 600); do
		if ping; then
			echo "export DOCKER_HOST=$DOCKER_HOST"
			return
		fi
		sleep 0.1
	done
	echo "dockerd did not answer on $SOCK within 60 s; its log, $LOG:" >&2
	tail -n 30 "$LOG" >&2
	exit 1
}

# PACKAGES are the base's packages; the image is labelled with them, so
# that a base made before a package was added is not taken for this one
# (its Dockerfiles would then go to the network for the package).
PACKAGES=redis-server,redis-sentinel,redis-tools,nginx-light,mariadb-server,mariadb-client,mariadb-backup,galera-4,socat,ca-certificates

base() {
	local held
	held=$("$DOCKER" image inspect --format '{{index .Config.Labels "shortener.base.packages"}}' "$BASE" 2>/dev/null) || held=""
	if [ "$held" = "$PACKAGES" ]; then
		echo "base image $BASE: cached"
		return
	fi
	local tar
	tar=$(mktemp --suffix=.tar)
	trap 'rm -f "$tar"' RETURN
	echo "base image $BASE: mmdebstrap bookworm (about a minute)"
	nice -n 10 mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
		--customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
		bookworm "$tar"
	"$DOCKER" import --change "LABEL shortener.base.packages=$PACKAGES" "$tar" "$BASE" >/dev/null
	echo "base image $BASE: imported"
}

stop() {
	[ -f "$PIDF" ] || return 0
	local pid
	pid=$(cat "$PIDF")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "dockerd $pid still runs after 30 s" >&2
	exit 1
}

case "${1:-}" in
daemon) daemon ;;
base) base ;;
stop) stop ;;
*)
	echo "usage: $0 daemon|base|stop" >&2
	exit 2
	;;
esac
