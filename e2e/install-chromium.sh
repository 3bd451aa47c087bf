#!/bin/sh
# Debian's Chromium for the Playwright suite (Playwright cannot download its own browsers here).
set -eu
exec sh "$(dirname "$0")/../scripts/apt-ensure.sh" /usr/bin/chromium chromium fonts-liberation
