#!/usr/bin/env bash
# Search mode measured from outside (issue 61 item 6; docs/src/search.md "Measured from outside"):
# `target/release/mcp-sieve serve` on 127.0.0.1 driven by the official MCP SDK's client
# (bench/search-serve.mjs), with the default sentence encoder (sentence-transformers/all-MiniLM-L6-v2
# from a Hugging Face cache filled by `mcp-sieve search-model fetch` through the loopback hub
# stand-in, then HF_HUB_OFFLINE=1), without it, and plain BM25:
#   --quality  top-1, top-5, MRR@5 and hard (paraphrase) top-5 on the held-out part of
#              tests/search/{public,saas}-servers.json (54 queries, 23 paraphrases); ~2 min
#   --speed    find_tools p50 client-side (the query's encoding included) at 362, 5,000 and
#              50,000 tools; spawn to ready vectors at 362 and 5,000 tools, cold and cached.
#              ~10 min once the vectors are cached in target/bench-search/vectors; the first run
#              encodes 50,000 tools on one core (about 7-15 minutes on a loaded 2-core VM)
# Neither flag: both. Writes target/bench-search/result.json. Every server is stopped by its PID;
# the whole run is cut at BENCH_SEARCH_TIMEOUT seconds (default 3600). Other options go to
# bench/search-serve.mjs (--sizes 5000,50000, --calls 50, --ready-timeout 1800).
#   scripts/bench-search.sh [--quality] [--speed] [--no-build] [options]
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
build=1
for a in "$@"; do
  if [ "$a" = --no-build ]; then build=0; else args+=("$a"); fi
done
[[ " ${args[*]-} " == *" --quality "* || " ${args[*]-} " == *" --speed "* ]] || args+=(--quality --speed)
[ "$build" = 0 ] || cargo build -q --release -p mcp-sieve-server
[ -x .venv/bin/python ] || { echo "no .venv: scripts/bootstrap.sh makes it (plain BM25 is scripts/search_quality.py's)" >&2; exit 1; }
mkdir -p target/bench-search
exec timeout --foreground "${BENCH_SEARCH_TIMEOUT:-3600}" node bench/search-serve.mjs --json target/bench-search/result.json "${args[@]}"
