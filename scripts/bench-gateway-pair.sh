#!/usr/bin/env bash
# Paired gateway benchmark (a script, not a test): the Worker gateway's stateless `tools/call`
# against the no-op JavaScript proxy floor (bench/floor-proxy-worker.mjs) and against an earlier
# build of the same Worker, all three under `wrangler dev` in front of one upstream (the release
# native server serving a synthetic catalog of 1,000 tools), with wrk (bench/wrk-list.lua),
# 127.0.0.1 only. ROUNDS (default 5) rounds of a 2 s warm-up then SECONDS (default 4) per target,
# at 1 connection and at CONNS (default 32; 0: 1 connection only); the order of the three targets rotates each round, so
# none always runs first. Prints every round's line, then the table (bench/wrk-table.mjs: medians,
# each round's share of the floor in brackets, the wrangler process group's CPU per request,
# upstream included), and the load average before and after.
#   scripts/bench-gateway-pair.sh BEFORE [SECONDS]
# BEFORE: a directory holding the earlier build's `entry.mjs` and `build/` (worker/entry.mjs and
# worker/build after scripts/build.sh, copied). The later build is worker/ (needs scripts/build.sh
# and cargo build --release -p mcp-sieve-server first), or AFTER=DIR laid out as BEFORE.
# ALSO=DIR adds a third build (named "also"). BENCH_JSON=FILE keeps the raw results.
set -euo pipefail
cd "$(dirname "$0")/.."
before_dir="$(cd "${1:?usage: scripts/bench-gateway-pair.sh BEFORE [SECONDS]}" && pwd)"
seconds="${2:-4}"
rounds="${ROUNDS:-5}"
many="${CONNS:-32}"
warm=2
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
[ -f "$before_dir/entry.mjs" ] && [ -f "$before_dir/build/index.js" ] || { echo "$before_dir has no entry.mjs and build/" >&2; exit 1; }
after_dir="$(cd "${AFTER:-worker}" && pwd)"
[ -f "$after_dir/build/index.js" ] || { echo "no Worker build ($after_dir/build/index.js): run scripts/build.sh" >&2; exit 1; }
[ -x target/release/mcp-sieve ] || { echo "no release build: cargo build --release -p mcp-sieve-server" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_cleanup EXIT

cargo run -q --release --features testing --example synth_catalog -- 1000 0 42 100 > "$work/catalog.json"
start_native up serve --catalog "$work/catalog.json"
upstream="http://127.0.0.1:$port_up/mcp"
ready "$upstream"
node bench/gateway-docs.mjs gateway "$work/catalog.json" "$upstream" > "$work/gateway.json"
node bench/gateway-docs.mjs calls "$work/catalog.json" 64 "$work/calls.txt" "$work/calls-legacy.txt"

# The two builds of the Worker, each MCP only with the gateway document in local KV; the floor.
mcp_only_worker "$work/after"
sed -i "s|^main = .*|main = \"$after_dir/entry.mjs\"|" "$work/after/wrangler.toml"
kv_catalog after "$work/after" "$work/gateway.json"
start after "$work/after"
mcp_only_worker "$work/before"
sed -i "s|^main = .*|main = \"$before_dir/entry.mjs\"|" "$work/before/wrangler.toml"
kv_catalog before "$work/before" "$work/gateway.json"
start before "$work/before"
targets=(floor before after)
if [ -n "${ALSO:-}" ]; then
  also_dir="$(cd "$ALSO" && pwd)"
  mcp_only_worker "$work/also"
  sed -i "s|^main = .*|main = \"$also_dir/entry.mjs\"|" "$work/also/wrangler.toml"
  kv_catalog also "$work/also" "$work/gateway.json"
  start also "$work/also"
  targets+=(also)
fi
mkdir -p "$work/floor"
cp bench/floor-proxy-worker.mjs "$work/floor/index.js"
toml "$work/floor" sieve-bench-floor-proxy none
printf '[vars]\nUPSTREAM = "%s"\n' "$upstream" >> "$work/floor/wrangler.toml"
start floor "$work/floor"
urls=()
for t in "${targets[@]}"; do port="port_$t"; urls+=("$t=http://127.0.0.1:${!port}/mcp"); done
ready "${urls[@]#*=}"
timeout 300 node bench/gateway-docs.mjs check "$work/calls.txt" "direct=$upstream" "${urls[@]}"

echo "== tools/call (64 tools), ${targets[*]}, 1 and $many connections, ${warm} s warm-up + ${seconds} s, $rounds rounds, $cores cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  for c in 1 $([ "$many" = 0 ] || echo "$many"); do
    conns=$c; threads=$((c < 2 ? 1 : 2))
    for k in "${!targets[@]}"; do
      t="${targets[$(((k + round) % ${#targets[@]}))]}"
      port="port_$t"; pg="pg_$t"
      floor="call-floor-$c"; [ "$t" != floor ] || floor=""
      run "call-$t-$c" "tools/call, $t ($c conn.)" "$floor" "http://127.0.0.1:${!port}/mcp" "${!pg},$pg_up" "$work/calls.txt"
    done
  done
  echo "  load average after round $round: $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
node bench/wrk-table.mjs "$work/results.jsonl" "$cores"
[ -z "${BENCH_JSON:-}" ] || cp "$work/results.jsonl" "$BENCH_JSON"
