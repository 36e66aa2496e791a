#!/bin/sh
# Starts a Redis node or a sentinel from the rendered configs in
# /etc/shortener, as the local stack does (package stack), with a
# password on every node and sentinel:
#
# redis     a cache starts empty: any dump.rdb a replica's full sync left is
#           removed (loaded after an outage it would bring back deleted
#           links). The node follows the master the sentinels name; when
#           none answers, SHORTENER_REDIS_FIRST_MASTER is the master.
# sentinel  the config is written on the first start only: the sentinel
#           rewrites it with what it learns, which it needs to rejoin. Its
#           passwords are set again on every start (a changed Secret).
# ping      redis|sentinel: exits 0 only if the local server answers PONG
#           to an authenticated PING (the healthcheck and probes: redis-cli
#           itself exits 0 on an error reply such as NOAUTH).
#
# Environment: SHORTENER_ANNOUNCE_HOST (this node's address as the others
# reach it: its fixed IP in compose, its DNS name in Kubernetes),
# SHORTENER_REDIS_FIRST_MASTER (address of the first master),
# SHORTENER_SENTINELS (space-separated host:port list),
# SHORTENER_REDIS_MASTER_NAME (default shortener), and the passwords
# SHORTENER_REDIS_PASSWORD (requirepass and masterauth of every node, the
# sentinels' auth-pass) and SHORTENER_SENTINEL_PASSWORD (requirepass of
# every sentinel, which the sentinels also use with each other).
#
# The passwords come from the environment (a Kubernetes Secret, compose's
# .env) and are appended to the copy of the config in /data, mode 0600,
# never to the rendered files in /etc/shortener (a ConfigMap in
# Kubernetes). protected-mode no in the rendered files stays: protected
# mode only acts on a server without a password, and none starts without
# one here.
set -eu
role=${1:-redis}
name=${SHORTENER_REDIS_MASTER_NAME:-shortener}

# conf prints a config line whose last argument, $2, is a password:
# double-quoted, in which Redis unescapes \\ and \" (printf, not echo:
# dash's echo would unescape the backslashes first).
conf() { printf '%s "%s"\n' "$1" "$(printf '%s' "$2" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"; }

case $role in
ping)
	case ${2:-redis} in
	redis) port=6379 REDISCLI_AUTH=${SHORTENER_REDIS_PASSWORD:-} ;;
	sentinel) port=26379 REDISCLI_AUTH=${SHORTENER_SENTINEL_PASSWORD:-} ;;
	*) echo "usage: shortener-redis ping redis|sentinel" >&2 && exit 2 ;;
	esac
	export REDISCLI_AUTH
	[ "$(timeout 2 redis-cli -p "$port" ping 2>/dev/null)" = PONG ]
	exit
	;;
esac

host=${SHORTENER_ANNOUNCE_HOST:-$(hostname)}
first=${SHORTENER_REDIS_FIRST_MASTER:?set SHORTENER_REDIS_FIRST_MASTER to the address of the first master}
redis_pw=${SHORTENER_REDIS_PASSWORD:?set SHORTENER_REDIS_PASSWORD: every Redis node requires it}
sentinel_pw=${SHORTENER_SENTINEL_PASSWORD:?set SHORTENER_SENTINEL_PASSWORD: every sentinel requires it}
umask 077

case $role in
redis)
	rm -f /data/dump.rdb
	master=""
	for s in ${SHORTENER_SENTINELS:-}; do
		m=$(REDISCLI_AUTH=$sentinel_pw timeout 2 redis-cli -h "${s%:*}" -p "${s##*:}" --raw sentinel get-master-addr-by-name "$name" 2>/dev/null | head -n 1) || true
		case $m in "" | *ERR* | *rror* | *NOAUTH*) ;; *) master=$m; break ;; esac
	done
	[ -n "$master" ] || master=$first
	{
		sed "s/@ANNOUNCE_HOST@/$host/g" /etc/shortener/redis.conf
		conf requirepass "$redis_pw"
		conf masterauth "$redis_pw"
		if [ "$master" != "$host" ]; then
			echo "replicaof $master 6379"
		fi
	} >/data/redis.conf
	echo "redis $host: master is $master"
	exec redis-server /data/redis.conf
	;;
sentinel)
	if [ ! -s /data/sentinel.conf ]; then
		sed -e "s/@ANNOUNCE_HOST@/$host/g" -e "s/@MASTER_HOST@/$first/g" /etc/shortener/sentinel.conf >/data/sentinel.conf
	fi
	# The sentinel rewrites its file with its passwords in it (requirepass
	# as "user default on #<hash>", which would win over a new
	# requirepass; auth-pass unquoted, which a password with a space or a
	# quote breaks): drop them, then append the current ones.
	sed -e '/^requirepass /d' -e '/^user default /d' -e "/^sentinel auth-pass $name /d" \
		/data/sentinel.conf >/data/sentinel.conf.new
	{
		conf requirepass "$sentinel_pw"
		conf "sentinel auth-pass $name" "$redis_pw"
	} >>/data/sentinel.conf.new
	mv /data/sentinel.conf.new /data/sentinel.conf
	# The notification script (SentinelScript) asks the sentinels with
	# redis-cli: it inherits the sentinel's environment.
	export REDISCLI_AUTH=$sentinel_pw
	exec redis-sentinel /data/sentinel.conf
	;;
*)
	echo "usage: shortener-redis redis|sentinel|ping redis|sentinel" >&2
	exit 2
	;;
esac
