#!/usr/bin/env bash
# What one console.log line per request costs any Worker under wrangler dev (a script, not a test;
# issue 42 item 6): two plain JavaScript Workers answering the same fixed tools/call result, one
# also writing an audit-shaped JSON line with console.log, under wrk (32 connections, 2 s warm-up +
# 5 s, two rounds in turn, 127.0.0.1); prints requests/s and the CPU per request of each wrangler
# dev process group and of its workerd alone. The floor of the Worker audit line's cost
# (bench/operate-worker.mjs).   bash bench/console-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH" WRANGLER_SEND_METRICS=false WRANGLER_CI_DISABLE_CONFIG_WATCHING=true
work="$(mktemp -d)"; pids=()
. scripts/bench-lib.sh
trap bench_cleanup EXIT
for v in quiet logged; do
  mkdir -p "$work/$v"
  line='{"time":"2026-11-25T21:00:00Z","principal":null,"view":null,"method":"tools/call","item":"echo","decision":"allowed","reason":null,"upstream":null,"durationMs":0,"outcome":"ok"}'
  if [ $v = logged ]; then log="console.log(LINE);"; else log=""; fi
  cat > "$work/$v/index.js" <<JS
const LINE = '$line';
export default { async fetch(request) { await request.arrayBuffer(); $log return new Response('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}', { headers: { 'Content-Type': 'application/json' } }); } };
JS
  toml "$work/$v" "log-$v" none
  start "$v" "$work/$v"
done
echo '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}' > "$work/b.txt"
ready "http://127.0.0.1:$port_quiet/mcp" "http://127.0.0.1:$port_logged/mcp"
wticks() { { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v g="$1" '{ s=$0; sub(/^[0-9]+ \(/, "", s); name=substr(s,1,index(s,")")-1); sub(/^.*\) /,"",s); split(s,f," "); if (f[3]==g) { a+=f[12]+f[13]; if (name=="workerd") w+=f[12]+f[13] } } END { print a+0, w+0 }'; }
for r in 1 2; do
  for v in quiet logged; do
    pv="port_$v"; gv="pg_$v"; url="http://127.0.0.1:${!pv}/mcp"
    BODIES="$work/b.txt" wrk -t2 -c32 -d2s -s bench/wrk-list.lua "$url" > /dev/null
    b=($(wticks "${!gv}"))
    out=$(BODIES="$work/b.txt" wrk -t2 -c32 -d5s -s bench/wrk-list.lua "$url" | tail -1)
    a=($(wticks "${!gv}"))
    n=$(echo "$out" | sed 's/.*"requests": \([0-9]*\).*/\1/')
    echo "round $r $v: $out; CPU/request all $(( (a[0]-b[0])*10000/n )) us, workerd $(( (a[1]-b[1])*10000/n )) us"
  done
done
