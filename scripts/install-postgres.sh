#!/bin/sh
# PostgreSQL server binaries for the PostgresStore tests (they start throwaway clusters).
set -eu
exec sh "$(dirname "$0")/apt-ensure.sh" "${ONCELY_PG_BIN:-/usr/lib/postgresql/15/bin}/initdb" postgresql
