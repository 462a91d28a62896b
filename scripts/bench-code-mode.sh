#!/usr/bin/env bash
# Code mode measured (issue 62 item 4; docs/src/code-mode.md "Measured"), by bench/code-mode.mjs
# with the official MCP SDK client against `mcp-sieve serve` on 127.0.0.1:
#   --tasks     three multi-step tasks over the demo catalog and over a gateway in front of
#               @modelcontextprotocol/server-everything, each with direct calls, search mode and
#               code mode: bytes and ~tokens (bytes/4, the demo page's estimate) the model reads,
#               bytes it writes, and its round trips (requests); natively and, when worker/build
#               exists, under `wrangler dev` too; ~30 s
#   --overhead  p50 of 30 runs of one run_code making 5 chained calls vs 5 direct tools/call (and
#               run_code of no call vs one direct call), natively and, when worker/build exists,
#               at the edge under `wrangler dev`; ~30 s
# Neither flag: both. The binary is target/release/mcp-sieve when built, else target/debug/mcp-sieve
# (--build builds the release one first; --bin FILE names another). Writes
# target/bench-code-mode/result.json. Every server is stopped by its PID; the whole run is cut at
# BENCH_CODE_TIMEOUT seconds (default 600). Other options go to bench/code-mode.mjs (--n 30, --k 5).
#   scripts/bench-code-mode.sh [--tasks] [--overhead] [--build] [--no-edge] [options]
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
build=0
edge=1
for a in "$@"; do
  case "$a" in
    --build) build=1 ;;
    --no-edge) edge=0 ;;
    *) args+=("$a") ;;
  esac
done
[ "$build" = 0 ] || cargo build -q --release -p mcp-sieve-server
if [[ " ${args[*]-} " != *" --bin "* ]]; then
  if [ -x target/release/mcp-sieve ]; then args+=(--bin target/release/mcp-sieve); else args+=(--bin target/debug/mcp-sieve); fi
fi
if [ "$edge" = 1 ] && [ -f worker/build/index.js ]; then
  args+=(--edge)
elif [ "$edge" = 1 ]; then
  echo "no worker/build: the edge is left out (scripts/build.sh --run)" >&2
fi
mkdir -p target/bench-code-mode
exec timeout --foreground "${BENCH_CODE_TIMEOUT:-600}" node bench/code-mode.mjs --json target/bench-code-mode/result.json "${args[@]}"
