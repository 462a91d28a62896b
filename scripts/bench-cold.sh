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
# Prints one line a start (the first answer's wall time and the CPU time workerd ran for it, every
# thread, which the machine's other work does not inflate; and workerd's CPU from its start to
# just before that request, which holds the script's load: work a build does at global scope moves
# there, so "start + first answer" is the figure to compare when a build does), the medians of each build, the wasm's
# size (bytes, gzipped) and its compile and instantiation in workerd at load (CPU), which the first
# answer does not include (bench/wasm-load.mjs: LOADS starts each, default 5; LOADS=0 skips it).
# THIS=DIR measures DIR's entry.mjs, build and code instead of worker/'s. PREPARED=1 (with
# DOC=synth) puts the document in its prepared form (`mcp-sieve prepare`, MCP_SIEVE_BIN or
# target/debug/mcp-sieve) for this build, and as JSON for BASE (an earlier build may not read it);
# BASE_BIN=FILE (an mcp-sieve binary of BASE's tree) prepares BASE's too, in BASE's own format.
# Each start has a session secret in its .dev.vars, as a deployment has and as run.sh keeps one
# (without it every isolate logs a warning at its first request: 8–10 ms of it under wrangler
# dev); SECRET=0 leaves it out, as the rounds before 2026-11-28 ran.
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
# entry.mjs imports code mode's runner (worker/code, ea1001e) beside the build.
# THIS=DIR measures DIR/entry.mjs and DIR/build (and DIR/code) instead of worker/'s.
this="${THIS:-worker}"
cp -r "$this/entry.mjs" "$this/build" "$this/code" "$work/this-snap/"
if [ -n "$base" ]; then
  [ -f "$base/entry.mjs" ] && [ -d "$base/build" ] || { echo "BASE=DIR needs DIR/entry.mjs and DIR/build" >&2; exit 2; }
  mkdir -p "$work/base-snap"
  cp -r "$base/entry.mjs" "$base/build" "$work/base-snap/"
  [ ! -d "$base/code" ] || cp -r "$base/code" "$work/base-snap/"
  builds+=(base)
fi
if [ "$doc" = synth ]; then
  synth=(cargo run -q --release --features testing --example synth_catalog --)
  # Either build of the example writes the same document (seeded).
  [ ! -x target/debug/examples/synth_catalog ] || synth=(target/debug/examples/synth_catalog)
  [ ! -x target/release/examples/synth_catalog ] || synth=(target/release/examples/synth_catalog)
  "${synth[@]}" 5000 0 42 50 > "$work/catalog.json"
  cp "$work/catalog.json" "$work/this.doc"
  cp "$work/catalog.json" "$work/base.doc"
  if [ "${PREPARED:-}" = 1 ]; then
    "${MCP_SIEVE_BIN:-target/debug/mcp-sieve}" prepare "$work/catalog.json" -o "$work/this.doc" 2> /dev/null
    [ -z "${BASE_BIN:-}" ] || "$BASE_BIN" prepare "$work/catalog.json" -o "$work/base.doc" 2> /dev/null
  fi
fi

# CPU time (ns) run so far by the workerd processes of process group $1, every thread (schedstat:
# the scheduler's own count, to the nanosecond, so the machine's other work does not count).
workerd_ns() {
  local pid sum=0 t
  for pid in $(pgrep -g "$1" workerd); do
    for t in /proc/"$pid"/task/*/schedstat; do
      sum=$((sum + $(cut -d' ' -f1 "$t" 2>/dev/null || echo 0)))
    done
  done
  echo "$sum"
}

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
    [ "${SECRET:-1}" = 0 ] || echo "MCP_SIEVE_SESSION_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/$name/.dev.vars"
    [ "$doc" != synth ] || kv_catalog "$name" "$work/$name" "$work/$b.doc"
    port="$(free_port)"; ins="$(free_port)"
    # The log exists before wrangler starts, so the wait below never reads a missing file.
    : > "$work/$name.log"
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
    c0=$(workerd_ns "$pg")
    first=$(ask "http://127.0.0.1:$port/mcp")
    c1=$(workerd_ns "$pg")
    second=$(ask "http://127.0.0.1:$port/mcp")
    cpu=$(( (c1 - c0) / 1000 ))
    boot=$(( c0 / 1000 ))
    echo "$b start $i ($doc catalog$([ "${PREPARED:-}" != 1 ] || { [ "$b" != this ] && [ -z "${BASE_BIN:-}" ]; } || echo ", prepared")): first answer ${first% *} s (HTTP ${first#* }; workerd CPU $((cpu / 1000)).$(printf %03d $((cpu % 1000))) ms; from workerd's start to the request $((boot / 1000)).$(printf %03d $((boot % 1000))) ms), next ${second% *} s (HTTP ${second#* })"
    echo "${first% *}" >> "$work/$b.firsts"
    echo "$cpu" >> "$work/$b.cpus"
    echo "$boot" >> "$work/$b.boots"
    echo "$((boot + cpu))" >> "$work/$b.totals"
    stop_group "$pg"
    wait "$pg" 2>/dev/null || true
  done
done
for b in "${builds[@]}"; do
  wasm="$work/$b-snap/build/index_bg.wasm"
  echo "$b: first answer median $(sort -n "$work/$b.firsts" | awk '{ a[NR] = $1 } END { printf "%.1f ms", 1000 * a[int((NR + 1) / 2)] }') of $starts ($doc catalog), workerd CPU median $(sort -n "$work/$b.cpus" | awk '{ a[NR] = $1 } END { printf "%.1f ms", a[int((NR + 1) / 2)] / 1000 }'), from workerd's start to the request $(sort -n "$work/$b.boots" | awk '{ a[NR] = $1 } END { printf "%.1f ms", a[int((NR + 1) / 2)] / 1000 }'), start + first answer $(sort -n "$work/$b.totals" | awk '{ a[NR] = $1 } END { printf "%.1f ms", a[int((NR + 1) / 2)] / 1000 }'); wasm $(stat -c %s "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
  [ "${LOADS:-5}" = 0 ] || node bench/wasm-load.mjs "$wasm" "${LOADS:-5}" | tail -n 1
done
