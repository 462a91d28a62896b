#!/usr/bin/env bash
# Fails if the npm package's .wasm is over 170,000 bytes gzipped (gzip -9), the product's budget, so
# the size cannot creep back unnoticed. Run after scripts/build.sh. What kept it down (each item
# was worth 1–14 KB gzipped): no `str::to_lowercase` (middleware::fold), no
# `str::parse::<f64>` or `f64::clamp`/float `Display` (serde_json writes and reads numbers), no
# serde-wasm-bindgen (its deserializer's error messages bring float formatting: 14 KB; inputs cross
# as JSON text; its serializer was 1.3 KB: the small results are built as JS objects), one sort instantiation (crate::sort), no
# `Ipv6Addr::from_str` (middleware::detect::ip), schemas as JSON text, talc instead of dlmalloc,
# localStorage by `Reflect` instead of gloo-storage (0.7 KB), wasm-opt `--flatten --rereloop -O -O` (1 KB).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=170000
wasm=pkg/mcp_sieve_bg.wasm
[ -f "$wasm" ] || { echo "$wasm is missing: run scripts/build.sh first" >&2; exit 1; }
raw=$(wc -c < "$wasm")
gz=$(gzip -9c "$wasm" | wc -c)
echo "$wasm: $raw bytes, $gz bytes gzipped (limit $limit)"
if [ "$gz" -gt "$limit" ]; then
  echo "$wasm is $gz bytes gzipped, over the limit of $limit bytes (170 KB)" >&2
  exit 1
fi
