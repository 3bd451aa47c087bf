#!/bin/sh
# The other runtimes the runtime tests (test/runtimes/) run oncely on, from the npm registry
# like the tooling's Node 24: the oldest Node `engines` admits, Bun and Deno (their npm
# packages, whose install scripts fetch the binary as an optional dependency). Each goes into
# .cache/runtimes/<name> of its own (not a devDependency: a second `node` package would
# contend for node_modules/.bin/node, and npm links whichever comes first). Idempotent.
set -eu
cd "$(dirname "$0")/.."

ensure() { # <dir> <binary inside dir> <package@version>
  if [ -x ".cache/runtimes/$1/$2" ]; then
    echo "$3: already installed (.cache/runtimes/$1/$2)"
    return
  fi
  mkdir -p ".cache/runtimes/$1"
  echo '{"private":true,"allowScripts":{"node":true,"bun":true,"deno":true}}' > ".cache/runtimes/$1/package.json"
  npm install --prefix ".cache/runtimes/$1" --no-save --no-package-lock --no-audit --no-fund "$3"
  if [ ! -x ".cache/runtimes/$1/$2" ]; then
    echo "$3: installed, but .cache/runtimes/$1/$2 is missing" >&2
    exit 1
  fi
  echo "$3: installed (.cache/runtimes/$1/$2)"
}

ensure node-22.13 node_modules/node/bin/node node@22.13.0
ensure bun-1.4 node_modules/.bin/bun bun@1.4.5
ensure deno-2.9 node_modules/.bin/deno deno@2.9.6
