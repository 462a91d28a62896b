#!/usr/bin/env bash
# Fails if the npm package's .wasm grows past its ceiling, gzipped (gzip -9), so the size cannot
# creep back unnoticed. Run after scripts/build.sh. Issue 6 asks for at most 153,600 bytes
# (150 KiB); the ceiling is the measured size plus a small margin until that target is reached —
# lower it whenever the package shrinks.
set -euo pipefail
cd "$(dirname "$0")/.."
ceiling=${SIEVE_WASM_GZIP_CEILING:-171000}
target=153600
wasm=pkg/mcp_sieve_bg.wasm
[ -f "$wasm" ] || { echo "$wasm is missing: run scripts/build.sh first" >&2; exit 1; }
raw=$(wc -c < "$wasm")
gz=$(gzip -9c "$wasm" | wc -c)
echo "$wasm: $raw bytes, $gz bytes gzipped (ceiling $ceiling, issue 6 target $target)"
if [ "$gz" -gt "$ceiling" ]; then
  echo "$wasm is $gz bytes gzipped, over the ceiling of $ceiling bytes" >&2
  exit 1
fi
