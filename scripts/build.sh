#!/usr/bin/env bash
# Builds the npm package (wasm-pack → pkg/, then scripts/package.mjs), the Worker (worker-build →
# worker/build/), the static site the Worker serves (web/ + pkg/ + the package's API reference →
# target/site/) and, for the tests, the native server (native/, target/debug/mcp-sieve).
# A line per step, with its time.
#   scripts/build.sh --run   only what scripts/run.sh serves: the package, the Worker, the site
#
# The wasm is built in a cargo folder of its own, target/wasm (CARGO_TARGET_DIR chooses another),
# so it can be built while cargo builds the host's code in target/ (scripts/test.sh does both at
# once; one cargo folder builds one thing at a time). Incremental: cargo skips what is unchanged,
# and so does this script after it: when cargo's .wasm is the one the package (or the Worker) was
# last made from, and the package (or the Worker) is still that one, wasm-bindgen, wasm-opt and
# esbuild are not run again (a run with nothing changed takes seconds); the API reference is made
# again only when the package's types changed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
run_only=false
[ "${1:-}" = "--run" ] && run_only=true
wasm_target="${CARGO_TARGET_DIR:-$PWD/target/wasm}"
stamps="$wasm_target/sieve-stamps"
mkdir -p "$stamps"
started=$SECONDS
step() {
  local name="$1" t0=$SECONDS; shift
  printf '[build] %s\n' "$name"
  "$@"
  printf '[build] %s: done in %s s\n' "$name" "$((SECONDS - t0))"
}
# digest FILE...: one sha256 of the files' contents (a missing file counts as empty).
digest() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }
# fresh NAME INPUT OUTPUT...: true when NAME's stamp says OUTPUT... were made from INPUT (a digest)
# and they are still what was made then. record NAME INPUT OUTPUT... writes that stamp.
fresh() { local name="$1" input="$2"; shift 2; [ "$(cat "$stamps/$name" 2>/dev/null)" = "$input $(digest "$@")" ]; }
record() { local name="$1" input="$2"; shift 2; echo "$input $(digest "$@")" > "$stamps/$name"; }

package() {
  # The cargo build wasm-pack runs (`--lib`, the wasm-release profile, the wasm feature), first on
  # its own: it tells whether the .wasm changed.
  CARGO_TARGET_DIR="$wasm_target" cargo build -q --lib --profile wasm-release \
    --target wasm32-unknown-unknown --features wasm
  local input outputs=(pkg/package.json pkg/mcp_sieve.js pkg/mcp_sieve.d.ts pkg/mcp_sieve_bg.wasm)
  input=$(digest "$wasm_target/wasm32-unknown-unknown/wasm-release/mcp_sieve.wasm" Cargo.toml \
    scripts/package.mjs "$(command -v wasm-pack)" "$(command -v wasm-bindgen)")
  if fresh package "$input" "${outputs[@]}"; then
    echo "pkg/ is made from this .wasm already"
    return
  fi
  CARGO_TARGET_DIR="$wasm_target" \
    wasm-pack --log-level warn build --profile wasm-release --target web --out-dir pkg --out-name mcp_sieve . --features wasm
  node scripts/package.mjs pkg   # Node + browser/bundler entries, conditional exports (one package)
  record package "$input" "${outputs[@]}"
}
worker() (
  cd worker
  export CARGO_TARGET_DIR="$wasm_target"
  # The cargo build worker-build runs, with its environment (wasm-bindgen's macro reads
  # WASM_BINDGEN_USE_JS_SYS; cargo does not see it change, so it is always set the same). The
  # `worker` profile: release optimized for size (the root Cargo.toml says why).
  WASM_BINDGEN_USE_JS_SYS=1 cargo build -q --lib --profile worker --target wasm32-unknown-unknown
  local input outputs=(build/index.js build/index_bg.wasm)
  input=$(digest "$wasm_target/wasm32-unknown-unknown/worker/mcp_sieve_worker.wasm" \
    "$(command -v worker-build)" "$(command -v wasm-bindgen)" "$(command -v wasm-opt)" "$(command -v esbuild)")
  if fresh worker "$input" "${outputs[@]}"; then
    echo "worker/build/ is made from this .wasm already"
    return
  fi
  WASM_BINDGEN_BIN="$(command -v wasm-bindgen)" WASM_OPT_BIN="$(command -v wasm-opt)" \
    ESBUILD_BIN="$(command -v esbuild)" worker-build --profile worker
  record worker "$input" "${outputs[@]}"
)
# Code mode's engine for the Worker's Dynamic Workers (worker/build/code/: QuickJS bundled, well
# under a second): built every time, beside worker-build's output.
worker_code() { node worker/code/build.mjs; }
site() {
  local input
  input=$(digest pkg/mcp_sieve.d.ts scripts/api-docs.sh package-lock.json)
  # The API reference (typedoc, seconds) is kept when the package's types are the same.
  rm -rf target/site.api
  if fresh api "$input" target/site/api/index.html; then mv target/site/api target/site.api; fi
  rm -rf target/site
  mkdir -p target/site
  cp -r web/. target/site/
  cp -r pkg target/site/pkg
  if [ -d target/site.api ]; then
    mv target/site.api target/site/api
    echo "API reference: target/site/api/index.html (the package's types are unchanged)"
  else
    scripts/api-docs.sh   # typedoc: the package's API reference into target/site/api (served at /api/)
    record api "$input" target/site/api/index.html
  fi
}

step "the npm package (wasm-pack → pkg/)" package
step "the Worker (worker-build → worker/build/)" worker
step "code mode's engine for the Worker (→ worker/build/code/)" worker_code
step "the demo page and API reference (→ target/site/)" site
$run_only || step "the native server (target/debug/mcp-sieve)" cargo build -q -p mcp-sieve-server
printf '[build] built in %s s\n' "$((SECONDS - started))"
