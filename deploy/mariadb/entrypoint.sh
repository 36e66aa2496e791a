#!/bin/sh
# Initialises the data directory on the first start, then runs mariadbd
# with an init file that makes sure the database and its user exist with
# the password from the environment (MARIADB_PASSWORD, or a file named by
# MARIADB_PASSWORD_FILE: a Docker or Kubernetes secret). The settings are
# the local stack's (package stack).
set -eu
if [ -n "${MARIADB_PASSWORD_FILE:-}" ]; then
	MARIADB_PASSWORD=$(cat "$MARIADB_PASSWORD_FILE")
fi
: "${MARIADB_PASSWORD:?set MARIADB_PASSWORD or MARIADB_PASSWORD_FILE}"
db=${MARIADB_DATABASE:-shortener}
user=${MARIADB_USER:-shortener}
data=/var/lib/mysql

if [ ! -d "$data/mysql" ]; then
	mariadb-install-db --no-defaults --datadir="$data" --auth-root-authentication-method=socket \
		--skip-test-db >/dev/null
fi
# SQL string escaping: backslashes, then quotes.
pw=$(printf '%s' "$MARIADB_PASSWORD" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")
umask 077
cat >/run/mysqld/init.sql <<SQL
CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS '$user'@'%' IDENTIFIED BY '$pw';
ALTER USER '$user'@'%' IDENTIFIED BY '$pw';
GRANT ALL ON \`$db\`.* TO '$user'@'%';
SQL
exec mariadbd --no-defaults --datadir="$data" --port=3306 --bind-address=0.0.0.0 \
	--socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/mariadbd.pid \
	--skip-log-bin --skip-name-resolve --init-file=/run/mysqld/init.sql \
	--innodb-buffer-pool-size="${MARIADB_BUFFER_POOL:-128M}" --innodb-log-file-size=64M \
	--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci
