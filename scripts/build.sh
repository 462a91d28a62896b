#!/usr/bin/env bash
# Builds the npm package (wasm-pack → pkg/, then scripts/package.mjs), the Worker (worker-build →
# worker/build/), the static site the Worker serves (web/ + pkg/ + the package's API reference →
# target/site/) and, for the tests, the native server (native/, target/debug/mcp-sieve).
# Incremental: cargo skips what is unchanged. A line per step, with its time.
#   scripts/build.sh --run   only what scripts/run.sh serves: the package, the Worker, the site
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
run_only=false
[ "${1:-}" = "--run" ] && run_only=true
started=$SECONDS
step() {
  local name="$1" t0=$SECONDS; shift
  printf '[build] %s\n' "$name"
  "$@"
  printf '[build] %s: done in %s s\n' "$name" "$((SECONDS - t0))"
}

package() {
  wasm-pack --log-level warn build --profile wasm-release --target web --out-dir pkg --out-name mcp_sieve . --features wasm
  node scripts/package.mjs pkg   # Node + browser/bundler entries, conditional exports (one package)
}
worker() (
  cd worker
  WASM_BINDGEN_BIN="$(command -v wasm-bindgen)" WASM_OPT_BIN="$(command -v wasm-opt)" \
    ESBUILD_BIN="$(command -v esbuild)" worker-build --release
)
site() {
  rm -rf target/site
  mkdir -p target/site
  cp -r web/. target/site/
  cp -r pkg target/site/pkg
  scripts/api-docs.sh   # typedoc: the package's API reference into target/site/api (served at /api/)
}

step "the npm package (wasm-pack → pkg/)" package
step "the Worker (worker-build → worker/build/)" worker
step "the demo page and API reference (→ target/site/)" site
$run_only || step "the native server (target/debug/mcp-sieve)" cargo build -q -p mcp-sieve-server
printf '[build] built in %s s\n' "$((SECONDS - started))"
