#!/usr/bin/env bash
# The Worker's cold start (issue 43; a script, not a test): the time of the first answer of a
# fresh isolate, and of the next, for this tree's Worker build (worker/build; SKIP_BUILD=1 takes
# it as built) and, with BASE=DIR (an earlier build: DIR/entry.mjs and DIR/build), that one, in
# turn, STARTS times each (default 3). Each start is a new `wrangler dev` (MCP only, no demo
# page, a fresh local state), on 127.0.0.1, stopped by its process group before the next. Its
# first request is the measured one: the script waits until wrangler says it is ready and one
# second more, without sending anything. Two documents: the embedded default catalog, and
# (DOC=synth) the 5,000-tool synthetic one in KV (read, parsed and indexed on that request).
#   scripts/bench-cold.sh            STARTS=5 DOC=synth BASE=/tmp/base scripts/bench-cold.sh
# Prints one line a start and the wasm's size (bytes, gzipped) of each build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_CI_DISABLE_CONFIG_WATCHING=true
starts="${STARTS:-3}"
doc="${DOC:-default}"
base="${BASE:-}"
[ "${SKIP_BUILD:-}" = 1 ] || scripts/build.sh > /dev/null

work="$(mktemp -d)"
pids=()
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_cleanup EXIT

builds=(this)
mkdir -p "$work/this-snap"
cp -r worker/entry.mjs worker/build "$work/this-snap/"
if [ -n "$base" ]; then
  [ -f "$base/entry.mjs" ] && [ -d "$base/build" ] || { echo "BASE=DIR needs DIR/entry.mjs and DIR/build" >&2; exit 2; }
  mkdir -p "$work/base-snap"
  cp -r "$base/entry.mjs" "$base/build" "$work/base-snap/"
  builds+=(base)
fi
if [ "$doc" = synth ]; then
  synth=(cargo run -q --release --features testing --example synth_catalog --)
  [ ! -x target/release/examples/synth_catalog ] || synth=(target/release/examples/synth_catalog)
  "${synth[@]}" 5000 0 42 50 > "$work/catalog.json"
fi

# One MCP request (2026-07-28, stateless): prints its time in seconds and HTTP status.
ask() {
  curl -s -o /dev/null -m 60 -w '%{time_total} %{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"cold","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' \
    "$1"
}

for i in $(seq 1 "$starts"); do
  for b in "${builds[@]}"; do
    name="$b-$i"
    mcp_only_worker "$work/$name"
    sed -i "s|^main = .*|main = \"$work/$b-snap/entry.mjs\"|" "$work/$name/wrangler.toml"
    [ "$doc" != synth ] || kv_catalog "$name" "$work/$name"
    port="$(free_port)"; ins="$(free_port)"
    setsid wrangler dev --cwd "$work/$name" --ip 127.0.0.1 --port "$port" --inspector-port "$ins" \
      --show-interactive-dev-session=false --log-level info --persist-to "$work/state-$name" > "$work/$name.log" 2>&1 &
    pg=$!
    pids+=("$pg")
    for _ in $(seq 1 300); do
      grep -q "Ready on" "$work/$name.log" && break
      kill -0 "$pg" 2>/dev/null || { echo "wrangler dev exited:" >&2; tail -20 "$work/$name.log" >&2; exit 1; }
      sleep 0.2
    done
    grep -q "Ready on" "$work/$name.log" || { echo "wrangler dev not ready in 60 s" >&2; exit 1; }
    sleep 1
    first=$(ask "http://127.0.0.1:$port/mcp")
    second=$(ask "http://127.0.0.1:$port/mcp")
    echo "$b start $i ($doc catalog): first answer ${first% *} s (HTTP ${first#* }), next ${second% *} s (HTTP ${second#* })"
    kill -- "-$pg" 2>/dev/null || true
    wait "$pg" 2>/dev/null || true
  done
done
for b in "${builds[@]}"; do
  wasm="$work/$b-snap/build/index_bg.wasm"
  echo "$b: wasm $(stat -c %s "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
done
