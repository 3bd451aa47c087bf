#!/bin/sh
# Redis server for the `oncely check` race test: express-idempotency's Redis-backed key store
# is started against a throwaway redis-server (unix socket, no persistence) inside the test.
set -eu
exec sh "$(dirname "$0")/apt-ensure.sh" /usr/bin/redis-server redis-server
