#!/usr/bin/env bash
# Fuzzes each target for a bounded time (default 30 s each): the JSON-RPC entry, the filter parser,
# cursor decoding, the configuration loader, text (any Unicode straight into the tokenizer, the
# stemmer, ranking, the PII detectors and globs) and text_server (the same through the whole server:
# find_tools, the middleware built-ins, templates, view parsing). Seeds live in fuzz/corpus/<target>; new inputs go
# to a scratch corpus under target/, so the repo's corpus stays small. Prints executions per target.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# cargo-fuzz needs nightly flags (-Z sanitizer); this machine has one stable toolchain.
export RUSTC_BOOTSTRAP=1
targets=("${@:2}")
[ ${#targets[@]} -gt 0 ] || targets=(jsonrpc filter cursor config text text_server merge)
for t in "${targets[@]}"; do
  work="target/fuzz-corpus/$t"
  mkdir -p "$work"
  log="target/fuzz-$t.log"
  cargo fuzz run --fuzz-dir fuzz "$t" "$work" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 >"$log" 2>&1 \
    || { tail -40 "$log"; echo "fuzz target $t FAILED (see $log)"; exit 1; }
  execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  echo "$t: $execs executions in $secs s, 0 crashes"
done
