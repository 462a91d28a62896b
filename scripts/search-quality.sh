#!/usr/bin/env bash
# Search quality side by side (ours, FastMCP 4's BM25SearchTransform, plain BM25) on the labelled
# queries of tests/search/ over catalog/public-servers.json and catalog/saas-servers.json:
# top-1, top-5 and MRR per part (tune, heldOut). Needs the .venv of scripts/bootstrap.sh.
#   scripts/search-quality.sh [--json FILE] [--misses] [--tune-only] [--ours-only] [--meaning [--weights W,...]]
# Speed side by side at 5,000 and 50,000 public tools (docs/src/search.md's speed table), in one run:
# ours from `cargo bench --features testing --bench search` (its p50 lines; criterion's own
# sampling is skipped by a filter no benchmark matches), then FastMCP's search_tools and plain
# BM25 (scripts/search_quality.py --speed: at most --runs calls per query, cut at --budget s).
# 1.5–3 minutes on a loaded 2-core VM (load average 4–10) once the bench is built; --peers-only skips ours.
#   scripts/search-quality.sh --speed [--peers-only] [--runs N] [--budget S] [--sizes 5000,50000]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ " $* " == *" --speed "* ]]; then
  args=()
  for a in "$@"; do [[ $a == --peers-only ]] || args+=("$a"); done
  if [[ " $* " != *" --peers-only "* ]]; then
    cargo bench -q --features testing --bench search -- --exact no-criterion-sampling 2>&1 | grep -E 'p50|load|first'
  fi
  exec .venv/bin/python scripts/search_quality.py "${args[@]}"
fi
cargo build -q --features testing --example search_rank
# --meaning: sentence vectors too (issue 40): the tools' and queries' vectors of each catalog, from
# the model scripts/bootstrap.sh unpacks, by the native example search_encode (release build), then
# ours fused with them (and the encoder alone, and RRF) side by side; --weights W,W,... adds rows.
if [[ " $* " == *" --meaning "* ]]; then
  args=()
  for a in "$@"; do [[ $a == --meaning ]] || args+=("$a"); done
  out=target/search-vectors
  mkdir -p "$out"
  cargo build -q --release -p mcp-sieve-server --example search_encode
  for c in public-servers saas-servers; do
    queries=(tests/search/$c.json)
    [[ $c == public-servers ]] && queries+=(tests/search/queries.json)
    target/release/examples/search_encode target/models/all-minilm-l6-v2 catalog/$c.json "$out/$c.json.vectors.json" "${queries[@]}"
  done
  exec .venv/bin/python scripts/search_quality.py --ours target/debug/examples/search_rank --meaning "$out" "${args[@]}"
fi
exec .venv/bin/python scripts/search_quality.py --ours target/debug/examples/search_rank "$@"
