#!/usr/bin/env bash
# Every test: formatting, clippy, native cargo tests, wasm tests in Chromium, and the end-to-end
# tests against the real Worker in workerd (official MCP SDK client, Chromium page test).
# Exits non-zero if any step fails; ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
times="$(mktemp)"   # "seconds<TAB>result<TAB>step" per step, for the table at the end
t0=$SECONDS
scripts/bootstrap.sh || exit 1
printf '%s\tok\t%s\n' "$((SECONDS - t0))" "bootstrap (tools, only what is missing)" >> "$times"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER=/usr/bin/chromedriver
passed=0; failed=0; failures=()
step() {
  local name="$1"; shift
  echo "=== $name"
  local t0=$SECONDS
  local result=ok
  if "$@"; then passed=$((passed + 1)); echo "=== $name: ok ($((SECONDS - t0)) s)"
  else result=FAILED; failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAILED ($((SECONDS - t0)) s)"; fi
  printf '%s\t%s\t%s\n' "$((SECONDS - t0))" "$result" "$name" >> "$times"
}
step "cargo fmt --check" cargo fmt --all -- --check
step "package-lock.json lists every platform's optional packages (npm ci takes it unchanged)" python3 scripts/check-lock.py
step "no import cycles between core modules or the files of one folder" python3 scripts/check-cycles.py
step "documentation book (mdbook build docs; every relative link and #anchor of README.md, ARCHITECTURE.md and docs/src)" sh -c 'mdbook build docs && python3 scripts/check-docs.py'
step "cargo clippy" cargo clippy --workspace --all-targets --features mcp-sieve/testing -- -D warnings
step "cargo test" cargo test --workspace --features mcp-sieve/testing
step "release plan (dist plan: every target's archive and installer; the release workflow in sync)" dist plan
step "release as installed (scripts/check-release.sh: crates, archive, cargo install of the packaged crate, shell installer and npm launcher from a loopback server, Homebrew formula, Dockerfile)" scripts/check-release.sh
step "wasm-pack test (Chromium)" wasm-pack test --headless --chrome . --features wasm,testing
if step "build" scripts/build.sh; then
  step "npm package types (tsc against pkg/mcp_sieve.d.ts)" tsc --noEmit -p tests/types
  step "npm package size (gzip -9 of pkg/mcp_sieve_bg.wasm)" scripts/check-size.sh
  step "npm package as published (npm pack; Node, esbuild, Vite, webpack, import map in Chromium; publint, attw, tsc; README and book examples)" scripts/check-package.sh
  # The tests against servers run in two lanes at once, the Worker's (wrangler dev) and the native
  # server's: they share no port or state, and mostly wait on their servers (the run is ~7 minutes
  # shorter). Each lane's output is printed whole when both are done, and its steps counted.
  worker_lane() {
    step "end-to-end (wrangler dev + MCP SDK + Chromium)" node --test --test-concurrency=1 tests/e2e/
    step "security findings (issue 13; wrangler dev, upstream server-everything, hostile upstream)" node --test --test-concurrency=1 tests/security/
    step "MCP conformance suite (wrangler dev, catalog/conformance.json)" timeout 600 node --test tests/conformance/
    step "soak (100 sessions, 60 s, wrangler dev)" timeout 300 scripts/soak.sh
  }
  native_lane() {
    step "security findings (issue 13; native server: transport, sessions, gateway)" env SIEVE_TARGET=native node --test --test-concurrency=1 tests/security/gateway.test.mjs tests/security/gateway-bounds.test.mjs tests/security/gateway-refresh.test.mjs tests/security/body-limit.test.mjs tests/security/headers.test.mjs tests/security/sessions.test.mjs tests/security/sessions-answers.test.mjs tests/security/upstream-untrusted.test.mjs tests/security/upstream-space.test.mjs tests/security/upstream-budget.test.mjs tests/security/upstream-deadline.test.mjs tests/security/upstream-down.test.mjs
    step "end-to-end (native server + MCP SDK)" env SIEVE_TARGET=native node --test tests/e2e/sdk.test.mjs tests/e2e/sdk-v2.test.mjs tests/e2e/sdk-engine.test.mjs tests/e2e/gateway.test.mjs tests/e2e/ask.test.mjs tests/e2e/tasks-2026.test.mjs tests/e2e/typed-tools.test.mjs tests/e2e/views.test.mjs tests/e2e/discovery.test.mjs tests/e2e/views-upstream.test.mjs tests/e2e/upstreams.test.mjs tests/e2e/eras.test.mjs tests/e2e/tasks-strict.test.mjs tests/e2e/task-asks.test.mjs tests/e2e/task-create-asks.test.mjs tests/e2e/search-upstreams.test.mjs tests/e2e/relay.test.mjs tests/e2e/relay-stream.test.mjs tests/e2e/mrtr.test.mjs tests/e2e/identity.test.mjs tests/e2e/oauth.test.mjs tests/e2e/access.test.mjs tests/e2e/explain.test.mjs tests/e2e/explain-upstream.test.mjs tests/e2e/pinning.test.mjs tests/e2e/upstream-health.test.mjs tests/e2e/tls-upstream.test.mjs tests/e2e/oauth-upstream.test.mjs tests/e2e/oauth-elicit.test.mjs tests/e2e/desktop-internet.test.mjs tests/e2e/connect.test.mjs tests/e2e/reload.test.mjs tests/e2e/otel.test.mjs tests/e2e/rate-limits.test.mjs tests/e2e/stdio-late-question.test.mjs
  }
  lanes="$(mktemp -d)"
  worker_lane > "$lanes/worker" 2>&1 &
  wpid=$!
  native_lane > "$lanes/native" 2>&1 &
  npid=$!
  wait "$wpid" "$npid"
  for lane in worker native; do
    cat "$lanes/$lane"
    passed=$((passed + $(grep -c "^=== .*: ok ([0-9]* s)$" "$lanes/$lane")))
    while IFS= read -r name; do
      failed=$((failed + 1)); failures+=("$name")
    done < <(sed -n "s/^=== \(.*\): FAILED ([0-9]* s)$/\1/p" "$lanes/$lane")
  done
  rm -rf "$lanes"
else
  failed=$((failed + 1)); failures+=("end-to-end (not run: build failed)")
fi
# Windows under Wine (issue 60): the native crate's unit tests and the stdio, connect and login
# end-to-end tests against the x86_64-pc-windows-gnu build (its own target folder, see the script).
step "Windows lane (x86_64-pc-windows-gnu under Wine: unit tests, stdio through PATHEXT, connect, login)" scripts/test-windows.sh
echo "=== steps (seconds; the two server lanes ran at once)"
awk -F'\t' '{ printf "%6d s  %-6s  %s\n", $1, $2, substr($3, 1, 90) }' "$times"
rm -f "$times"
echo "=== wall: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
[ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
