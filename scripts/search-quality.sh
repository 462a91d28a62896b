#!/usr/bin/env bash
# Search quality side by side (ours, FastMCP 4's BM25SearchTransform, plain BM25) on the labelled
# queries of tests/search/ over catalog/public-servers.json and catalog/saas-servers.json:
# top-1, top-5 and MRR per part (tune, heldOut). Needs the .venv of scripts/bootstrap.sh.
#   scripts/search-quality.sh [--json FILE] [--misses]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --features testing --example search_rank
exec .venv/bin/python scripts/search_quality.py --ours target/debug/examples/search_rank "$@"
