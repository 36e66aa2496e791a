#!/bin/sh
# Starts a Redis node or a sentinel from the rendered configs in
# /etc/shortener, as the local stack does (package stack):
#
# redis     a cache starts empty: any dump.rdb a replica's full sync left is
#           removed (loaded after an outage it would bring back deleted
#           links). The node follows the master the sentinels name; when
#           none answers, SHORTENER_REDIS_FIRST_MASTER is the master.
# sentinel  the config is written on the first start only: the sentinel
#           rewrites it with what it learns, which it needs to rejoin.
#
# Environment: SHORTENER_ANNOUNCE_HOST (this node's address as the others
# reach it: its fixed IP in compose, its DNS name in Kubernetes),
# SHORTENER_REDIS_FIRST_MASTER (address of the first master),
# SHORTENER_SENTINELS (space-separated host:port list), and
# SHORTENER_REDIS_MASTER_NAME (default shortener).
set -eu
role=${1:-redis}
host=${SHORTENER_ANNOUNCE_HOST:-$(hostname)}
first=${SHORTENER_REDIS_FIRST_MASTER:?set SHORTENER_REDIS_FIRST_MASTER to the address of the first master}
name=${SHORTENER_REDIS_MASTER_NAME:-shortener}

case $role in
redis)
	rm -f /data/dump.rdb
	master=""
	for s in ${SHORTENER_SENTINELS:-}; do
		m=$(timeout 2 redis-cli -h "${s%:*}" -p "${s##*:}" --raw sentinel get-master-addr-by-name "$name" 2>/dev/null | head -n 1) || true
		case $m in "" | *ERR* | *rror*) ;; *) master=$m; break ;; esac
	done
	[ -n "$master" ] || master=$first
	sed "s/@ANNOUNCE_HOST@/$host/g" /etc/shortener/redis.conf >/data/redis.conf
	if [ "$master" != "$host" ]; then
		echo "replicaof $master 6379" >>/data/redis.conf
	fi
	echo "redis $host: master is $master"
	exec redis-server /data/redis.conf
	;;
sentinel)
	if [ ! -s /data/sentinel.conf ]; then
		sed -e "s/@ANNOUNCE_HOST@/$host/g" -e "s/@MASTER_HOST@/$first/g" /etc/shortener/sentinel.conf >/data/sentinel.conf
	fi
	exec redis-sentinel /data/sentinel.conf
	;;
*)
	echo "usage: shortener-redis redis|sentinel" >&2
	exit 2
	;;
esac
