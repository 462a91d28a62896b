#!/usr/bin/env bash
# Profile of the Worker's request path (a script, not a test): serves a synthetic catalog of
# TOOLS tools (default 5,000) from local KV under `wrangler dev` on 127.0.0.1, then samples the
# isolate's CPU through the inspector (bench/profile-worker.mjs) while wrk sends SECONDS (default
# 8) of stateless 2026-07-28 filtered tools/list requests at 32 connections (MODE=session: one
# 2025-11-25 session; the profile is then the front isolate's, the Durable Object's is separate;
# MODE=find: stateless search-mode `find_tools` calls, /mcp?mode=search, 2- to 4-word queries of
# the synthetic catalog's words, so "CPU per request" is CPU per find_tools).
# Prints the load's figures, self time by function, the request path's stages, CPU per request,
# the isolate's JS heap and the Worker's wasm memory.
#   scripts/bench-profile.sh [TOOLS] [SECONDS]      (needs scripts/build.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${1:-5000}"
seconds="${2:-8}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
work="$(mktemp -d)"
pid=""
cleanup() { [ -z "$pid" ] || kill -- "-$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

cargo run -q --release --features testing --example synth_catalog -- "$tools" 0 42 100 > "$work/catalog.json"
wrangler kv key put config --path "$work/catalog.json" --binding MCP_SIEVE_KV --local \
  --cwd worker --persist-to "$work/state" > /dev/null
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
port="$(free_port)"; ins="$(free_port)"
setsid wrangler dev --cwd worker --ip 127.0.0.1 --port "$port" --inspector-port "$ins" \
  --show-interactive-dev-session=false --log-level warn --persist-to "$work/state" \
  --var MCP_SIEVE_DIAGNOSTICS:1 > "$work/wrangler.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port/mcp"
[ "${MODE:-stateless}" != find ] || url="$url?mode=search"
for _ in $(seq 1 450); do
  kill -0 "$pid" 2>/dev/null || { tail -20 "$work/wrangler.log"; exit 1; }
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$url" && break
  sleep 0.2
done

# 1,000 random filters (bench/filters.mjs) as stateless request bodies, one per line; for
# MODE=find, 1,000 find_tools queries of 2 to 4 words from the synthetic catalog's vocabulary.
node --input-type=module -e '
import { randomFilters, rng } from "./bench/filters.mjs";
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
for (const filter of randomFilters(7, 1000)) {
  const params = stateless ? { filter, _meta: meta } : { filter };
  console.log(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params }));
}' "${MODE:-stateless}" > "$work/bodies.jsonl"
session=""
if [ "${MODE:-stateless}" = session ]; then
  session="$(curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"profile","version":"1"}}}' \
    "$url" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')"
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Mcp-Session-Id: $session" -H 'MCP-Protocol-Version: 2025-11-25' \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url"
fi
# Warm-up, then the profiled run.
BODIES="$work/bodies.jsonl" SESSION="$session" wrk -t2 -c32 -d2s -s bench/wrk-list.lua "$url" > /dev/null
echo "== profile: $tools tools, ${MODE:-stateless}, 32 connections, ${seconds} s"
BODIES="$work/bodies.jsonl" SESSION="$session" node --experimental-websocket --no-warnings bench/profile-worker.mjs "$ins" -- \
  wrk -t2 -c32 -d"${seconds}s" --latency -s bench/wrk-list.lua "$url"
# The Worker's wasm memory (reported with MCP_SIEVE_DIAGNOSTICS, a test-only switch) after the load.
name=(-H 'Mcp-Method: tools/list')
[ "${MODE:-stateless}" != find ] || name=(-H 'Mcp-Method: tools/call' -H 'Mcp-Name: find_tools')
curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' \
  -H 'MCP-Protocol-Version: 2026-07-28' "${name[@]}" --data-binary "@$(head -1 "$work/bodies.jsonl" > "$work/one.json"; echo "$work/one.json")" "$url" \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="x-sieve-wasm-memory"{printf "Worker wasm memory: %.1f MiB\n", $2/1048576}'
