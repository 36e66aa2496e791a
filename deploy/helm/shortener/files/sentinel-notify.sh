#!/bin/sh
# Written by package stack (SentinelScript); see its comment.
# $1: event type, $2: "master <name> <ip> <port>" for master events.
# redis-cli authenticates with $REDISCLI_AUTH, the sentinels' password,
# from the sentinel's environment.
[ "$1" = "-failover-abort-no-good-slave" ] || exit 0
set -- $2
[ "$1" = master ] || exit 0
name=$2
others=$(timeout 2 redis-cli -p 26379 --raw sentinel sentinels "$name" 2>/dev/null |
	awk 'k == "ip" { ip = $0 } k == "port" { print ip ":" $0 } { k = $0 }')
for s in $others 127.0.0.1:26379; do
	r=$(timeout 2 redis-cli -h "${s%:*}" -p "${s##*:}" --raw sentinel failover "$name" 2>&1)
	echo "sentinel $s: SENTINEL FAILOVER $name: $r"
	[ "$r" = OK ] && exit 0
done
exit 0
