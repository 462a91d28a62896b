#!/usr/bin/env bash
# Every test: formatting, clippy, native cargo tests, wasm tests in Chromium, and the end-to-end
# tests against the real Worker in workerd (official MCP SDK client, Chromium page test).
# Exits non-zero if any step fails; ends with a table of the steps' times and "N passed, N failed".
#
# Each artifact is built once: `cargo test` builds target/debug/mcp-sieve, which the end-to-end
# lanes use (`scripts/build.sh --run` builds only the wasm: the package, the Worker, the page). The
# wasm builds go to target/wasm, a cargo folder of their own, so they run beside clippy and
# `cargo test` (one cargo folder builds one thing at a time; the wasm's fat LTO and wasm-opt keep
# one core busy while the other is idle). The server lanes (the Worker's, the native server's)
# run beside a third lane of the steps that build in folders of their own (the release check, the
# Windows lane; `nice`d so the servers keep their deadlines; then the Worker's security findings,
# to shorten the Worker's lane); each starts as soon as what it runs
# is built (the native server's and the builds lane after `cargo test`, the Worker's when the
# wasm is built too), beside the rest of the wasm lane (the package's checks, `wasm-pack test`).
#
# A clone with no target/ gets a link to ${CARGO_HOME:-~/.cargo}/mcp-sieve-test-target (as the
# release check and the Windows lane keep theirs there): the compiled dependencies outlive the
# clone, so the next clone rebuilds only this workspace's crates. SIEVE_TEST_TARGET_DIR chooses
# the folder; SIEVE_TEST_TARGET_DIR=none keeps target/ in the clone. Two runs at once on one
# machine would share it: run one at a time.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
# Every temporary file of the run in one folder, removed when it ends: a Chromium a test stops
# leaves its scoped folder in $TMPDIR (37 MB each, about seven a run: 2.5 GB had piled up in /tmp).
TMPDIR="$(mktemp -d)"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
times="$(mktemp)"   # "seconds<TAB>result<TAB>step" per step, for the table at the end
shared_target="${SIEVE_TEST_TARGET_DIR:-${CARGO_HOME:-$HOME/.cargo}/mcp-sieve-test-target}"
if [ ! -e target ] && [ ! -L target ] && [ "$shared_target" != none ]; then
  mkdir -p "$shared_target" && ln -s "$shared_target" target
fi
# This workspace's artifacts in the kept build folders that no build of the last six hours wrote:
# a crate's file name carries a hash of its dependencies and features, so each change of those
# leaves the old files behind (44 GB had piled up and a run failed with a full disk). Dependencies'
# files are kept; a crate of ours whose file is removed is built again.
prune_kept() {
  local kept="${CARGO_HOME:-$HOME/.cargo}" names n d
  names=$(ls tests/*.rs native/tests/*.rs examples/*.rs native/examples/*.rs 2>/dev/null | xargs -n1 basename | sed 's/\.rs$//')
  names="$names mcp_sieve mcp_sieve_server mcp_sieve_encoder mcp_sieve_worker"
  # The folders as scripts/test-windows.sh and scripts/check-release.sh choose them.
  for d in "$shared_target" "${SIEVE_WINDOWS_TARGET_DIR:-$kept/mcp-sieve-windows-lane}" \
    "${MCP_SIEVE_RELEASE_CHECK_DIR:-$kept/mcp-sieve-release-check}" "${MCP_SIEVE_CROSS_DIR:-$kept/mcp-sieve-cross-check}"; do
    [ -d "$d" ] || continue
    while IFS= read -r -d '' dir; do
      for n in $names; do
        find "$dir" -maxdepth 1 -type f \( -name "$n-*" -o -name "lib$n-*" \) -mmin +360 -delete 2>/dev/null
      done
    done < <(find "$d" -maxdepth 4 -type d \( -name deps -o -name examples \) -print0)
    find "$d" -maxdepth 4 -type d -name incremental -prune -exec rm -rf {} + 2>/dev/null
  done
}
[ "$shared_target" = none ] || prune_kept
t0=$SECONDS
scripts/bootstrap.sh || exit 1
printf '%s\t-\tok\t%s\n' "$((SECONDS - t0))" "bootstrap (tools, only what is missing)" >> "$times"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER=/usr/bin/chromedriver
# This workspace's crates are built once per run: cargo's incremental data would only be written.
export CARGO_INCREMENTAL=0
passed=0; failed=0; failures=()
# cpu_seconds: sets $cpu to the CPU time (user + system) of this shell's finished children so far,
# in seconds. `times` runs in this shell (in a pipe or $(...) it would ask a new one, which has no
# children yet).
cpu_seconds() {
  local file="$times.cpu.$BASHPID"
  times > "$file"
  cpu=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); s += t[1] * 60 + t[2] } printf "%d", s }' "$file")
}
step() {
  local name="$1"; shift
  echo "=== $name"
  local t0=$SECONDS cpu c0
  cpu_seconds; c0=$cpu
  local result=ok
  if "$@"; then passed=$((passed + 1)); echo "=== $name: ok ($((SECONDS - t0)) s)"
  else result=FAILED; failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAILED ($((SECONDS - t0)) s)"; fi
  cpu_seconds
  printf '%s\t%s\t%s\t%s\n' "$((SECONDS - t0))" "$((cpu - c0))" "$result" "$name" >> "$times"
  [ "$result" = ok ]
}
# Lanes: a function run in the background, its output kept in a file and printed whole by
# join_lanes, its steps counted from the "=== name: ok|FAILED (N s)" lines.
lanes="$(mktemp -d)"
lane_pids=(); lane_names=()
lane() { "$2" > "$lanes/$1" 2>&1 & lane_pids+=($!); lane_names+=("$1"); }
join_lanes() {
  wait "${lane_pids[@]}"
  local name
  for name in "${lane_names[@]}"; do
    cat "$lanes/$name"
    passed=$((passed + $(grep -c "^=== .*: ok ([0-9]* s)$" "$lanes/$name")))
    while IFS= read -r failure; do
      failed=$((failed + 1)); failures+=("$failure")
    done < <(sed -n "s/^=== \(.*\): FAILED ([0-9]* s)$/\1/p" "$lanes/$name")
    rm -f "$lanes/$name"
  done
  lane_pids=(); lane_names=()
}
step "cargo fmt --check" cargo fmt --all -- --check
step "package-lock.json lists every platform's optional packages (npm ci takes it unchanged)" python3 scripts/check-lock.py
step "no import cycles between core modules or the files of one folder" python3 scripts/check-cycles.py
step "documentation book (mdbook build docs; every relative link and #anchor of README.md, ARCHITECTURE.md and docs/src)" sh -c 'mdbook build docs && python3 scripts/check-docs.py'
# The wasm lane, beside clippy and `cargo test`: the package, the Worker and the page, in their own
# cargo folder (target/wasm), the package's checks, then the core's wasm tests in Chromium.
wasm_lane() {
  export CARGO_TARGET_DIR="$PWD/target/wasm"
  step "build (scripts/build.sh --run: the package, the Worker, the page)" scripts/build.sh --run || return
  touch "$lanes/built"
  step "npm package types (tsc against pkg/mcp_sieve.d.ts)" tsc --noEmit -p tests/types
  step "npm package size (gzip -9 of pkg/mcp_sieve_bg.wasm)" scripts/check-size.sh
  step "npm package as published (npm pack; Node, esbuild, Vite, webpack, import map in Chromium; publint, attw, tsc; README and book examples)" scripts/check-package.sh
  step "wasm-pack test (Chromium)" wasm-pack test --headless --chrome . --features wasm,testing
}
# "$lanes/wasm-done" when it ends, whether or not it built (the Worker's lane waits for one of the two).
wasm_lane_done() { wasm_lane; touch "$lanes/wasm-done"; }
lane wasm wasm_lane_done
# `cargo test` builds target/debug/mcp-sieve too (the native crate's tests run it), with the
# features of this run: that binary is the one the end-to-end lanes run. Removed first, so a
# `cargo test` that fails to build cannot leave an older one to be tested.
rm -f target/debug/mcp-sieve
step "cargo clippy" cargo clippy --workspace --all-targets --features mcp-sieve/testing -- -D warnings
step "cargo test" cargo test --workspace --features mcp-sieve/testing
[ -x target/debug/mcp-sieve ] \
  || step "the native server for the end-to-end lanes (cargo test built none)" cargo build -p mcp-sieve-server
step "release plan (dist plan: every target's archive and installer; the release workflow in sync)" dist plan
# The lanes after `cargo test` start as soon as what they run is built, beside the rest of the wasm
# lane (the package's checks and `wasm-pack test`, 4 to 6 minutes in the last runs, which they
# waited for until issue 63): the builds lane and the native server's at once (they need only
# cargo's folders and target/debug/mcp-sieve), the Worker's when the wasm lane's build is done.
# The builds lane holds the steps that build in cargo folders of their own (not target/): the
# release as installed, and the Windows lane under Wine (issue 60: the native crate's unit tests,
# the stdio, connect and login end-to-end tests against the x86_64-pc-windows-gnu build), `nice`d
# so the servers keep their deadlines. The server lanes share no port or state, and mostly wait on
# their servers. Each lane's output is printed whole when all are done, and its steps counted.
# The Worker's security findings run at the end of the builds lane, not after the Worker's
# end-to-end: that lane was the longest (825 s against the builds lane's 497 s at fca8204), and
# by then the builds are done.
# wasm_built: waits for the wasm lane's build; true if it built.
wasm_built() {
  while [ ! -f "$lanes/built" ] && [ ! -f "$lanes/wasm-done" ]; do sleep 1; done
  [ -f "$lanes/built" ]
}
builds_lane() {
  step "release as installed (scripts/check-release.sh: crates, archive, cargo install of the packaged crate, shell installer and npm launcher from a loopback server, Homebrew formula, Dockerfile)" nice -n 10 scripts/check-release.sh
  step "Windows lane (x86_64-pc-windows-gnu under Wine: unit tests, stdio through PATHEXT, serve, connect, login)" nice -n 10 scripts/test-windows.sh
  wasm_built || return 0 # the Worker's lane counts the failure
  step "security findings (issue 13; wrangler dev, upstream server-everything, hostile upstream)" node --test --test-concurrency=1 tests/security/
}
lane builds builds_lane
# The end-to-end files (tests/e2e/NAME.test.mjs) the native server's lane runs: those that run
# against the Worker or, with SIEVE_TARGET=native, the native server; and those that run only the
# native binary and start no Worker (160 s of the Worker lane's 656 s when it ran them too, on a
# quiet machine at 98525c7). Every other file runs in the Worker's lane only.
e2e_both="sdk sdk-v2 sdk-engine gateway ask tasks-2026 typed-tools views discovery views-upstream upstreams eras
  tasks-strict task-asks task-create-asks relay relay-stream mrtr identity oauth access explain explain-upstream pinning
  rate-limits code-mode-tasks"
e2e_native="code-mode-cancel code-mode-stdio code-mode connect crlf desktop-internet export index-workers-ai login-browser
  oauth-client-checks oauth-elicit oauth-https-keys oauth-upstream operate-native otel reload search-model-hub search-upstreams serve-close
  stdio-close stdio-late-question stdio-upstreams stdio task-asks-stdio tls-upstream upstream-health"
e2e() { local n; for n in "$@"; do echo "tests/e2e/$n.test.mjs"; done; }
# The Worker lane's files: every file but the native-only ones (a new file runs there by default).
e2e_worker() {
  local f native=" $(echo $e2e_native) "
  for f in tests/e2e/*.test.mjs; do
    [[ "$native" == *" $(basename "$f" .test.mjs) "* ]] || echo "$f"
  done
}
native_lane() {
  step "security findings (issue 13; native server: transport, sessions, gateway)" env SIEVE_TARGET=native node --test --test-concurrency=1 tests/security/gateway.test.mjs tests/security/gateway-bounds.test.mjs tests/security/gateway-refresh.test.mjs tests/security/body-limit.test.mjs tests/security/headers.test.mjs tests/security/sessions.test.mjs tests/security/sessions-answers.test.mjs tests/security/upstream-untrusted.test.mjs tests/security/upstream-space.test.mjs tests/security/upstream-budget.test.mjs tests/security/upstream-deadline.test.mjs tests/security/upstream-down.test.mjs
  # The files run against either server (SIEVE_TARGET=native picks the native one), then those that
  # run only the native binary (its stdio, CLI commands, stdio upstreams): the Worker's lane leaves
  # those out, as they would only run again there or be skipped.
  step "end-to-end (native server + MCP SDK)" env SIEVE_TARGET=native node --test $(e2e $e2e_both $e2e_native)
}
if [ -x target/debug/mcp-sieve ]; then
  lane native native_lane
else
  failed=$((failed + 1)); failures+=("end-to-end, native server (not run: no target/debug/mcp-sieve)")
fi
worker_lane() {
  step "end-to-end (wrangler dev + MCP SDK + Chromium)" node --test --test-concurrency=1 $(e2e_worker)
  step "MCP conformance suite (wrangler dev, catalog/conformance.json)" timeout 600 node --test tests/conformance/
  step "soak (100 sessions, 60 s, wrangler dev)" timeout 300 scripts/soak.sh
}
if wasm_built; then
  lane worker worker_lane
else
  failed=$((failed + 1)); failures+=("end-to-end and security findings, Worker (not run: build failed)")
fi
join_lanes
rm -rf "$lanes"
echo "=== steps (seconds; wall-clock each: the wasm lane ran beside clippy and cargo test, then beside the server lanes, the release check and the Windows lane)"
# CPU seconds beside the wall's: on a machine other work loads, they say what the step costs.
awk -F'\t' '{ printf "%6d s  %6s cpu-s  %-6s  %s\n", $1, $2, $3, substr($4, 1, 80) }' "$times"
rm -f "$times" "$times".cpu.*
echo "=== wall: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
[ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
