#!/bin/sh
# PgBouncer for the PostgresStore pooler test: it starts a throwaway pgbouncer in transaction
# mode in front of its own throwaway cluster (no service is used).
set -eu
exec sh "$(dirname "$0")/apt-ensure.sh" /usr/sbin/pgbouncer pgbouncer
