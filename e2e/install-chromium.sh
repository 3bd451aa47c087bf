#!/bin/sh
# Installs Debian's Chromium for the Playwright suite (Playwright cannot download its
# own browsers here). Idempotent: does nothing when /usr/bin/chromium is present.
set -eu

if [ -x /usr/bin/chromium ]; then
  echo "chromium: already installed ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "chromium: /usr/bin/chromium is missing and this is not root (no sudo): install the 'chromium' package" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium fonts-liberation
echo "chromium: installed ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
