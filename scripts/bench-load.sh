#!/usr/bin/env bash
# Load benchmark (a script, not a test): tools/list with random filters over a synthetic catalog
# of N tools (default 5,000), at concurrency 1 and 32, for SECONDS (default 10) per
# configuration, on 127.0.0.1 only, against
#   - the Worker in `wrangler dev` (local workerd) serving that catalog via MCP_SIEVE_CONFIG,
#     in the stateless 2026-07-28 era and in the 2025-11-25 era with a session;
#   - a reference server written with the official TypeScript SDK serving the same catalog with
#     the same filter semantics and page size, in Node (bench/reference-server.mjs) and in
#     workerd under its own `wrangler dev` (bench/reference-worker.mjs, bundled by esbuild);
#   - the floor: a Worker that does no MCP work (bench/noop-worker.mjs) under `wrangler dev`,
#     the most any Worker can serve there on this machine.
# Prints requests/s, p50, p99, the ratios, and the Worker's wasm size gzipped.
#   scripts/bench-load.sh [TOOLS] [SECONDS]        (SKIP_BUILD=1 reuses the last build)
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${1:-5000}"
seconds="${2:-10}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false
if [ "${SKIP_BUILD:-}" != 1 ]; then
  scripts/bootstrap.sh
  scripts/build.sh
fi
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

cargo run -q --release --features testing --example synth_catalog -- "$tools" 0 42 100 > "$work/catalog.json"
# The document is megabytes: too long for a Worker variable (a command-line argument, 128 KB), so
# it goes in the MCP_SIEVE_KV namespace (key "config") of a fresh local state directory.
wrangler kv key put config --path "$work/catalog.json" --binding MCP_SIEVE_KV --local \
  --cwd worker --persist-to "$work/state" > /dev/null
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
wport="$(free_port)"; rport="$(free_port)"; xport="$(free_port)"; fport="$(free_port)"
# Each wrangler dev also opens an inspector port; chosen here, as wranglers started together race for the default.
ins=("$(free_port)" "$(free_port)" "$(free_port)")
mkdir -p "$work/reference-worker"
esbuild bench/reference-worker.mjs --bundle --format=esm --platform=browser --conditions=workerd,worker,browser \
  --alias:bench-catalog="$work/catalog.json" --outfile="$work/reference-worker/index.js" --log-level=warning
printf 'name = "sieve-bench-reference"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\ncompatibility_flags = ["nodejs_compat"]\n' \
  > "$work/reference-worker/wrangler.toml"
mkdir -p "$work/noop-worker"
cp bench/noop-worker.mjs "$work/noop-worker/index.js"
printf 'name = "sieve-bench-floor"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n' > "$work/noop-worker/wrangler.toml"

setsid wrangler dev --cwd worker --ip 127.0.0.1 --port "$wport" --inspector-port "${ins[0]}" --show-interactive-dev-session=false \
  --log-level warn --persist-to "$work/state" > "$work/wrangler.log" 2>&1 &
pids+=($!)
setsid node bench/reference-server.mjs "$work/catalog.json" "$rport" > "$work/reference.log" 2>&1 &
pids+=($!)
setsid wrangler dev --cwd "$work/reference-worker" --ip 127.0.0.1 --port "$xport" --inspector-port "${ins[1]}" --show-interactive-dev-session=false \
  --log-level warn --persist-to "$work/state-reference" > "$work/reference-worker.log" 2>&1 &
pids+=($!)
setsid wrangler dev --cwd "$work/noop-worker" --ip 127.0.0.1 --port "$fport" --inspector-port "${ins[2]}" --show-interactive-dev-session=false \
  --log-level warn --persist-to "$work/state-floor" > "$work/noop-worker.log" 2>&1 &
pids+=($!)
for url in "http://127.0.0.1:$wport/mcp" "http://127.0.0.1:$rport/mcp" "http://127.0.0.1:$xport/mcp" "http://127.0.0.1:$fport/mcp"; do
  for _ in $(seq 1 450); do
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "a server exited:"; for f in "$work"/*.log; do tail -n 20 "$f"; done; exit 1; }; done
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$url" && break
    sleep 0.2
  done
done
# Fail early, with the Worker's own message, if it did not load the catalog.
curl -sf -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' \
  -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' \
  "http://127.0.0.1:$wport/mcp" | grep -q mcp-sieve-bench || { echo "the Worker did not serve the bench catalog:"; tail -20 "$work/wrangler.log"; exit 1; }

echo "== tools/list, $tools tools, random filters, ${seconds} s per configuration, 127.0.0.1"
node bench/load.mjs --seconds "$seconds" --concurrency 1,32 --json "$work/results.json" \
  --target "sieve-worker (2026-07-28)=http://127.0.0.1:$wport/mcp:modern" \
  --target "sieve-worker (session)=http://127.0.0.1:$wport/mcp:legacy" \
  --target "reference SDK (node)=http://127.0.0.1:$rport/mcp:legacy" \
  --target "reference SDK (workerd)=http://127.0.0.1:$xport/mcp:legacy" \
  --target "no-op Worker (floor)=http://127.0.0.1:$fport/mcp:floor"
node -e '
const { results } = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const ref = (c, where) => results.find((r) => r.target === `reference SDK (${where})` && r.concurrency === c);
console.log("\n| target | concurrency | req/s | p50 ms | p99 ms | req/s vs ref node | p99 vs ref node | req/s vs ref workerd | p99 vs ref workerd |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  const n = ref(r.concurrency, "node"), w = ref(r.concurrency, "workerd");
  console.log(`| ${r.target} | ${r.concurrency} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(r.rps / n.rps).toFixed(2)}x | ${(r.p99 / n.p99).toFixed(2)} | ${(r.rps / w.rps).toFixed(2)}x | ${(r.p99 / w.p99).toFixed(2)} |`);
}
for (const c of [...new Set(results.map((r) => r.concurrency))]) {
  const n = ref(c, "node"), f = results.find((r) => r.era === "floor" && r.concurrency === c);
  if (f) console.log(`c=${c}: 5x the Node reference is ${(5 * n.rps).toFixed(0)} req/s and 1/5 of its p99 ${(n.p99 / 5).toFixed(2)} ms; the no-op Worker serves ${f.rps.toFixed(0)} req/s, p99 ${f.p99.toFixed(2)} ms`);
}' "$work/results.json"
wasm="$(find worker/build -name '*.wasm' | head -1)"
[ -z "$wasm" ] || echo "Worker wasm: $(wc -c < "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) bytes gzipped ($wasm)"
