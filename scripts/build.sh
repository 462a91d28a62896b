#!/usr/bin/env bash
# Builds the npm package (wasm-pack → pkg/, then scripts/package.mjs), the Worker (worker-build → worker/build/), the native
# server (native/, target/debug/mcp-sieve), and the
# static site the Worker serves (web/ + pkg/ → target/site/). Incremental: cargo skips what is
# unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

wasm-pack build --profile wasm-release --target web --out-dir pkg --out-name mcp_sieve . --features wasm
node scripts/package.mjs pkg   # Node + browser/bundler entries, conditional exports (one package)
( cd worker \
  && WASM_BINDGEN_BIN="$(command -v wasm-bindgen)" WASM_OPT_BIN="$(command -v wasm-opt)" \
     ESBUILD_BIN="$(command -v esbuild)" worker-build --release )

cargo build -p mcp-sieve-server   # target/debug/mcp-sieve

rm -rf target/site
mkdir -p target/site
cp -r web/. target/site/
cp -r pkg target/site/pkg
scripts/api-docs.sh   # typedoc: the package's API reference into target/site/api (served at /api/)
