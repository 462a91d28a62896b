#!/usr/bin/env bash
# Browser benchmark: Sieve.filter over a 10,000-tool synthetic catalog against a plain-JavaScript
# implementation of the same semantics, in headless Chromium (bench/web/). Prints a table and
# exits non-zero when a target is missed. Builds pkg/ first when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
if [ ! -f pkg/mcp_sieve_bg.wasm ]; then
  wasm-pack build --profile wasm-release --target web --out-dir pkg --out-name mcp_sieve . --features wasm
fi
node bench/web/run.mjs
