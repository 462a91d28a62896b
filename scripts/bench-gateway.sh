#!/usr/bin/env bash
# Gateway benchmark (a script, not a test): what mcp-sieve in front of upstream servers costs,
# with wrk (C, Lua request script bench/wrk-list.lua), 127.0.0.1 only, a 2 s warm-up then SECONDS
# (default 5) per target, in ROUNDS (default 3) rounds that run every target in turn (the table
# shows medians, and each ratio within its round). Requests are stateless 2026-07-28 (no session
# to open; every target serves that era), and for the native gateway also 2025-11-25 in 32
# sessions opened first. The gateways discover the upstream's era: ours offers 2026-07-28, so
# they speak it statelessly upstream, one request per call (before that, each stateless call was
# forwarded in a fresh upstream session: three round trips).
#
# The upstream is our own native server (target/release/mcp-sieve serve) serving a synthetic
# catalog: its tools answer tools/call with a simulated result in a few microseconds of Rust on
# tokio's threads, so its own cost is low and steady and the gateways' cost stands out (the
# official SDK's Node server serves ~30× fewer requests/s on this machine: its cost and its
# garbage collector's pauses would be most of what is measured).
#
# tools/call (64 tools of upstream u1, in turn), at 1 connection (latency: what a call waits) and
# at CONNS (default 32) connections (throughput), against:
#   direct        the upstream u1 (1,000 tools) called directly (stateless, and in 32 sessions);
#   native        the native gateway (release build) fronting u1…u5, forwarding to u1 (stateless,
#                 and in 32 sessions);
#   floor-proxy   a no-op JavaScript Worker under wrangler dev that reads the POST and sends it to
#                 u1, answering its response (bench/floor-proxy-worker.mjs): the Worker floor;
#   worker        the mcp-sieve Worker (MCP only, the document in local KV) as a gateway fronting
#                 u1…u5, forwarding to u1.
# tools/list (the load benchmark's random filters, 100-tool pages) of 5,000 tools at CONNS
# connections, the same 5,000 served
#   as one catalog:   the native server, and the Worker, each with the catalog document;
#   from 5 upstreams: the native gateway and the Worker gateway, whose document names u1…u5 (1,000
#                     tools each, cut from the same catalog, prefix "" so names stay) with the
#                     catalog's groups, tags and concerns.
# Before the load: 200 random filters give the same first page on the four list targets as the
# filter semantics in plain JS, and 20 calls give the same result on the four call targets.
# Prints a markdown table (bench/wrk-table.mjs): requests/s, p50, p99, share of the target's
# floor (direct for the native gateway, the proxy floor for the Worker, one catalog for the
# gathered lists) and the p50 above it, per round; server CPU counts the upstream's too.
#   scripts/bench-gateway.sh [SECONDS]
#   ROUNDS=3 CONNS=32; SKIP_BUILD=1 reuses the last builds (target/release/mcp-sieve,
#   worker/build) instead of running bootstrap.sh, build.sh and cargo build --release;
#   BENCH_JSON=FILE keeps the raw results (one JSON line per target and round).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"
rounds="${ROUNDS:-3}"
many="${CONNS:-32}"
warm=2
tools=5000
parts=5
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
if [ "${SKIP_BUILD:-}" != 1 ]; then
  scripts/bootstrap.sh
  scripts/build.sh
  cargo build -q --release -p mcp-sieve-server
fi
[ -f worker/build/index.js ] || { echo "no Worker build (worker/build/index.js): run scripts/build.sh" >&2; exit 1; }
[ -x target/release/mcp-sieve ] || { echo "no release build: cargo build --release -p mcp-sieve-server" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_cleanup EXIT

# The catalog, its five parts, and the upstreams: the whole catalog (the native "one catalog"
# target) and one server per part.
cargo run -q --release --features testing --example synth_catalog -- "$tools" 0 42 100 > "$work/catalog.json"
node bench/gateway-docs.mjs split "$work/catalog.json" "$parts" "$work"
start_native one serve --catalog "$work/catalog.json"
urls=()
for k in $(seq 1 "$parts"); do
  start_native "u$k" serve --catalog "$work/part-$k.json"
  port="port_u$k"
  urls+=("http://127.0.0.1:${!port}/mcp")
done
ready "http://127.0.0.1:$port_one/mcp" "${urls[@]}"
node bench/gateway-docs.mjs gateway "$work/catalog.json" "${urls[@]}" > "$work/gateway.json"
node bench/gateway-docs.mjs calls "$work/catalog.json" 64 "$work/calls.txt" "$work/calls-legacy.txt"

# The native gateway; the Worker twice (gateway, one catalog), each MCP only with its document in
# local KV; the proxy floor.
start_native native serve --catalog "$work/gateway.json"
mcp_only_worker "$work/worker"
kv_catalog worker "$work/worker" "$work/gateway.json"
start worker "$work/worker"
kv_catalog whole "$work/worker"
start whole "$work/worker"
mkdir -p "$work/floor"
cp bench/floor-proxy-worker.mjs "$work/floor/index.js"
toml "$work/floor" sieve-bench-floor-proxy none
printf '[vars]\nUPSTREAM = "%s"\n' "${urls[0]}" >> "$work/floor/wrangler.toml"
start floor "$work/floor"
native="http://127.0.0.1:$port_native/mcp"
worker="http://127.0.0.1:$port_worker/mcp"
whole="http://127.0.0.1:$port_whole/mcp"
floor="http://127.0.0.1:$port_floor/mcp"
ready "$native" "$worker" "$whole" "$floor"

# Same answers first: lists against the filter semantics, calls against the upstream's own.
timeout 600 node bench/wrk-prepare.mjs --catalog "$work/catalog.json" --out "$work" --check 200 \
  --target "one=http://127.0.0.1:$port_one/mcp:modern" --target "native=$native:modern" \
  --target "whole=$whole:modern" --target "worker=$worker:modern"
timeout 300 node bench/gateway-docs.mjs check "$work/calls.txt" "direct=${urls[0]}" "native=$native" "worker=$worker" "floor=$floor"
# 32 sessions each on the upstream and the native gateway, for the calls in the 2025-11-25 era.
for c in 1 "$many"; do
  timeout 120 node bench/gateway-docs.mjs sessions "${urls[0]}" 32 "$work/sessions-call-direct-s-$c.txt"
  timeout 120 node bench/gateway-docs.mjs sessions "$native" 32 "$work/sessions-call-native-s-$c.txt"
done

up="$pg_u1"
echo "== tools/call (64 tools of u1) at 1 and $many connections; tools/list of $tools tools (random filters, 100-tool pages) at $many connections; 2026-07-28 stateless (and 2025-11-25 in 32 sessions for the native gateway); wrk, ${warm} s warm-up + ${seconds} s each, $rounds rounds, 127.0.0.1, $cores cores"
for round in $(seq 1 "$rounds"); do
  for c in 1 "$many"; do
    conns=$c; threads=$((c < 2 ? 1 : 2))
    run "call-direct-$c" "tools/call, upstream directly, stateless ($c conn.)" "" "${urls[0]}" "$up" "$work/calls.txt"
    run "call-native-$c" "tools/call, native gateway, stateless ($c conn.)" "call-direct-$c" "$native" "$pg_native,$up" "$work/calls.txt"
    run "call-direct-s-$c" "tools/call, upstream directly, 32 sessions ($c conn.)" "" "${urls[0]}" "$up" "$work/calls-legacy.txt"
    run "call-native-s-$c" "tools/call, native gateway, 32 sessions ($c conn.)" "call-direct-s-$c" "$native" "$pg_native,$up" "$work/calls-legacy.txt"
    run "call-floor-$c" "tools/call, floor: JS Worker proxy, stateless ($c conn.)" "" "$floor" "$pg_floor,$up" "$work/calls.txt"
    run "call-worker-$c" "tools/call, Worker gateway, stateless ($c conn.)" "call-floor-$c" "$worker" "$pg_worker,$up" "$work/calls.txt"
  done
  conns=$many; threads=2
  run list-one "tools/list, native, one catalog of $tools" "" "http://127.0.0.1:$port_one/mcp" "$pg_one"
  run list-native "tools/list, native gateway, $parts upstreams × $((tools / parts))" list-one "$native" "$pg_native"
  run list-whole "tools/list, Worker, one catalog of $tools" "" "$whole" "$pg_whole"
  run list-worker "tools/list, Worker gateway, $parts upstreams × $((tools / parts))" list-whole "$worker" "$pg_worker"
done
echo
node bench/wrk-table.mjs "$work/results.jsonl" "$cores"
[ -z "${BENCH_JSON:-}" ] || cp "$work/results.jsonl" "$BENCH_JSON"
