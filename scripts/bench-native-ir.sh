#!/usr/bin/env bash
# Instructions a filtered tools/list costs the native server (a benchmark, not a test): callgrind
# counts the server's instructions over N requests (default 1,000) sent one at a time after 200 to
# warm up, on one worker thread, for each binary given — exact where requests/s under load swing
# by several percent between rounds, and with callgrind_annotate the place of every instruction.
# The catalog and the filters are scripts/bench-native.sh's (5,000 synthetic tools, 24 groups, 16
# tags, two concerns with defaults, pages of 50; 4,096 seeded random filters, stateless
# 2026-07-28 requests). 127.0.0.1 only.
#   scripts/bench-native-ir.sh BIN [BIN ...]       N=1000, KEEP=DIR keeps each profile,
#                                                  ERA=session: 2025-11-25 lists in one session
# Prints one line per binary: instructions a request, and the five functions with the most
# (inclusive). Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
[ $# -ge 1 ] || { echo "usage: scripts/bench-native-ir.sh BIN [BIN ...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 1; }
n="${N:-1000}"
work="$(mktemp -d)"
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
examples="${EXAMPLES:-target/release/examples}"
[ -x "$examples/synth_catalog" ] || cargo build -q --release --features testing --example synth_catalog
"$examples/synth_catalog" 5000 0 42 50 > "$work/catalog.json"
node --input-type=module -e '
import { randomFilters } from "./bench/filters.mjs";
import fs from "node:fs";
const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
const session = process.argv[2] === "session";
fs.writeFileSync(process.argv[1], randomFilters(1904, 4096).map((filter, i) =>
  JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/list", params: session ? { filter } : { filter, _meta: meta } })).join("\n") + "\n");
' "$work/bodies.txt" "${ERA:-stateless}"
send() { # port count [session id]
  python3 - "$1" "$2" "$work/bodies.txt" "${3:-}" <<'PY'
import http.client, sys
port, n, sid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[4]
bodies = open(sys.argv[3]).read().strip().split("\n")
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
     "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
if sid:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    c.request("POST", "/mcp", bodies[i % len(bodies)], h)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
}
for bin in "$@"; do
  port="$(node tests/common/ports.mjs)"
  TOKIO_WORKER_THREADS=1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
    "$bin" serve --catalog "$work/catalog.json" --host 127.0.0.1 --port "$port" > "$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' \
      "http://127.0.0.1:$port/mcp" && break
    sleep 0.1
  done
  sleep 8 # the search index is built on a thread of its own after the start
  sid=""
  [ "${ERA:-}" != session ] || sid="$(open_session "http://127.0.0.1:$port/mcp")"
  send "$port" 200 "$sid"
  callgrind_control -i on "$pid" >/dev/null 2>&1
  send "$port" "$n" "$sid"
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  profile="$(ls "$work"/cg.out.*1 | tail -1)"
  [ -z "${KEEP:-}" ] || cp "$profile" "$KEEP/$(basename "$bin")${ERA:+-$ERA}.callgrind"
  callgrind_annotate --inclusive=yes "$profile" 2>/dev/null | awk -v n="$n" -v bin="$bin" '
    /PROGRAM TOTALS/ { v = $1; gsub(",", "", v); printf "%s: %d instructions a request\n", bin, v / n; next }
    /mcp_sieve::|jsonrpc|memcpy|memmove/ && shown < 5 && $1 ~ /^[0-9,]+$/ {
      v = $1; gsub(",", "", v); name = $0
      sub(/^ *[0-9,]+ \([ 0-9.]+%\) +/, "", name); sub(/ \[.*/, "", name); sub(/^[^:]*:/, "", name)
      printf "  %8d  %s\n", v / n, name; shown++ }'
  rm -f "$work"/cg.out*
done
