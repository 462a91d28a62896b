#!/usr/bin/env bash
# What operating costs (issue 42 item 6; a script, not a test): the native server (release) with
# logs, metrics and traces off and no limits, then with logs at info and metrics on (the
# defaults), traces sampled at 10% (OTEL_TRACES_SAMPLER=traceidratio, exported over OTLP/HTTP to a
# loopback sink that answers 200) and one rate limit that every call counts against (never
# reached), under wrk (bench/wrk-list.lua, 2026-07-28 stateless requests,
# 127.0.0.1 only): tools/call of `echo` and a filtered tools/list over a 1,000-tool catalog.
# Each part is also measured alone (logs, metrics, traces, the limit), so the table says where the
# cost is. Prints requests/s, p50, p99 and the server's CPU time per request (its own user + system
# time over the requests served: steadier than throughput on a machine doing other work) of each,
# and the ratios to everything off (goal: >= 95% of the throughput, p99 not more than 10% worse).
#   scripts/bench-operate.sh [SECONDS] [CONNECTIONS]     (MCP_SIEVE_BIN=PATH: that binary, not a
#   fresh release build of this tree; ROUNDS=N rounds, default 2; LABELS="off all": only those;
#   BASE=PATH: also that binary (another commit's build, from a git worktree outside this tree),
#   run beside this one in every round, each with its own table: before/after in one run;
#   IR=N: instead of wrk, N requests one at a time to the server under valgrind's callgrind, and
#   the instructions the server ran per request: a count that does not move with the machine's
#   load, where wrk's ratios on a shared VM spread by ±20% round to round; with CACHE=1 also
#   its simulated cache misses (I1, D1) and mispredicted branches, and an estimate of its cycles
#   weighing each at 10, 10 and 15 instructions: what instructions alone miss; PIN=1: the server
#   on CPU 1 alone, wrk (one thread) and the OTLP sink on CPU 0, so the server's own CPU bounds
#   its throughput and nothing else competes for its core and caches: its CPU per request is
#   steadier there, though rounds still spread from 91% to 108% on the shared VM)
# Before and after in one run (issue 59: a hand-written piece against the library that replaced
# it): `scripts/bench-operate.sh --before BIN --after BIN [SECONDS] [CONNECTIONS]` (the same as
# BASE=BEFORE MCP_SIEVE_BIN=AFTER): both binaries in every round and for every part, their order
# swapped each round (after, before, then before, after: a machine getting busier or quieter
# weighs on both alike), then a table of the two side by side with the ratio after/before of each
# round's pair and its median. Parts beside those above: `sampled` (every request traced and
# exported: OTEL_TRACES_SAMPLER=always_on) and `unsampled` (the exporter set up, no request
# traced: always_off). The load average is printed at the start and the end.
set -euo pipefail
cd "$(dirname "$0")/.."
while [ $# -gt 0 ]; do
  case "$1" in
    --before) BASE="$2"; shift 2 ;;
    --after) MCP_SIEVE_BIN="$2"; shift 2 ;;
    *) break ;;
  esac
done
seconds="${1:-10}"; conns="${2:-32}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
bin="${MCP_SIEVE_BIN:-}"
[ -n "$bin" ] || { cargo build -q --release -p mcp-sieve-server; bin=target/release/mcp-sieve; }
work="$(mktemp -d)"
pid=""
sink=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  [ -n "$sink" ] && kill "$sink" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { node tests/common/ports.mjs; }  # below the ephemeral range (tests/common/ports.mjs)

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

# The OTLP sink: takes every export and answers 200 (what is exported is checked by
# tests/e2e/otel.test.mjs; here only its cost counts).
sink_port="$(free_port)"
# PIN=1: the server on CPU 1, the load (wrk, this sink) on CPU 0.
on_server=(); on_load=(); wrk_threads=2
if [ -n "${PIN:-}" ]; then on_server=(taskset -c 1); on_load=(taskset -c 0); wrk_threads=1; fi
"${on_load[@]}" python3 - "$sink_port" >"$work/sink.log" 2>&1 <<'PY' &
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a collector answers
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
PY
sink=$!

# run LABEL WHAT [BIN NAME]: the server (BIN, default this tree's) with the parts LABEL names
# (off, logs, metrics, traces, limit, all) under wrk with WHAT's requests (call, list); one JSON line.
run() {
  local label="$1" what="$2" bin="${3:-$bin}" name="${4:-this}" port catalog="$work/plain.json" args=(--metrics off) env=(MCP_SIEVE_LOG=off)
  port="$(free_port)"
  local traces=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.1)
  case "$label" in
    logs) env=(MCP_SIEVE_LOG=info) ;;
    metrics) args=() ;;
    traces) env+=("${traces[@]}") ;;
    sampled) env+=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_TRACES_SAMPLER=always_on) ;;
    unsampled) env+=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_TRACES_SAMPLER=always_off) ;;
    limit) catalog="$work/limited.json" ;;
    all) env=(MCP_SIEVE_LOG=info "${traces[@]}"); args=(); catalog="$work/limited.json" ;;
  esac
  local under=()
  # Under callgrind on one worker thread: how two workers happen to park and steal moved the
  # count of a run by about 1%.
  [ -z "${IR:-}" ] || under=(env TOKIO_WORKER_THREADS=1 valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$work/cg.out")
  [ -z "${CACHE:-}" ] || under+=(--cache-sim=yes --branch-sim=yes)
  rm -f "$work"/cg.out*
  env "${env[@]}" "${under[@]}" "${on_server[@]}" "$bin" serve --catalog "$catalog" --host 127.0.0.1 --port "$port" "${args[@]}" > "$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "http://127.0.0.1:$port/mcp" && break
    sleep 0.1
  done
  if [ -n "${IR:-}" ]; then
    # Settled first: the search index of the 1,000 tools is built on a thread of its own after
    # the server starts, which under valgrind takes seconds (counted, it doubled a request).
    sleep 12
    one_by_one "$port" 200 "$work/$what.txt"
    callgrind_control -i on "$pid" >/dev/null
    one_by_one "$port" "$IR" "$work/$what.txt"
    sleep 6 # the batch processor exports what it holds every 5 s
    callgrind_control -d "$pid" >/dev/null
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    # CG_KEEP=DIR: the profile kept, as DIR/BIN-WHAT-LABEL-ROUND.out (for callgrind_annotate).
    [ -z "${CG_KEEP:-}" ] || cp "$(ls "$work"/cg.out.* | tail -1)" "$CG_KEEP/$name-$what-$label-$round.out"
    local ir
    # The totals' line: Ir, and with CACHE=1 Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
    # (a count, a "." for none, each count followed by its share in parentheses).
    ir=$(callgrind_annotate "$(ls "$work"/cg.out.* | tail -1)" | awk -v n="$IR" '/PROGRAM TOTALS/ && !done++ {
      k = 0
      for (i = 1; i <= NF && $i != "PROGRAM"; i++) if ($i !~ /^\(/) { v = $i; gsub(",", "", v); c[++k] = (v == "." ? 0 : v) }
      # No early exit: callgrind_annotate, cut off mid-write, fails the pipeline (SIGPIPE).
      if (k < 13) { printf "%d", c[1] / n; next }
      est = c[1] + 10 * (c[4] + c[5] + c[6]) + 15 * (c[11] + c[13])
      printf "%d,\"i1\":%d,\"d1\":%d,\"branches\":%d,\"est\":%d", c[1] / n, c[4] / n, (c[5] + c[6]) / n, (c[11] + c[13]) / n, est / n
    }')
    printf '{"bin":"%s","what":"%s","label":"%s","round":%s,"ir":%s}\n' "$name" "$what" "$label" "$round" "$ir"
    return
  fi
  BODIES="$work/$what.txt" "${on_load[@]}" wrk -t"$wrk_threads" -c"$conns" -d3s -s bench/wrk-list.lua "http://127.0.0.1:$port/mcp" >/dev/null
  local t0 t1 out
  t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  out=$(BODIES="$work/$what.txt" "${on_load[@]}" wrk -t"$wrk_threads" -c"$conns" -d"${seconds}s" -s bench/wrk-list.lua "http://127.0.0.1:$port/mcp" | tail -1)
  t1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  printf '{"bin":"%s","what":"%s","label":"%s","round":%s,"ticks":%s,"wrk":%s}\n' "$name" "$what" "$label" "$round" "$((t1 - t0))" "$out"
}

# one_by_one PORT N FILE: N requests of FILE's body (fresh ids), one at a time, with the headers
# of the 2026-07-28 era as wrk sends them.
one_by_one() {
  python3 - "$@" <<'PY'
import http.client, json, sys
port, n, body = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3]).read().strip()
m = json.loads(body)
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
     "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": m["method"]}
if m["method"] == "tools/call":
    h["Mcp-Name"] = m["params"]["name"]
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    c.request("POST", "/mcp", body.replace('"id":1,', f'"id":{i + 2},', 1), h)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
}

results="$work/results.jsonl"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
# Alternated, ROUNDS times each: the best run of each counts (a shared machine's noise only
# slows), and each part's throughput against "off" of the same round (run just before it) is
# printed round by round with its median, which one lucky "off" run does not move. With BASE,
# the two binaries run one after the other for each part, the first of the pair swapped each round.
for round in $(seq 1 "${ROUNDS:-2}"); do
  for what in call list; do
    for label in ${LABELS:-off logs metrics traces limit all}; do
      if [ -n "${BASE:-}" ] && [ $((round % 2)) -eq 0 ]; then
        run "$label" "$what" "$BASE" base >> "$results"
        run "$label" "$what" >> "$results"
      else
        run "$label" "$what" >> "$results"
        [ -z "${BASE:-}" ] || run "$label" "$what" "$BASE" base >> "$results"
      fi
    done
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${IR:-}" ]; then
  node -e '
const all = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
for (const bin of ["this", "base"].filter((b) => all.some((x) => x.bin === b))) {
  for (const w of ["call", "list"]) {
    const ir = (l) => Math.min(...all.filter((x) => x.bin === bin && x.what === w && x.label === l).map((x) => x.ir));
    for (const l of [...new Set(all.map((x) => x.label))].filter((l) => l !== "off")) {
      console.log(`${bin === "this" ? "this tree" : "BASE"}, ${w === "call" ? "tools/call echo" : "tools/list (filtered)"}: ${ir(l)} instructions a request with ${l}, ${ir("off")} with everything off: +${ir(l) - ir("off")} (+${(100 * (ir(l) / ir("off") - 1)).toFixed(1)}%)`);
      const one = (l) => all.find((x) => x.bin === bin && x.what === w && x.label === l && x.ir === ir(l));
      if (one(l).est !== undefined) {
        const [a, o] = [one(l), one("off")];
        console.log(`  misses a request: I1 ${a.i1} against ${o.i1}, D1 ${a.d1} against ${o.d1}, branches ${a.branches} against ${o.branches}; estimated cycles ${a.est} against ${o.est}: +${(100 * (a.est / o.est - 1)).toFixed(1)}%`);
      }
    }
  }
}
// Before and after side by side: the fewest instructions a request of each, their ratio, and what
// each part adds over everything off as a share of the request with it.
if (all.some((x) => x.bin === "base")) {
  const irOf = (bin, w, l) => Math.min(...all.filter((x) => x.bin === bin && x.what === w && x.label === l).map((x) => x.ir));
  console.log("\n| request | part | before: instructions a request | after | after / before | the part, before | after |");
  console.log("|---|---|---:|---:|---:|---:|---:|");
  for (const w of ["call", "list"]) {
    for (const l of [...new Set(all.map((x) => x.label))]) {
      const [b, a, bo, ao] = [irOf("base", w, l), irOf("this", w, l), irOf("base", w, "off"), irOf("this", w, "off")];
      const part = (x, o) => (l === "off" ? "—" : `${x - o >= 0 ? "+" : ""}${x - o} (${(100 * (x - o) / x).toFixed(1)}%)`);
      console.log(`| ${w === "call" ? "tools/call echo" : "tools/list (filtered)"} | ${l} | ${b} | ${a} | ${(a / b).toFixed(3)} | ${part(b, bo)} | ${part(a, ao)} |`);
    }
  }
}' "$results"
  exit 0
fi
node -e '
const all = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const names = { off: "everything off", logs: "logs at info", metrics: "metrics on", traces: "traces sampled at 10% (OTLP)", sampled: "every request traced (OTLP)", unsampled: "traces on, none sampled", limit: "one rate limit", all: "all four" };
for (const bin of ["this", "base"].filter((b) => all.some((x) => x.bin === b))) {
const rows = all.filter((x) => x.bin === bin);
console.log(`\n${bin === "this" ? "this tree" : "BASE (" + process.argv[3] + ")"}:`);
const tick = 1e6 / Number(process.argv[2]);
const best = (w, l) => rows.filter((x) => x.what === w && x.label === l).sort((a, b) => b.wrk.rps - a.wrk.rps)[0];
const cpu = (w, l) => Math.min(...rows.filter((x) => x.what === w && x.label === l).map((x) => x.ticks * tick / x.wrk.requests));
console.log("| request | server | req/s | p50 (ms) | p99 (ms) | server CPU per request (µs) | throughput vs off | p99 vs off | CPU vs off |");
console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|");
for (const w of ["call", "list"]) {
  const off = best(w, "off");
  for (const l of Object.keys(names).filter((l) => rows.some((x) => x.label === l))) {
    const x = best(w, l);
    console.log(`| ${w === "call" ? "tools/call echo" : "tools/list (filtered)"} | ${names[l]} | ${Math.round(x.wrk.rps)} | ${x.wrk.p50} | ${x.wrk.p99} | ${cpu(w, l).toFixed(1)} | ${(100 * x.wrk.rps / off.wrk.rps).toFixed(1)}% | ${(x.wrk.p99 / off.wrk.p99).toFixed(2)} | +${(cpu(w, l) - cpu(w, "off")).toFixed(1)} µs |`);
  }
}
const rps = (w, l, r) => rows.find((x) => x.what === w && x.label === l && x.round === r)?.wrk.rps;
const p99 = (w, l, r) => rows.find((x) => x.what === w && x.label === l && x.round === r)?.wrk.p99;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const rounds = [...new Set(rows.map((x) => x.round))];
for (const w of ["call", "list"]) {
  for (const l of Object.keys(names).filter((l) => l !== "off" && rows.some((x) => x.label === l))) {
    const shares = rounds.map((r) => 100 * rps(w, l, r) / rps(w, "off", r)).filter(Number.isFinite);
    const p99s = rounds.map((r) => p99(w, l, r) / p99(w, "off", r)).filter(Number.isFinite);
    console.log(`${w === "call" ? "tools/call echo" : "tools/list (filtered)"}, ${names[l]} against off of the same round: median ${median(shares).toFixed(1)}% (${shares.map((x) => x.toFixed(1)).join(", ")}); p99 median ${median(p99s).toFixed(2)}x (${p99s.map((x) => x.toFixed(2)).join(", ")})`);
  }
}
}
// Before (BASE) and after (this tree) side by side, compared within each round (the two ran one
// after the other there): the server CPU a request of each (median of the rounds), the median of
// the rounds ratios after / before, and what the part adds to a request over everything off of
// the same binary and round, in µs and as a share of the request with it.
if (all.some((x) => x.bin === "base")) {
  const tick = 1e6 / Number(process.argv[2]);
  const median = (xs) => {
    const s = [...xs].filter(Number.isFinite).sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const at = (bin, w, l, r) => all.find((x) => x.bin === bin && x.what === w && x.label === l && x.round === r);
  const cpu = (bin, w, l, r) => { const x = at(bin, w, l, r); return x ? x.ticks * tick / x.wrk.requests : NaN; };
  const rounds = [...new Set(all.map((x) => x.round))];
  const labels = [...new Set(all.map((x) => x.label))];
  console.log(`\nbefore (${process.argv[3]}) and after (this tree), ${rounds.length} rounds, server CPU per request:`);
  console.log("| request | part | before (µs) | after (µs) | after / before: median (each round) | req/s after / before | the part, before | after |");
  console.log("|---|---|---:|---:|---|---:|---:|---:|");
  for (const w of ["call", "list"]) {
    for (const l of labels) {
      const b = median(rounds.map((r) => cpu("base", w, l, r))), a = median(rounds.map((r) => cpu("this", w, l, r)));
      const ratios = rounds.map((r) => cpu("this", w, l, r) / cpu("base", w, l, r));
      const rps = median(rounds.map((r) => at("this", w, l, r)?.wrk.rps / at("base", w, l, r)?.wrk.rps));
      const part = (bin) => {
        if (l === "off") return "—";
        const us = median(rounds.map((r) => cpu(bin, w, l, r) - cpu(bin, w, "off", r)));
        const share = median(rounds.map((r) => (cpu(bin, w, l, r) - cpu(bin, w, "off", r)) / cpu(bin, w, l, r)));
        return `${us >= 0 ? "+" : ""}${us.toFixed(1)} µs (${(100 * share).toFixed(0)}%)`;
      };
      console.log(`| ${w === "call" ? "tools/call echo" : "tools/list (filtered)"} | ${names[l]} | ${b.toFixed(1)} | ${a.toFixed(1)} | ${median(ratios).toFixed(3)} (${ratios.map((x) => x.toFixed(2)).join(", ")}) | ${rps.toFixed(3)} | ${part("base")} | ${part("this")} |`);
    }
  }
}
' "$results" "$(getconf CLK_TCK)" "${BASE:-}"
