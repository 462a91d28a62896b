#!/usr/bin/env bash
# The Windows lane (issue 60), on Linux: mcp-sieve built for x86_64-pc-windows-gnu (mingw-w64) and
# run under Wine (Debian's wine64; scripts/bootstrap.sh installs both and the rustup target).
#   1. tests/windows/bcryptprimitives.c built into the DLL Wine 8 lacks (Rust's std imports its
#      ProcessPrng), put beside every .exe by tests/windows/wine-run.sh;
#   2. the native crate's unit tests and the encoder's, each test .exe run under Wine
#      (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=tests/windows/wine-run.sh);
#   3. tests/windows/lane.test.mjs: the official SDK's clients on Linux driving
#      `wine64 mcp-sieve.exe stdio --mcp-config …` (a bare name resolved through PATHEXT to a .cmd,
#      a .exe, folders with spaces), `serve` over HTTP, search by meaning (the encoder from a hub
#      stand-in), code mode, an https upstream's company CA, reload, `connect claude-desktop` and
#      `login` (into the file store and the Credential Manager).
# Its own Wine prefix (target/wine-prefix, made on first use: about 10 s). The build goes to
# ~/.cargo/mcp-sieve-windows-lane (SIEVE_WINDOWS_TARGET_DIR chooses another). Exits non-zero when a test fails
# or a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=x86_64-pc-windows-gnu
say() { printf '[windows] %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
started=$SECONDS

export WINE="${WINE:-/usr/lib/wine/wine64}"
[ -x "$WINE" ] || fail "no $WINE (apt-get install wine64)"
command -v x86_64-w64-mingw32-gcc >/dev/null || fail "no x86_64-w64-mingw32-gcc (apt-get install gcc-mingw-w64-x86-64)"
rustup target list --installed 2>/dev/null | grep -qx "$target" || fail "no $target target (rustup target add $target)"

# Its own target folder beside the rustup targets (as the release check's cross-check), not this
# checkout's target/: a fresh clone on a machine that ran the lane before rebuilds only this
# workspace's crates (minutes) instead of every dependency for Windows (a quarter of an hour).
export CARGO_TARGET_DIR="${SIEVE_WINDOWS_TARGET_DIR:-${CARGO_HOME:-$HOME/.cargo}/mcp-sieve-windows-lane}"
out="$CARGO_TARGET_DIR/$target/debug"
mkdir -p "$out"
export WINEPREFIX="$root/target/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export SIEVE_WINE_SHIM="$out/bcryptprimitives.dll"
# Wine makes the prefix's own folder but not its parent (a clone that never built has no target/).
mkdir -p "$(dirname "$WINEPREFIX")"

# 1. The shim.
x86_64-w64-mingw32-gcc -O2 -shared -o "$SIEVE_WINE_SHIM" \
  tests/windows/bcryptprimitives.c tests/windows/bcryptprimitives.def -ladvapi32 \
  || fail "building the bcryptprimitives.dll shim"
mkdir -p "$out/deps"
cp "$SIEVE_WINE_SHIM" "$out/deps/"
# A fresh prefix is made by its first program; made here, so no test's deadline pays for it.
"$WINE" cmd /c exit >/dev/null 2>&1 || true
say "shim and Wine prefix ready ($((SECONDS - started)) s)"

# 2. The native crate's unit tests under Wine.
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$root/tests/windows/wine-run.sh"
# Left out, each for a reason found by this lane and not yet mended:
# - code::sandbox::tests::memory_bombs_and_a_gigabyte_string_end_at_the_memory_limit: under Wine
#   (on a loaded 2-core machine) the Map bomb ran into the wall limit before 32 MB: a timing
#   artefact of the emulation, not a Windows behaviour.
skip=(
  --skip code::sandbox::tests::memory_bombs_and_a_gigabyte_string_end_at_the_memory_limit
)
# The unit tests live in the library once native/src is a lib and a thin bin (issue 59 item 2).
units=(--bin mcp-sieve)
[ -f native/src/lib.rs ] && units=(--lib)
# With the encoder's crate (native/encoder: its product paths and erf were the native crate's tests).
cargo test -q -p mcp-sieve-server -p mcp-sieve-encoder "${units[@]}" --target "$target" -- "${skip[@]}" \
  || fail "the native crate's unit tests under Wine"
say "unit tests passed under Wine ($((SECONDS - started)) s)"

# 3. End to end: mcp-sieve.exe under Wine, the official SDK's client on Linux.
cargo build -q -p mcp-sieve-server --target "$target" || fail "cargo build --target $target"
SIEVE_WIN_EXE="$out/mcp-sieve.exe" node --test --test-concurrency=1 tests/windows/lane.test.mjs \
  || fail "tests/windows/lane.test.mjs"
say "end-to-end under Wine passed; the lane took $((SECONDS - started)) s"
