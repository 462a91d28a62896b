#!/usr/bin/env bash
# What operating costs (issue 42 item 6; a script, not a test): the native server (release) with
# metrics off and no limits, then with metrics on (the default) and one rate limit that every call
# counts against (never reached), under wrk (bench/wrk-list.lua, 2026-07-28 stateless requests,
# 127.0.0.1 only): tools/call of `echo` and a filtered tools/list over a 1,000-tool catalog.
# Prints requests/s, p50 and p99 of each, and the ratios (goal: >= 95% of the throughput, p99 not
# more than 10% worse).
#   scripts/bench-operate.sh [SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"; conns="${2:-32}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
cargo build -q --release -p mcp-sieve-server
work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

node -e '
const tools = [{ name: "echo", description: "Echo", inputSchema: { type: "object", properties: { message: { type: "string" } } } }];
for (let i = 0; i < 999; i++) tools.push({ name: `tool_${i}`, description: `Tool ${i} does thing ${i % 17}`, inputSchema: { type: "object" }, groups: [`g${i % 10}`], tags: [i % 3 ? "read-only" : "write"] });
const base = { tools };
require("fs").writeFileSync(process.argv[1], JSON.stringify(base));
require("fs").writeFileSync(process.argv[2], JSON.stringify({ ...base, limits: { rates: [{ id: "all", per: "principal", rate: 1000000000, perSeconds: 1 }] } }));
const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
require("fs").writeFileSync(process.argv[3], JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { message: "hi" }, _meta: meta } }) + "\n");
require("fs").writeFileSync(process.argv[4], JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { filter: { groups: ["g3"] }, _meta: meta } }) + "\n");
' "$work/plain.json" "$work/limited.json" "$work/call.txt" "$work/list.txt"

run() { # label catalog bodies extra-args...
  local label="$1" catalog="$2" bodies="$3"; shift 3
  local port; port="$(free_port)"
  target/release/mcp-sieve serve --catalog "$catalog" --host 127.0.0.1 --port "$port" "$@" > "$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "http://127.0.0.1:$port/mcp" && break
    sleep 0.1
  done
  BODIES="$bodies" wrk -t2 -c"$conns" -d3s -s bench/wrk-list.lua "http://127.0.0.1:$port/mcp" >/dev/null
  local out; out=$(BODIES="$bodies" wrk -t2 -c"$conns" -d"${seconds}s" -s bench/wrk-list.lua "http://127.0.0.1:$port/mcp" | tail -1)
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  echo "$label $out"
}

results="$work/results.txt"
# Alternated, twice each: the best run of each counts (a shared machine's noise only slows).
for round in 1 2; do
  for what in call list; do
    run "$what off" "$work/plain.json" "$work/$what.txt" --metrics off >> "$results"
    run "$what on" "$work/limited.json" "$work/$what.txt" >> "$results"
  done
done
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => { const i = l.indexOf("{"); const [what, mode] = l.slice(0, i).trim().split(" "); return { what, mode, ...JSON.parse(l.slice(i)) }; });
const pick = (w, m) => lines.filter((x) => x.what === w && x.mode === m).sort((a, b) => b.rps - a.rps)[0];
const rps = (x) => x.rps;
console.log("| request | metrics off, no limit: req/s, p50, p99 (ms) | metrics on + one limit: req/s, p50, p99 (ms) | throughput ratio | p99 ratio | errors |");
console.log("|---|---|---|---|---|---|");
for (const w of ["call", "list"]) {
  const a = pick(w, "off"), b = pick(w, "on");
  console.log(`| ${w === "call" ? "tools/call echo" : "tools/list (filtered)"} | ${Math.round(rps(a))}, ${a.p50}, ${a.p99} | ${Math.round(rps(b))}, ${b.p50}, ${b.p99} | ${(100 * rps(b) / rps(a)).toFixed(1)}% | ${(b.p99 / a.p99).toFixed(2)} | ${a.errors}/${b.errors} |`);
}
' "$results"
