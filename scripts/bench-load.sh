#!/usr/bin/env bash
# Load benchmark of the Worker (a script, not a test): filtered `tools/list` with random filters
# over a synthetic catalog of TOOLS tools (default 5,000; 24 groups, 16 tags, two concerns
# declared with defaults, so every request applies them) served with pages of PAGE tools
# (default 50, the server's default page size; 100 for the bigger pages), 32 connections, wrk
# (C, Lua request script bench/wrk-list.lua) with 2 threads, a 3 s warm-up then SECONDS (default
# 10) per target, in ROUNDS (default 3) rounds that run every target in turn (the machine's noise
# drifts over a run: the table shows medians, and each share of a floor within its round),
# 127.0.0.1 only, all targets in one run:
#   worker-stateless  the mcp-sieve Worker serving MCP only: worker/wrangler.toml without its
#                     [assets] block (the demo page), catalog in the MCP_SIEVE_KV namespace,
#                     2026-07-28: no session, version in each body's _meta and the
#                     MCP-Protocol-Version / Mcp-Method headers;
#   worker-session    the same Worker, 2025-11-25: 32 sessions opened first (initialize), one
#                     Durable Object each, the Lua script cycling through them;
#   worker-session4   the same with 4 of those sessions over the 32 connections (8 requests in
#                     flight per session, as a host running tool calls in parallel sends them:
#                     the Durable Object's own serial work queues);
#   worker-assets     the Worker as shipped (`wrangler dev --cwd worker`: the demo page as static
#                     assets, /mcp routed to the Worker first), 2026-07-28;
#   floor-js          floor of the stateless era: a JavaScript Worker reading the body and
#                     answering a fixed page as big as a typical real answer (bench/floor-worker.mjs);
#   floor-assets      the same floor deployed like the shipped Worker: the same static assets
#                     (target/site), /mcp routed to the Worker first (the platform's asset router
#                     runs before it);
#   worker-run        the Worker as `scripts/run.sh --config FILE` serves it: worker/wrangler.toml
#                     with its assets, the catalog put into MCP_SIEVE_KV by scripts/put-config.sh,
#                     a session secret in .dev.vars, and wrangler dev's own log level (run.sh
#                     passes no --log-level: wrangler logs every request, which its proxy Worker
#                     sends to wrangler's Node process over a loopback request), 2026-07-28;
#                     what still differs from run.sh: the copied build, wrangler's watch of its
#                     configuration off and its inspector port chosen, as for every target here;
#   floor-run         floor-assets served the same way (the default log level);
#   floor-do          floor of the session era: the same Worker forwarding each request to a no-op
#                     Durable Object named by its Mcp-Session-Id (32 ids), which answers the page
#                     (the session era's own: the Worker's typical 2025-11-25 answer);
#   floor-do4         the same with 4 of those ids over the 32 connections;
#   handler           peer: the official MCP SDK v2 server behind Cloudflare agents'
#                     createMcpHandler, stateless, 2026-07-28 (bench/peers/handler-worker.mjs);
#   mcpagent          peer: agents' McpAgent, a Durable Object per session, 32 sessions, 2025-11-25
#                     (bench/peers/agent-worker.mjs); mcpagent4: 4 of them over 32 connections;
#   node-ref          peer: the official MCP SDK in Node, 32 sessions (bench/reference-server.mjs);
#   base-stateless, base-session, base-session4: with BASE=DIR (an earlier build: DIR/entry.mjs
#                     and DIR/build, copied before a change), that build served like
#                     worker-stateless, worker-session and worker-session4 — a change's before and
#                     after in one run, each round running both in turn.
# Every peer serves the same catalog with the same filter semantics and page size; before the
# load, 200 random filters must give the same first page on every target but the floors
# (bench/wrk-prepare.mjs), or the script stops. The floors answer pages measured from the
# Worker's own answers (the one nearest their mean size, per era), and the table shows the bytes
# each target answered. Prints a markdown table (requests/s, p50, p99,
# share of the era's floor, work above the floor per request) and the ratios of the Worker to its
# peers (bench/wrk-table.mjs), and the size of the Worker's wasm gzipped.
#   scripts/bench-load.sh [TOOLS] [SECONDS] [PAGE]
#   DESCRIPTION=N lengthens every tool's description to N bytes or more (the catalog generator's
#   fifth argument, examples/synth_catalog.rs; 150: a full page of 50 tools is about 28 KB);
#   FILTERS=plain sends 256 filters of issue 63's outside run (groups ANY of 1-2, tags ALL of 1-2,
#   both, or none: bench/filters.mjs plainFilters) instead of 4,096 of the default shape
#   (FILTERS=random: groups, tags, excludeTags and concerns);
#   SHAPE=outside is DESCRIPTION=150 FILTERS=plain, the shape of issue 63's outside run;
#   BENCH_TARGETS=worker-stateless,floor-js scripts/bench-load.sh    (a subset, comma-separated)
#   SKIP_BUILD=1 reuses the last build (worker/build, the catalog generator) instead of running
#   bootstrap.sh + build.sh; WARM=S sets the warm-up (default 3 s);
#   BENCH_JSON=FILE keeps the raw results (one JSON line per target);
#   THIS=DIR measures DIR/entry.mjs, DIR/build and DIR/code instead of worker/'s (a copy: the
#   shared tree's entry.mjs may be mid-edit and ahead of its build).
# The peers' npm packages (agents, @modelcontextprotocol/server) live in bench/peers/ with their
# own lock file: they need zod 4, the root package's tests use zod 3. Servers run in process
# groups of their own (setsid) and are stopped by those ids on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${1:-5000}"
seconds="${2:-10}"
page="${3:-50}"
conns=32
threads=2
rounds="${ROUNDS:-3}"
warm="${WARM:-3}"
if [ "${SHAPE:-}" = outside ]; then : "${DESCRIPTION:=150}" "${FILTERS:=plain}"
elif [ -n "${SHAPE:-}" ]; then echo "SHAPE: unknown shape '$SHAPE' (known: outside)" >&2; exit 2; fi
description="${DESCRIPTION:-0}"
filters="${FILTERS:-random}"
all="floor-js worker-stateless base-stateless handler floor-assets worker-assets floor-run worker-run floor-do worker-session base-session mcpagent floor-do4 worker-session4 base-session4 mcpagent4 node-ref"
base="${BASE:-}"
this="${THIS:-worker}"
default="${all// /,}"
[ -n "$base" ] || default="$(echo "$default" | sed -E 's/,base-[a-z0-9]+//g')"
targets="${BENCH_TARGETS:-$default}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false

want() { [[ ",$targets," == *",$1,"* ]]; }
# A 32-session target whose sessions are opened: wanted, or its 4-session sibling is.
opens() { want "$1" || want "$1-open"; }
for t in ${targets//,/ }; do
  [[ " $all " == *" $t "* ]] || { echo "BENCH_TARGETS: unknown target '$t' (known: ${all// /, })" >&2; exit 2; }
done
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
if [ "${SKIP_BUILD:-}" != 1 ]; then
  scripts/bootstrap.sh
  scripts/build.sh
fi
# The 4-session targets use 4 of their 32-session sibling's sessions (opened by wrk-prepare.mjs).
want worker-session4 && targets+=",worker-session-open"
want floor-do4 && targets+=",floor-do-open"
want base-session4 && targets+=",base-session-open"
if want base-stateless || opens base-session; then
  [ -n "$base" ] && [ -f "$base/entry.mjs" ] && [ -f "$base/build/index.js" ] \
    || { echo "the base-* targets need BASE=DIR with DIR/entry.mjs and DIR/build (an earlier worker/ build, copied)" >&2; exit 2; }
fi
want mcpagent4 && targets+=",mcpagent-open"
if want worker-stateless || opens worker-session || want worker-assets || want worker-run; then
  [ -f "$this/build/index.js" ] || { echo "no Worker build ($this/build/index.js): run scripts/build.sh" >&2; exit 1; }
fi
if want worker-assets || want floor-assets || want worker-run || want floor-run; then
  # The asset router's cost grows with the files it serves: an empty target/site measures less.
  [ -f target/site/index.html ] && [ -d target/site/pkg ] \
    || { echo "target/site has no demo page (index.html, pkg/): run scripts/build.sh --run" >&2; exit 1; }
fi
if want handler || opens mcpagent; then
  # The peers' packages, installed only when their lock file changed (as bootstrap.sh does).
  stamp=bench/peers/node_modules/.sieve-lock-hash
  lock=$(sha256sum bench/peers/package-lock.json | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
    # npm 11 writes only this platform's optional packages (rolldown's, via agents) into the lock,
    # and `npm ci` then refuses it as out of sync; `npm install --no-save` installs the same
    # locked versions and leaves the lock file as it is.
    (cd bench/peers && { npm ci --no-audit --no-fund --loglevel=error 2>/dev/null \
      || npm install --no-save --no-audit --no-fund --loglevel=error; })
    echo "$lock" > "$stamp"
  fi
fi

work="$(mktemp -d)"
pids=()
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_cleanup EXIT

# SKIP_BUILD=1 also takes the synthetic catalog's generator as last built, when there is one (a
# `cargo run` waits for the shared target's lock and rebuilds after anyone's edit of the core).
synth=(cargo run -q --release --features testing --example synth_catalog --)
[ "${SKIP_BUILD:-}" != 1 ] || [ ! -x target/release/examples/synth_catalog ] || synth=(target/release/examples/synth_catalog)
"${synth[@]}" "$tools" 0 42 "$page" "$description" > "$work/catalog.json"
servers=()
# The Worker as built now, copied: another build of the shared tree during the run would
# otherwise make wrangler dev reload it (a new isolate, another random session secret: every
# session 404) or measure two builds in one run.
export WRANGLER_CI_DISABLE_CONFIG_WATCHING=true
# entry.mjs imports code mode's runner (worker/code) beside the build: copied with it.
mkdir -p "$work/snap"
cp -r "$this/entry.mjs" "$this/build" "$this/code" "$work/snap/"
if want worker-stateless || opens worker-session; then
  # MCP only: the shipped configuration without its [assets] block.
  mcp_only_worker "$work/worker"
  sed -i "s|^main = .*|main = \"$work/snap/entry.mjs\"|" "$work/worker/wrangler.toml"
  kv_catalog worker "$work/worker"
  start worker "$work/worker"
  servers+=("http://127.0.0.1:$port_worker/mcp")
fi
if want base-stateless || opens base-session; then
  mkdir -p "$work/base-snap"
  cp -r "$base/entry.mjs" "$base/build" "$work/base-snap/"
  [ ! -d "$base/code" ] || cp -r "$base/code" "$work/base-snap/"
  mcp_only_worker "$work/base"
  sed -i "s|^main = .*|main = \"$work/base-snap/entry.mjs\"|" "$work/base/wrangler.toml"
  kv_catalog base "$work/base"
  start base "$work/base"
  servers+=("http://127.0.0.1:$port_base/mcp")
fi
if want worker-assets; then
  # As shipped: worker/wrangler.toml with its static assets, the copied build.
  mkdir -p "$work/assets"
  sed -e "s|^main = .*|main = \"$work/snap/entry.mjs\"|" -e "s|^directory = .*|directory = \"$PWD/target/site\"|" \
    worker/wrangler.toml > "$work/assets/wrangler.toml"
  kv_catalog assets "$work/assets"
  start assets "$work/assets"
  servers+=("http://127.0.0.1:$port_assets/mcp")
fi
if want worker-run; then
  # As `scripts/run.sh --config FILE` serves it: the shipped configuration, the catalog put into
  # the KV namespace by scripts/put-config.sh, a session secret in .dev.vars (run.sh keeps one in
  # worker/.dev.vars), wrangler dev's default log level; the copied build.
  mkdir -p "$work/run"
  sed -e "s|^main = .*|main = \"$work/snap/entry.mjs\"|" -e "s|^directory = .*|directory = \"$PWD/target/site\"|" \
    worker/wrangler.toml > "$work/run/wrangler.toml"
  echo "MCP_SIEVE_SESSION_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/run/.dev.vars"
  scripts/put-config.sh "$work/catalog.json" "$work/state-run"
  start run "$work/run" log
  servers+=("http://127.0.0.1:$port_run/mcp")
fi
if want handler; then
  bundle bench/peers/handler-worker.mjs "$work/handler"
  toml "$work/handler" sieve-bench-handler nodejs_compat
  start handler "$work/handler"
  servers+=("http://127.0.0.1:$port_handler/mcp")
fi
if opens mcpagent; then
  bundle bench/peers/agent-worker.mjs "$work/agent"
  toml "$work/agent" sieve-bench-mcpagent nodejs_compat MCP_OBJECT ReferenceAgent
  start agent "$work/agent"
  servers+=("http://127.0.0.1:$port_agent/mcp")
fi
if want node-ref; then
  port_node="$(free_port)"
  setsid node bench/reference-server.mjs "$work/catalog.json" "$port_node" > "$work/node.log" 2>&1 &
  pids+=($!)
  pg_node=$!
  servers+=("http://127.0.0.1:$port_node/mcp")
fi
[ ${#servers[@]} -eq 0 ] || ready "${servers[@]}"
for url in ${port_worker:+"http://127.0.0.1:$port_worker/mcp"} ${port_assets:+"http://127.0.0.1:$port_assets/mcp"} ${port_run:+"http://127.0.0.1:$port_run/mcp"}; do
  # Fail early, with the Worker's own message, if it did not load the catalog.
  curl -sf -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' \
    -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' \
    "$url" | grep -q mcp-sieve-bench || { echo "the Worker at $url did not serve the bench catalog:" >&2; tail -20 "$work"/*.log >&2; exit 1; }
done

# Same answers everywhere, request bodies, sessions, and the floors' page (the Worker's typical answer).
prep=(--catalog "$work/catalog.json" --out "$work" --check 200 --sessions "$conns" --filters "$filters")
want worker-stateless && prep+=(--target "worker-stateless=http://127.0.0.1:$port_worker/mcp:modern")
opens worker-session && prep+=(--target "worker-session=http://127.0.0.1:$port_worker/mcp:legacy")
want base-stateless && prep+=(--target "base-stateless=http://127.0.0.1:$port_base/mcp:modern")
opens base-session && prep+=(--target "base-session=http://127.0.0.1:$port_base/mcp:legacy")
want worker-assets && prep+=(--target "worker-assets=http://127.0.0.1:$port_assets/mcp:modern")
want worker-run && prep+=(--target "worker-run=http://127.0.0.1:$port_run/mcp:modern")
want handler && prep+=(--target "handler=http://127.0.0.1:$port_handler/mcp:modern")
opens mcpagent && prep+=(--target "mcpagent=http://127.0.0.1:$port_agent/mcp:legacy")
want node-ref && prep+=(--target "node-ref=http://127.0.0.1:$port_node/mcp:legacy")
if want worker-stateless; then prep+=(--page-from worker-stateless)
elif want worker-assets; then prep+=(--page-from worker-assets)
elif want worker-run; then prep+=(--page-from worker-run)
elif opens worker-session; then prep+=(--page-from worker-session); fi
opens worker-session && prep+=(--session-page-from worker-session)
opens floor-do && prep+=(--floor-sessions floor-do)
timeout 600 node bench/wrk-prepare.mjs "${prep[@]}"
for key in worker-session base-session floor-do mcpagent; do
  [ ! -f "$work/sessions-$key.txt" ] || cut -d, -f1-4 "$work/sessions-$key.txt" > "$work/sessions-${key}4.txt"
done

if want floor-js || opens floor-do || want floor-assets || want floor-run; then
  cp "$work/page.json" "$work/page.txt"
  cp "$work/page-session.json" "$work/page-session.txt"
  bundle bench/floor-worker.mjs "$work/floor" --alias:bench-page="$work/page.txt" \
    --alias:bench-page-session="$work/page-session.txt" --loader:.txt=text
  toml "$work/floor" sieve-bench-floor none FLOOR FloorObject
  floors=()
  if want floor-js || opens floor-do; then
    start floor "$work/floor"
    floors+=("http://127.0.0.1:$port_floor")
  fi
  if want floor-assets; then
    # Deployed as worker/wrangler.toml deploys the Worker: the same static assets (under wrangler
    # dev a request costs more the more files they have), /mcp to the Worker first.
    mkdir -p "$work/floor-assets"
    cp "$work/floor/index.js" "$work/floor/wrangler.toml" "$work/floor-assets/"
    printf '[assets]\ndirectory = "%s"\nnot_found_handling = "none"\nrun_worker_first = ["/mcp"]\n' "$PWD/target/site" >> "$work/floor-assets/wrangler.toml"
    start floor_assets "$work/floor-assets"
    floors+=("http://127.0.0.1:$port_floor_assets")
  fi
  if want floor-run; then
    # The same, at wrangler dev's default log level (as run.sh starts the Worker).
    mkdir -p "$work/floor-run"
    cp "$work/floor/index.js" "$work/floor/wrangler.toml" "$work/floor-run/"
    printf '[assets]\ndirectory = "%s"\nnot_found_handling = "none"\nrun_worker_first = ["/mcp"]\n' "$PWD/target/site" >> "$work/floor-run/wrangler.toml"
    start floor_run "$work/floor-run" log
    floors+=("http://127.0.0.1:$port_floor_run")
  fi
  for floor_url in "${floors[@]}"; do
    ready "$floor_url/mcp"
    for path in mcp:page do/mcp:page-session; do
      got=$(curl -s -X POST -H 'Content-Type: application/json' -H 'Mcp-Session-Id: x' -d '{}' "$floor_url/${path%%:*}" | wc -c)
      [ "$got" = "$(wc -c < "$work/${path#*:}.json")" ] || { echo "the floor at $floor_url/${path%%:*} answered $got bytes, not the page's $(wc -c < "$work/${path#*:}.json")" >&2; tail -20 "$work"/floor*.log >&2; exit 1; }
    done
  done
fi

echo "== tools/list, $tools tools$([ "$description" = 0 ] || echo " (descriptions of $description bytes or more)"), pages of $page, two concerns with defaults, $([ "$filters" = plain ] && echo "256 plain filters" || echo "random filters"), $conns connections, wrk -t$threads, ${warm} s warm-up + ${seconds} s each, $rounds rounds, 127.0.0.1, $cores cores"
for round in $(seq 1 "$rounds"); do
  for key in $all; do
    want "$key" || continue
    case "$key" in
      floor-js) run floor-js "floor: JS Worker, fixed page (stateless)" "" "http://127.0.0.1:$port_floor/mcp" "$pg_floor" ;;
      worker-stateless) run worker-stateless "mcp-sieve Worker, MCP only (2026-07-28, stateless)" floor-js "http://127.0.0.1:$port_worker/mcp" "$pg_worker" ;;
      base-stateless) run base-stateless "BASE build, MCP only (2026-07-28, stateless)" floor-js "http://127.0.0.1:$port_base/mcp" "$pg_base" ;;
      base-session) run base-session "BASE build, MCP only (2025-11-25, 32 sessions)" floor-do "http://127.0.0.1:$port_base/mcp" "$pg_base" ;;
      base-session4) run base-session4 "BASE build, MCP only (2025-11-25, 4 sessions, 32 connections)" floor-do4 "http://127.0.0.1:$port_base/mcp" "$pg_base" ;;
      floor-assets) run floor-assets "floor: JS Worker + static assets, fixed page (stateless)" "" "http://127.0.0.1:$port_floor_assets/mcp" "$pg_floor_assets" ;;
      worker-assets) run worker-assets "mcp-sieve Worker as shipped, + static assets (2026-07-28, stateless)" floor-assets "http://127.0.0.1:$port_assets/mcp" "$pg_assets" ;;
      floor-run) run floor-run "floor: JS Worker + static assets, wrangler's default log level (stateless)" "" "http://127.0.0.1:$port_floor_run/mcp" "$pg_floor_run" ;;
      worker-run) run worker-run "mcp-sieve Worker as run.sh --config serves it (2026-07-28, stateless)" floor-run "http://127.0.0.1:$port_run/mcp" "$pg_run" ;;
      handler) run handler "SDK v2 + agents createMcpHandler (2026-07-28, stateless)" floor-js "http://127.0.0.1:$port_handler/mcp" "$pg_handler" ;;
      floor-do) run floor-do "floor: JS Worker + no-op Durable Object (32 sessions)" "" "http://127.0.0.1:$port_floor/do/mcp" "$pg_floor" ;;
      worker-session) run worker-session "mcp-sieve Worker, MCP only (2025-11-25, 32 sessions)" floor-do "http://127.0.0.1:$port_worker/mcp" "$pg_worker" ;;
      mcpagent) run mcpagent "agents McpAgent + SDK (2025-11-25, 32 sessions)" floor-do "http://127.0.0.1:$port_agent/mcp" "$pg_agent" ;;
      floor-do4) run floor-do4 "floor: JS Worker + no-op Durable Object (4 sessions, 32 connections)" "" "http://127.0.0.1:$port_floor/do/mcp" "$pg_floor" ;;
      worker-session4) run worker-session4 "mcp-sieve Worker, MCP only (2025-11-25, 4 sessions, 32 connections)" floor-do4 "http://127.0.0.1:$port_worker/mcp" "$pg_worker" ;;
      mcpagent4) run mcpagent4 "agents McpAgent + SDK (2025-11-25, 4 sessions, 32 connections)" floor-do4 "http://127.0.0.1:$port_agent/mcp" "$pg_agent" ;;
      node-ref) run node-ref "official SDK in Node (2025-11-25, 32 sessions)" none "http://127.0.0.1:$port_node/mcp" "$pg_node" ;;
    esac
  done
done
echo
node bench/wrk-table.mjs "$work/results.jsonl" "$cores"
[ -z "${BENCH_JSON:-}" ] || cp "$work/results.jsonl" "$BENCH_JSON"
wasm="$(find "$work/snap/build" -name '*.wasm' 2>/dev/null | head -1)"
[ -z "$wasm" ] || echo "
Worker wasm: $(wc -c < "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) bytes gzipped (gzip -9; the copy of worker/build measured)"
