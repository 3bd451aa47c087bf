#!/bin/sh
# Installs Debian packages unless a file they provide is already there (idempotent):
#   sh scripts/apt-ensure.sh <file> <package>...
# As root, or through sudo. Used for what the tests need that npm cannot bring: Chromium
# (Playwright cannot download its own browsers here) and the PostgreSQL server.
set -eu

FILE="$1"
shift
if [ -x "$FILE" ]; then
  echo "$1: already installed ($FILE)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "$1: $FILE is missing and this is not root (no sudo): install the package(s) $*" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "$@"
echo "$1: installed ($FILE)"
