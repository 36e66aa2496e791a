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
# MARIADB_DATADIR, MARIADB_RUNDIR, MARIADB_PORT and TMPDIR move the data,
# the socket and init file, the port and the temporary files (deploy's
# test runs the script outside a container); the image keeps the defaults.
set -eu
if [ -n "${MARIADB_PASSWORD_FILE:-}" ]; then
	MARIADB_PASSWORD=$(cat "$MARIADB_PASSWORD_FILE")
fi
: "${MARIADB_PASSWORD:?set MARIADB_PASSWORD or MARIADB_PASSWORD_FILE}"
db=${MARIADB_DATABASE:-shortener}
user=${MARIADB_USER:-shortener}
data=${MARIADB_DATADIR:-/var/lib/mysql}
run=${MARIADB_RUNDIR:-/run/mysqld}

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
exec mariadbd --no-defaults --datadir="$data" --port="${MARIADB_PORT:-3306}" --bind-address=0.0.0.0 \
	--socket="$run/mysqld.sock" --pid-file="$run/mariadbd.pid" --tmpdir="${TMPDIR:-/tmp}" \
	--skip-log-bin --skip-name-resolve --init-file="$run/init.sql" \
	--innodb-buffer-pool-size="${MARIADB_BUFFER_POOL:-128M}" --innodb-log-file-size=64M \
	--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci
