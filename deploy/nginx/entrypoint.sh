#!/bin/sh
# Runs nginx in the foreground with the shared config. NGINX_CONF names
# another file (the Helm chart mounts its own, whose upstream is the app
# Service).
set -eu
mkdir -p /tmp/nginx
exec nginx -g 'daemon off;' -e /dev/stderr -c "${NGINX_CONF:-/etc/shortener/nginx.conf}"
