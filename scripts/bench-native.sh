#!/usr/bin/env bash
# Native load benchmark (a script, not a test): filtered tools/list over a synthetic catalog of N
# tools (default 5,000), 32 connections, SECONDS (default 10) per configuration, wrk as the load
# generator (a C program with a Lua request script, bench/wrk-list.lua), 127.0.0.1 only, against
#   - the native server (target/release/mcp-sieve, hyper + tokio), in one 2025-11-25 session and
#     stateless (2026-07-28);
#   - the official TypeScript SDK reference server in Node (bench/reference-server.mjs: same
#     catalog, same filter semantics, same page size), in one session.
# Before the load, 200 random filters must give the same first page on every target.
# Prints requests/s, p50, p99 and the ratios to the reference.
#   scripts/bench-native.sh [TOOLS] [SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${1:-5000}"; seconds="${2:-10}"; conns="${3:-32}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
cargo build -q --release -p mcp-sieve-server
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

cargo run -q --release --features testing --example synth_catalog -- "$tools" 0 42 100 > "$work/catalog.json"
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
nport="$(free_port)"; rport="$(free_port)"
target/release/mcp-sieve serve --catalog "$work/catalog.json" --host 127.0.0.1 --port "$nport" > "$work/native.log" 2>&1 &
pids+=($!)
node bench/reference-server.mjs "$work/catalog.json" "$rport" > "$work/reference.log" 2>&1 &
pids+=($!)
for url in "http://127.0.0.1:$nport/mcp" "http://127.0.0.1:$rport/mcp"; do
  for _ in $(seq 1 150); do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$url" && break
    sleep 0.2
  done
done

# Same answers first (bench/load.mjs with no load: only its same-first-page check).
node bench/load.mjs --seconds 0 --check 200 \
  --target "native (session)=http://127.0.0.1:$nport/mcp:legacy" \
  --target "native (2026-07-28)=http://127.0.0.1:$nport/mcp:modern" \
  --target "reference SDK (node)=http://127.0.0.1:$rport/mcp:legacy"

# Request bodies: the load benchmark's random filters, one JSON body per line, per era.
node --input-type=module -e '
import { randomFilters } from "./bench/filters.mjs";
import fs from "node:fs";
const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
const fs_ = randomFilters(1904, 4096);
fs.writeFileSync(process.argv[1], fs_.map((filter, i) => JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/list", params: { filter } })).join("\n") + "\n");
fs.writeFileSync(process.argv[2], fs_.map((filter, i) => JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/list", params: { filter, _meta: meta } })).join("\n") + "\n");
' "$work/legacy.txt" "$work/modern.txt"

# One session per server, opened as a client would.
open_session() {
  local url="$1" sid
  sid=$(curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    "$url" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url"
  echo "$sid"
}
nsid="$(open_session "http://127.0.0.1:$nport/mcp")"
rsid="$(open_session "http://127.0.0.1:$rport/mcp")"

run() { # name url session bodies
  local out
  SESSION="$3" BODIES="$4" wrk -t2 -c"$conns" -d3s -s bench/wrk-list.lua "$2" >/dev/null # warm-up (JIT, caches)
  out=$(SESSION="$3" BODIES="$4" wrk -t2 -c"$conns" -d"${seconds}s" -s bench/wrk-list.lua "$2" | tail -1)
  echo "$1	$out" | tee -a "$work/results.tsv"
}
echo "== tools/list, $tools tools, random filters, $conns connections, ${seconds} s each, wrk, 127.0.0.1"
run "native (session)" "http://127.0.0.1:$nport/mcp" "$nsid" "$work/legacy.txt"
run "native (2026-07-28)" "http://127.0.0.1:$nport/mcp" "" "$work/modern.txt"
run "reference SDK (node, session)" "http://127.0.0.1:$rport/mcp" "$rsid" "$work/legacy.txt"
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => { const [name, j] = l.split("\t"); return { name, ...JSON.parse(j) }; });
const ref = rows.find((r) => r.name.startsWith("reference"));
console.log("\n| target | req/s | p50 ms | p99 ms | errors | req/s vs reference | p99 vs reference |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} | ${(r.rps / ref.rps).toFixed(2)}x | ${(r.p99 / ref.p99).toFixed(2)} |`);
' "$work/results.tsv"
