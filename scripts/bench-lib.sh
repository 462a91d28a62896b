# Shell functions of the wrk benchmarks (scripts/bench-load.sh, scripts/bench-gateway.sh, and
# open_session for scripts/bench-native.sh, bench-native-ir.sh and bench-profile.sh), sourced
# by them after they set: work (a temporary directory), pids (an array: process-group leaders to
# stop on exit), and for `run`: threads, conns, warm, seconds, round. Not a script of its own.

# Stops every server started (each runs in a process group of its own) and removes $work.
bench_cleanup() {
  for p in "${pids[@]}"; do stop_group "$p"; done
  rm -rf "$work"
}
# stop_group PGID: SIGTERM to the process group, then SIGKILL to what is left of it after 2 s. A
# workerd whose wrangler dev exited first is left in the group and does not stop on SIGTERM (runs
# left 120 MB processes behind).
stop_group() {
  kill -- "-$1" 2>/dev/null || return 0
  for _ in $(seq 1 20); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null || true
}
# open_session URL [CLIENT]: initializes a 2025-11-25 session as a client would (initialize, then
# notifications/initialized) and prints its Mcp-Session-Id.
open_session() {
  local url="$1" sid
  sid=$(curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"'"${2:-bench}"'","version":"1"}}}' \
    "$url" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url"
  echo "$sid"
}
# A free port below the OS's ephemeral range (tests/common/ports.mjs: no outgoing connection takes it
# between this probe and the bind).
free_port() { node tests/common/ports.mjs; }
# start NAME DIR [LOG_LEVEL]: `wrangler dev` of the Worker in DIR on a free port, in a process
# group of its own, at LOG_LEVEL (default warn: no line per request; "log" is wrangler's own
# default); sets port_NAME and pg_NAME. Each wrangler dev also opens an inspector port, chosen
# here as wranglers started together race for the default.
start() {
  local port ins
  port="$(free_port)"; ins="$(free_port)"
  setsid wrangler dev --cwd "$2" --ip 127.0.0.1 --port "$port" --inspector-port "$ins" --show-interactive-dev-session=false \
    --log-level "${3:-warn}" --persist-to "$work/state-$1" > "$work/$1.log" 2>&1 &
  pids+=($!)
  printf -v "port_$1" '%s' "$port"
  printf -v "pg_$1" '%s' "$!"
}
# start_native NAME ARGS...: `target/release/mcp-sieve ARGS...` on a free port (appended as
# --host 127.0.0.1 --port), in a process group of its own; sets port_NAME and pg_NAME.
start_native() {
  local name="$1" port
  shift
  port="$(free_port)"
  setsid target/release/mcp-sieve "$@" --host 127.0.0.1 --port "$port" > "$work/$name.log" 2>&1 &
  pids+=($!)
  printf -v "port_$name" '%s' "$port"
  printf -v "pg_$name" '%s' "$!"
}
# ready URL...: waits (90 s at most each) until every URL accepts a connection; stops if a server exited.
ready() {
  local url p
  for url in "$@"; do
    for _ in $(seq 1 450); do
      for p in "${pids[@]}"; do
        kill -0 "$p" 2>/dev/null || { echo "a server exited:" >&2; tail -n 20 "$work"/*.log >&2; exit 1; }
      done
      curl -s -o /dev/null -m 5 -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$url" && continue 2
      sleep 0.2
    done
    echo "no answer from $url in 90 s:" >&2; tail -n 20 "$work"/*.log >&2; exit 1
  done
}
# A Worker bundle: esbuild ENTRY into DIR/index.js with the catalog (and the floor's page)
# inlined; Node built-ins are left to workerd's nodejs_compat.
node_builtins=$(node -e 'console.log(require("module").builtinModules.filter((m) => !m.startsWith("_")).map((m) => "--external:" + m).join(" "))')
bundle() { # ENTRY DIR [esbuild options]
  local entry="$1" dir="$2"; shift 2
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  esbuild "$entry" --bundle --format=esm --platform=browser --conditions=workerd,worker,browser \
    --external:'cloudflare:*' --external:'node:*' $node_builtins --alias:bench-catalog="$work/catalog.json" \
    --outfile="$dir/index.js" --log-level=error "$@"
}
# A bundled Worker's wrangler.toml in DIR: its NAME, with nodejs_compat unless FLAGS is "none",
# and a SQLite Durable Object CLASS bound as BINDING when given.
toml() { # DIR NAME FLAGS [BINDING CLASS]
  local dir="$1" name="$2" flags="$3"
  {
    printf 'name = "%s"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n' "$name"
    [ "$flags" = none ] || printf 'compatibility_flags = ["nodejs_compat"]\n'
    if [ $# -ge 5 ]; then
      printf '[[durable_objects.bindings]]\nname = "%s"\nclass_name = "%s"\n' "$4" "$5"
      printf '[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["%s"]\n' "$5"
    fi
  } > "$dir/wrangler.toml"
}
# mcp_only_worker DIR: the shipped Worker's configuration (worker/wrangler.toml) without its
# [assets] block (the demo page), serving MCP only, written to DIR/wrangler.toml.
mcp_only_worker() {
  mkdir -p "$1"
  sed -e '/^\[assets\]/,/^run_worker_first/d' -e "s|^main = .*|main = \"$PWD/worker/entry.mjs\"|" \
    worker/wrangler.toml > "$1/wrangler.toml"
  ! grep -q '^\[assets\]' "$1/wrangler.toml" || { echo "could not take [assets] out of worker/wrangler.toml" >&2; exit 1; }
}
# The document is megabytes: too long for a Worker variable (a command-line argument, 128 KB), so
# it goes in the MCP_SIEVE_KV namespace (key "config") of a fresh local state directory.
kv_catalog() { # NAME CONFIG_DIR [DOCUMENT]
  wrangler kv key put config --path "${3:-$work/catalog.json}" --binding MCP_SIEVE_KV --local \
    --cwd "$2" --persist-to "$work/state-$1" > /dev/null
}

clk=$(getconf CLK_TCK)
cores=$(nproc)
# CPU ticks (user + system) used so far by the live processes of process group $1 (a process
# that exits between the glob and its read is skipped, not an error: other work runs meanwhile).
group_ticks() {
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | sed -E 's/^[0-9]+ \(.*\) //' | awk -v g="$1" '$3 == g { s += $12 + $13 } END { print s + 0 }'
}
# The machine's CPU ticks: busy and total.
machine_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }
# run KEY LABEL FLOOR URL PG [BODIES]: warm-up, then the measured run (wrk, bench/wrk-list.lua),
# appended to $work/results.jsonl. FLOOR is the key of the target's floor, "" for a floor itself,
# "none" where no floor applies; PG the process group whose CPU time is the server's (several,
# comma-separated: a gateway and its upstream); BODIES the request bodies (default
# $work/modern.txt, or $work/legacy.txt with the sessions of $work/sessions-KEY.txt when it exists).
# CLIENT=node: bench/node-client.mjs sends the load instead of wrk (the same requests, one Node
# process: the shape issue 43 was filed with).
send_load() { # SECONDS URL [--latency]
  if [ "${CLIENT:-wrk}" = node ]; then
    timeout $(($1 + 30)) node bench/node-client.mjs "$conns" "$1" "$2"
  else
    timeout $(($1 + 30)) wrk -t"$threads" -c"$conns" -d"$1s" --timeout 5s ${3:-} -s bench/wrk-list.lua "$2"
  fi
}
run() {
  local key="$1" label="$2" floor="$3" url="$4" pg="$5" sessions="" bodies="${6:-$work/modern.txt}" c0=0 c1=0 g m0 m1 line
  if [ -f "$work/sessions-$key.txt" ]; then sessions="$(cat "$work/sessions-$key.txt")"; bodies="${6:-$work/legacy.txt}"; fi
  SESSIONS="$sessions" BODIES="$bodies" THREADS="$threads" send_load "$warm" "$url" > "$work/warm-$key.txt"
  for g in ${pg//,/ }; do c0=$((c0 + $(group_ticks "$g"))); done
  m0=($(machine_ticks))
  SESSIONS="$sessions" BODIES="$bodies" THREADS="$threads" send_load "$seconds" "$url" --latency > "$work/wrk-$key.txt"
  for g in ${pg//,/ }; do c1=$((c1 + $(group_ticks "$g"))); done
  m1=($(machine_ticks))
  line=$(tail -1 "$work/wrk-$key.txt")
  printf '{"key":"%s","label":"%s","round":%s,"floor":%s,"cpu":%s,"busy":%s,"wrk":%s}\n' "$key" "$label" "$round" \
    "$([ -n "$floor" ] && echo "\"$floor\"" || echo null)" \
    "$(awk -v a="$c0" -v b="$c1" -v k="$clk" 'BEGIN { print (b - a) / k }')" \
    "$(awk -v a="${m0[0]}" -v b="${m1[0]}" -v c="${m0[1]}" -v d="${m1[1]}" 'BEGIN { print (d > c) ? (b - a) / (d - c) : 0 }')" \
    "$line" >> "$work/results.jsonl"
  echo "  round $round, $label: $line"
}
