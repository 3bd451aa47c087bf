#!/bin/sh
# Installs Debian's PostgreSQL server binaries for the PostgresStore tests (they start
# throwaway clusters of their own). Idempotent: does nothing when initdb is present.
set -eu

BIN="${ONCELY_PG_BIN:-/usr/lib/postgresql/15/bin}"
if [ -x "$BIN/initdb" ]; then
  echo "postgresql: already installed ($BIN)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "postgresql: $BIN/initdb is missing and this is not root (no sudo): install the 'postgresql' package" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends postgresql
echo "postgresql: installed ($BIN)"
