#!/bin/sh
# PostgreSQL server binaries for the PostgresStore tests (they start throwaway clusters),
# and PgBouncer for the tests behind a transaction-mode pooler.
set -eu
sh "$(dirname "$0")/apt-ensure.sh" "${ONCELY_PG_BIN:-/usr/lib/postgresql/15/bin}/initdb" postgresql
exec sh "$(dirname "$0")/apt-ensure.sh" /usr/sbin/pgbouncer pgbouncer
