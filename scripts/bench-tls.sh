#!/usr/bin/env bash
# What an HTTPS upstream costs through the native gateway (issue 39 item 6; a script, not a test):
# tools/call through `mcp-sieve serve` fronting an upstream on https://, against the same calls
# sent to that upstream directly over the same TLS, with wrk (bench/wrk-list.lua), 127.0.0.1 only.
# The upstream is the release native server serving a synthetic 1,000-tool catalog behind stunnel
# (TLS, a server certificate of a CA made here): one TLS endpoint for both paths. The gateway
# trusts the CA through the upstream's `caFile` and keeps its connections (no handshake per call);
# wrk keeps its own too. ROUNDS (default 3) rounds of a 2 s warm-up then SECONDS (default 5) per
# target, at 1 and CONNS (default 32) connections, 2026-07-28 stateless calls. Prints the table
# (bench/wrk-table.mjs: medians, the gateway's share of the direct path and p50 above it) and the
# p50 the gateway adds at 1 connection in each round (goal: at most 0.3 ms).
#   scripts/bench-tls.sh [SECONDS]        needs wrk, stunnel4 and openssl (Debian packages)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"
rounds="${ROUNDS:-3}"
many="${CONNS:-32}"
warm=2
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
for tool in wrk stunnel4 openssl; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y wrk stunnel4 openssl" >&2; exit 1; }
done
cargo build -q --release -p mcp-sieve-server

work="$(mktemp -d)"
pids=()
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_cleanup EXIT

# A CA and a certificate for 127.0.0.1 signed by it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$work/ext.cnf"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
  -extfile "$work/ext.cnf" -out "$work/tls.pem" 2>/dev/null

# The upstream, and stunnel in front of it.
cargo run -q --release --features testing --example synth_catalog -- 1000 0 42 100 > "$work/catalog.json"
start_native u1 serve --catalog "$work/catalog.json"
tls_port="$(free_port)"
cat > "$work/stunnel.conf" <<EOF
foreground = yes
pid =
[upstream]
accept = 127.0.0.1:$tls_port
connect = 127.0.0.1:$port_u1
cert = $work/tls.pem
key = $work/tls.key
EOF
setsid stunnel4 "$work/stunnel.conf" > "$work/stunnel.log" 2>&1 &
pids+=($!)
pg_tls=$!
direct="https://127.0.0.1:$tls_port/mcp"
for _ in $(seq 1 100); do
  curl -s -o /dev/null --cacert "$work/ca.pem" -X POST -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$direct" && break
  sleep 0.1
done

# The gateway, fronting the upstream through stunnel.
node bench/gateway-docs.mjs gateway "$work/catalog.json" "$direct" \
  | node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>{const d=JSON.parse(s);d.upstreams.u1.caFile=process.argv[1];process.stdout.write(JSON.stringify(d))})' "$work/ca.pem" \
  > "$work/gateway.json"
node bench/gateway-docs.mjs calls "$work/catalog.json" 64 "$work/calls.txt" "$work/calls-legacy.txt"
start_native native serve --catalog "$work/gateway.json"
native="http://127.0.0.1:$port_native/mcp"
ready "$native"
# Same answers first (the upstream behind stunnel, over plain HTTP: the check's client speaks HTTP).
timeout 300 node bench/gateway-docs.mjs check "$work/calls.txt" "direct=http://127.0.0.1:$port_u1/mcp" "native=$native"

up="$pg_u1,$pg_tls"
echo "== tools/call (64 tools) over TLS: directly and through the native gateway; 1 and $many connections; wrk, ${warm} s warm-up + ${seconds} s each, $rounds rounds, 127.0.0.1, $cores cores"
for round in $(seq 1 "$rounds"); do
  for c in 1 "$many"; do
    conns=$c; threads=$((c < 2 ? 1 : 2))
    run "tls-direct-$c" "tools/call, https upstream directly ($c conn.)" "" "$direct" "$up" "$work/calls.txt"
    run "tls-native-$c" "tools/call, native gateway to the https upstream ($c conn.)" "tls-direct-$c" "$native" "$pg_native,$up" "$work/calls.txt"
  done
done
echo
node bench/wrk-table.mjs "$work/results.jsonl" "$cores"
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const p50 = (key, round) => rows.find((r) => r.key === key && r.round === round).wrk.p50;
const added = [...new Set(rows.map((r) => r.round))].map((n) => (p50("tls-native-1", n) - p50("tls-direct-1", n)).toFixed(3));
console.log(`p50 added by the gateway at 1 connection, per round (ms): ${added.join(", ")} (goal: at most 0.3)`);
' "$work/results.jsonl"
[ -z "${BENCH_JSON:-}" ] || cp "$work/results.jsonl" "$BENCH_JSON"
