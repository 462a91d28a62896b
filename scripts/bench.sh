#!/usr/bin/env bash
# Core benchmarks (criterion): filter evaluation and tools/list assembly at 100 … 100k tools, the
# index beside the naive serde_json baseline in the same run; prints a Markdown table.
# Shared, noisy machines: compare the ratios within one run, not absolute times across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --features testing --bench filter "$@"
node scripts/bench-table.mjs
