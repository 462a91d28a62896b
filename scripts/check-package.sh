#!/usr/bin/env bash
# Checks the npm package like a published one (run after scripts/build.sh): `npm pack` pkg/,
# install the tarball into fresh temporary projects and use it from Node, an esbuild bundle, a
# Vite build and a plain import map in Chromium; publint and arethetypeswrong on the tarball; tsc
# on tests/types/consumer.ts against the installed types; the JavaScript examples of the README and the book; the
# generated API reference (target/site/api).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
[ -f pkg/package.json ] || { echo "pkg/ is missing: run scripts/build.sh first" >&2; exit 1; }
node --test --test-concurrency=1 tests/package/
