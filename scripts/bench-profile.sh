#!/usr/bin/env bash
# Profile of the Worker's request path (a script, not a test): serves a synthetic catalog of
# TOOLS tools (default 5,000; two concerns declared with defaults; pages of PAGE tools, default
# 50, the server's default page size) from local KV under `wrangler dev` on 127.0.0.1, then samples the
# isolate's CPU through the inspector (bench/profile-worker.mjs) while wrk sends SECONDS (default
# 8) of stateless 2026-07-28 filtered tools/list requests at CONNS (default 32) connections
# (MODE=session: SESSIONS 2025-11-25 sessions, default 1, that wrk cycles through; the profile
# covers every inspector target wrangler lists — the front Worker and the Durable Objects share
# the script's isolate under workerd, so their samples are together; MODE=find: stateless search-mode `find_tools` calls, /mcp?mode=search,
# 2- to 4-word queries of the synthetic catalog's words, so "CPU per request" is CPU per
# find_tools).
# Gateway modes, as scripts/bench-gateway.sh measures them: an upstream (target/release/mcp-sieve
# serve, the synthetic catalog of TOOLS tools) fronted by
#   MODE=gateway       the Worker (MCP only, a gateway document in local KV naming the upstream):
#                      stateless tools/call of the catalog's first 64 tools, forwarded;
#   MODE=gateway-list  the same Worker: stateless filtered tools/list (answered from its cache);
#   MODE=floor         the no-op JavaScript proxy Worker (bench/floor-proxy-worker.mjs): the same
#                      tools/call bodies, proxied — the floor the gateway is compared with.
# Prints the load's figures, self time by function, the request path's stages, CPU per request
# (the isolate's, from the samples; and the whole wrangler process group's, workerd and its
# proxy, from the kernel's ticks: what bounds requests/s when the cores are saturated), the
# isolate's JS heap and the Worker's wasm memory.
#   scripts/bench-profile.sh [TOOLS] [SECONDS]      (needs scripts/build.sh first; the gateway
#   modes also target/release/mcp-sieve; WORKER=DIR profiles MODE=gateway with DIR/entry.mjs and
#   DIR/build instead of worker/: an earlier build, copied; in MODE=stateless it profiles DIR's
#   entry.mjs, build and code served MCP only; DESCRIPTION=N and FILTERS=plain as in
#   scripts/bench-load.sh: descriptions of N bytes or more, issue 63's 256 plain filters)
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${1:-5000}"
seconds="${2:-8}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
mode="${MODE:-stateless}"
conns="${CONNS:-32}"
page="${PAGE:-50}"
sessions="${SESSIONS:-1}"
threads=$((conns < 2 ? 1 : 2))
case "$mode" in
  stateless | session | find | gateway | gateway-list | floor) ;;
  *) echo "MODE must be stateless, session, find, gateway, gateway-list or floor" >&2; exit 2 ;;
esac
work="$(mktemp -d)"
pids=()
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_cleanup EXIT

# The catalog generator as last built when there is one (a `cargo run` waits for the shared
# target's lock and rebuilds after anyone's edit of the core); no reload if the build changes.
synth=(cargo run -q --release --features testing --example synth_catalog --)
[ ! -x target/release/examples/synth_catalog ] || synth=(target/release/examples/synth_catalog)
"${synth[@]}" "$tools" 0 42 "$page" "${DESCRIPTION:-0}" > "$work/catalog.json"
export WRANGLER_CI_DISABLE_CONFIG_WATCHING=true
dir=worker
case "$mode" in
  gateway | gateway-list | floor)
    [ -x target/release/mcp-sieve ] || { echo "no release build: cargo build --release -p mcp-sieve-server" >&2; exit 1; }
    start_native up serve --catalog "$work/catalog.json"
    upstream="http://127.0.0.1:$port_up/mcp"
    ready "$upstream"
    node bench/gateway-docs.mjs calls "$work/catalog.json" 64 "$work/calls.txt" "$work/calls-legacy.txt"
    dir="$work/worker"
    if [ "$mode" = floor ]; then
      mkdir -p "$dir"
      cp bench/floor-proxy-worker.mjs "$dir/index.js"
      toml "$dir" sieve-bench-floor-proxy none
      printf '[vars]\nUPSTREAM = "%s"\n' "$upstream" >> "$dir/wrangler.toml"
    else
      mcp_only_worker "$dir"
      [ -z "${WORKER:-}" ] || sed -i "s|^main = .*|main = \"$(cd "$WORKER" && pwd)/entry.mjs\"|" "$dir/wrangler.toml"
      node bench/gateway-docs.mjs gateway "$work/catalog.json" "$upstream" > "$work/gateway.json"
      kv_catalog profile "$dir" "$work/gateway.json"
    fi
    ;;
  *)
    if [ -n "${WORKER:-}" ]; then
      dir="$work/worker"
      mcp_only_worker "$dir"
      sed -i "s|^main = .*|main = \"$(cd "$WORKER" && pwd)/entry.mjs\"|" "$dir/wrangler.toml"
    fi
    kv_catalog profile "$dir" ;;
esac
port="$(free_port)"; ins="$(free_port)"
setsid wrangler dev --cwd "$dir" --ip 127.0.0.1 --port "$port" --inspector-port "$ins" \
  --show-interactive-dev-session=false --log-level warn --persist-to "$work/state-profile" \
  --var MCP_SIEVE_DIAGNOSTICS:1 > "$work/wrangler.log" 2>&1 &
pid=$!
pids+=("$pid")
url="http://127.0.0.1:$port/mcp"
[ "$mode" != find ] || url="$url?mode=search"
ready "$url"

# 1,000 random filters (bench/filters.mjs) as stateless request bodies, one per line; for
# MODE=find, 1,000 find_tools queries of 2 to 4 words from the synthetic catalog's vocabulary.
node --input-type=module -e '
import { plainFilters, randomFilters, rng } from "./bench/filters.mjs";
const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "profile", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
const stateless = process.argv[1] !== "session";
if (process.argv[1] === "find") {
  const words = ["get", "list", "create", "update", "delete", "search", "sync", "export", "tool", "item",
    "identifier", "results", "synthetic", "benchmarks", "work", "largest", "number", "thing"];
  const r = rng(7);
  for (let i = 0; i < 1000; i++) {
    const query = Array.from({ length: 2 + Math.floor(r() * 3) }, () => words[Math.floor(r() * words.length)]).join(" ");
    console.log(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "find_tools", arguments: { query }, _meta: meta } }));
  }
  process.exit(0);
}
for (const filter of process.argv[2] === "plain" ? plainFilters(1904, 256) : randomFilters(7, 1000)) {
  const params = stateless ? { filter, _meta: meta } : { filter };
  console.log(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params }));
}' "$mode" "${FILTERS:-random}" > "$work/bodies.jsonl"
case "$mode" in gateway | floor) cp "$work/calls.txt" "$work/bodies.jsonl" ;; esac
session=""
for _ in $(seq 1 "$([ "$mode" = session ] && echo "$sessions" || echo 0)"); do
  one="$(open_session "$url" profile)"
  session="${session:+$session,}$one"
done
# Warm-up, then the profiled run; the kernel's CPU ticks of the wrangler process group (workerd
# and its proxy) and of the upstream around it.
BODIES="$work/bodies.jsonl" SESSIONS="$session" THREADS="$threads" wrk -t"$threads" -c"$conns" -d2s -s bench/wrk-list.lua "$url" > /dev/null
echo "== profile: $tools tools, pages of $page, $mode$([ "$mode" = session ] && echo " ($sessions sessions)"), $conns connections, ${seconds} s"
ticks() { group_ticks "$pid"; [ -z "${pg_up:-}" ] && echo 0 || group_ticks "$pg_up"; }
before=($(ticks))
BODIES="$work/bodies.jsonl" SESSIONS="$session" THREADS="$threads" node --experimental-websocket --no-warnings bench/profile-worker.mjs "$ins" -- \
  wrk -t"$threads" -c"$conns" -d"${seconds}s" --latency -s bench/wrk-list.lua "$url" | tee "$work/profile.txt"
after=($(ticks))
requests="$(sed -n 's/.*"requests": \([0-9]*\).*/\1/p' "$work/profile.txt" | head -1)"
awk -v a="${before[0]}" -v b="${after[0]}" -v c="${before[1]}" -v d="${after[1]}" -v n="$requests" -v k="$clk" 'BEGIN {
  printf "CPU per request of the wrangler process group (workerd and its proxy; the profiler'"'"'s own share included): %.0f µs", (b - a) / k / n * 1e6
  if (d > c) printf "; of the upstream: %.0f µs", (d - c) / k / n * 1e6
  print "" }'
# The Worker's wasm memory (reported with MCP_SIEVE_DIAGNOSTICS, a test-only switch) after the load.
name=(-H 'Mcp-Method: tools/list')
[ "$mode" != find ] || name=(-H 'Mcp-Method: tools/call' -H 'Mcp-Name: find_tools')
[ "$mode" != gateway ] || name=(-H 'Mcp-Method: tools/call' -H "Mcp-Name: $(head -1 "$work/bodies.jsonl" | sed 's/.*"params":{"name":"\([^"]*\)".*/\1/')")
curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' \
  -H 'MCP-Protocol-Version: 2026-07-28' "${name[@]}" --data-binary "@$(head -1 "$work/bodies.jsonl" > "$work/one.json"; echo "$work/one.json")" "$url" \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="x-sieve-wasm-memory"{printf "Worker wasm memory: %.1f MiB\n", $2/1048576}'
