#!/usr/bin/env bash
# The release, checked on this machine (issue 41 items 1 and 5): what `cargo publish`, dist and the
# container would ship, installed the way a new user installs it, `--version` and one stdio answer
# from each. Fails on a missing or extra file, a version that is not the crate's, an installer that
# installed nothing.
#
#   1. crates: `cargo package` of mcp-sieve, mcp-sieve-encoder and mcp-sieve-server; each tarball
#      holds its sources, what they include and the licences, no dev files (tests, benches, scripts,
#      JS); step 3 builds the binary from the three tarballs alone
#   2. dist: `dist build` of this machine's archive (the static musl binary) and the installers
#      (shell, PowerShell, npm, Homebrew); the binary is static and prints the crate's version
#   3. cargo install from the packaged crates (the library and the encoder patched in from their own
#      tarballs: they are not on crates.io yet)
#   4. the shell installer, its download pointed at a loopback HTTP server holding the archive
#   5. the npm launcher, packed and installed from its tarball, downloading from that server; run
#      as node_modules/.bin/mcp-sieve and as `npx mcp-sieve-server`
#   6. the Homebrew formula: this archive's URL and sha256; the PowerShell installer, generated for
#      the plan's Windows target (the GNU build the Windows lane tests), parsed and read by
#      tests/release/powershell-installer.test.mjs: the URL it fetches, that it checks no sha256
#      (dist 0.34 has it check none: docs/src/install.md says so); no PowerShell here to run it
#   7. the Dockerfile: hadolint (no Docker engine here to build it), and the image carrying search
#      mode's model replayed with step 2's static binary (tests/release/image-model.test.mjs: the
#      model stage's fetch through a loopback hub stand-in, then the image's files, user and ENV
#      under chroot in a network namespace of its own; skipped, saying why, when not root)
#   8. the other platforms' code (the OS keychain's stores, handles, paths): `cargo clippy` of the
#      server for x86_64-pc-windows-gnu (ring's and mimalloc's C built by mingw-w64; the Windows
#      lane, scripts/test-windows.sh, runs it under Wine), x86_64-apple-darwin and
#      aarch64-apple-darwin (their C not compiled: no macOS SDK here, and clippy never links);
#      each skipped, saying why, when its rustup target or compiler is absent
#
# The binaries are built with the dist profile's settings turned down (no LTO, opt-level 0) into
# ~/.cargo/mcp-sieve-release-check (MCP_SIEVE_RELEASE_CHECK_DIR), so a run after a change takes
# seconds to a minute; RELEASE_OPTIMIZED=1
# builds the real dist profile into target/ (the archive a release ships; its sizes and install
# times are in docs/src/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
say() { printf '[release] %s\n' "$*"; }
fail() { printf '[release] FAILED: %s\n' "$*" >&2; exit 1; }

app=mcp-sieve-server
version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mcp-sieve-server"))')
lib_version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mcp-sieve"))')
enc_version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mcp-sieve-encoder"))')
target="$(uname -m)-unknown-linux-musl"
release_url="https://github.com/mcp-sieve/mcp-sieve/releases/download/v$version"
archive="$app-$target.tar.gz"

if [ "${RELEASE_OPTIMIZED:-0}" = 1 ]; then
  export CARGO_TARGET_DIR="$root/target"
else
  # Beside the rustup targets, not in this checkout (as the cross-check below): a fresh clone on a
  # machine that ran the check before rebuilds only the workspace's crates, not every dependency.
  export CARGO_TARGET_DIR="${MCP_SIEVE_RELEASE_CHECK_DIR:-${CARGO_HOME:-$HOME/.cargo}/mcp-sieve-release-check}"
  export CARGO_PROFILE_DIST_OPT_LEVEL=0 CARGO_PROFILE_DIST_LTO=off CARGO_PROFILE_DIST_CODEGEN_UNITS=256
fi
# dist writes its archives and installers to target/distrib whatever the cargo target folder.
distrib="$root/target/distrib"

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# Loopback only: no proxy between the installers and the local server.
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy
export NO_PROXY='*'

# `mcp-sieve --version` must be the crate's version; an initialize over stdio must be answered.
check_binary() {
  local what="$1" bin="$2"
  [ -x "$bin" ] || fail "$what: no binary at $bin"
  local got
  got=$("$bin" --version) || fail "$what: $bin --version exited non-zero"
  [ "$got" = "mcp-sieve $version" ] || fail "$what: --version printed '$got', want 'mcp-sieve $version'"
  check_stdio "$what" "$bin"
  say "$what: $got, stdio answers"
}
check_stdio() {
  local what="$1"; shift
  local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"check-release","version":"1"}}}'
  local out
  out=$(printf '%s\n' "$init" | timeout 20 "$@" stdio 2>"$work/stdio.err") \
    || fail "$what: mcp-sieve stdio exited non-zero: $(tail -3 "$work/stdio.err")"
  printf '%s' "$out" | python3 -c '
import json, sys
m = json.loads(sys.stdin.readline())
assert m.get("id") == 1 and m["result"]["serverInfo"]["name"], m
' || fail "$what: mcp-sieve stdio did not answer initialize: $out"
}

# --- 1. crates ------------------------------------------------------------------------------------
say "cargo package (mcp-sieve $lib_version, mcp-sieve-encoder $enc_version, $app $version)"
cargo package -q -p mcp-sieve -p mcp-sieve-encoder -p "$app" --no-verify --allow-dirty
lib_crate="$CARGO_TARGET_DIR/package/mcp-sieve-$lib_version.crate"
enc_crate="$CARGO_TARGET_DIR/package/mcp-sieve-encoder-$enc_version.crate"
cli_crate="$CARGO_TARGET_DIR/package/$app-$version.crate"
mkdir -p "$work/crates"
for crate in "$lib_crate" "$enc_crate" "$cli_crate"; do
  [ -f "$crate" ] || fail "cargo package wrote no $crate"
  tar -xzf "$crate" -C "$work/crates"
done
lib_dir="$work/crates/mcp-sieve-$lib_version"
enc_dir="$work/crates/mcp-sieve-encoder-$enc_version"
cli_dir="$work/crates/$app-$version"
for f in Cargo.toml Cargo.lock src/lib.rs catalog/default.json docs/src/rust.md README.md LICENSE-MIT LICENSE-APACHE; do
  [ -f "$lib_dir/$f" ] || fail "the mcp-sieve crate lacks $f"
done
for f in Cargo.toml Cargo.lock src/main.rs README.md LICENSE-MIT LICENSE-APACHE; do
  [ -f "$cli_dir/$f" ] || fail "the $app crate lacks $f"
done
for f in Cargo.toml src/lib.rs LICENSE-MIT LICENSE-APACHE; do
  [ -f "$enc_dir/$f" ] || fail "the mcp-sieve-encoder crate lacks $f"
done
for d in "$lib_dir" "$enc_dir" "$cli_dir"; do
  extra=$(cd "$d" && find . -path ./src -prune -o -type f -print \
    | grep -Ev '^\./(Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|\.cargo_vcs_info\.json|README\.md|CHANGELOG\.md|LICENSE-MIT|LICENSE-APACHE|catalog/default\.json|docs/src/rust\.md)$' || true)
  [ -z "$extra" ] || fail "$(basename "$d") holds files it does not build with: $extra"
done
grep -Eq '^\[dependencies\.mcp-sieve\]' "$cli_dir/Cargo.toml" \
  && grep -A3 '^\[dependencies\.mcp-sieve\]' "$cli_dir/Cargo.toml" | grep -q "^version = \"$lib_version\"" \
  || fail "the $app crate does not depend on mcp-sieve = \"$lib_version\" by version"
grep -A3 '^\[dependencies\.mcp-sieve-encoder\]' "$cli_dir/Cargo.toml" | grep -q "^version = \"$enc_version\"" \
  || fail "the $app crate does not depend on mcp-sieve-encoder = \"$enc_version\" by version"
grep -q '^name = "mcp-sieve"$' <(grep -A2 '^\[\[bin\]\]' "$cli_dir/Cargo.toml") \
  || fail "the $app crate does not install a binary named mcp-sieve"
say "crates: $(du -b "$lib_crate" | cut -f1), $(du -b "$enc_crate" | cut -f1) and $(du -b "$cli_crate" | cut -f1) bytes, sources and licences only"

# --- 2. dist --------------------------------------------------------------------------------------
# The installers of every target (the PowerShell one exists only with Windows among the targets:
# the plan's one Windows archive names it), then this machine's archive, with which dist rewrites
# the installers carrying its checksum.
dist plan --output-format=json >"$work/plan.json" 2>"$work/dist.log" \
  || { tail -30 "$work/dist.log" >&2; fail "dist plan"; }
windows_target=$(python3 - "$work/plan.json" <<'PY'
import json, sys
zips = [a for a in json.load(open(sys.argv[1]))["artifacts"].values()
        if a["kind"] == "executable-zip" and any("-windows-" in t for t in a["target_triples"])]
assert len(zips) == 1 and len(zips[0]["target_triples"]) == 1, zips
print(zips[0]["target_triples"][0])
PY
) || fail "dist plan lists no single Windows archive"
say "dist build --artifacts=global --target $windows_target; --artifacts=all --target $target"
rm -rf "$distrib"
dist build --artifacts=global --target "$windows_target" >"$work/dist.log" 2>&1 \
  || { tail -30 "$work/dist.log" >&2; fail "dist build --artifacts=global"; }
dist build --artifacts=all --target "$target" >>"$work/dist.log" 2>&1 \
  || { tail -30 "$work/dist.log" >&2; fail "dist build"; }
for f in "$archive" "$archive.sha256" "$app-installer.sh" "$app-installer.ps1" "$app.rb" "$app-npm-package.tar.gz"; do
  [ -f "$distrib/$f" ] || fail "dist built no $f"
done
(cd "$distrib" && sha256sum -c --quiet "$archive.sha256") || fail "$archive.sha256 does not match"
mkdir -p "$work/archive"
tar -xzf "$distrib/$archive" -C "$work/archive"
bin=$(find "$work/archive" -type f -name mcp-sieve)
if readelf -l "$bin" | grep -q 'INTERP'; then fail "$archive: mcp-sieve is dynamically linked"; fi
check_binary "archive $archive" "$bin"

# --- 3. cargo install from the packaged crates ----------------------------------------------------
# The tarball's own sources; the library and the encoder from their tarballs (not on crates.io
# yet); the same target and profile as dist's build, in a folder of its own (two workspaces sharing
# one deps folder confuse rustc: the same crate under two hashes) that stays for the next run.
say "cargo install --path (the $app crate, mcp-sieve and mcp-sieve-encoder patched to their tarballs)"
cargo install -q --path "$cli_dir" --root "$work/cargo-root" --target "$target" --profile dist \
  --target-dir "$CARGO_TARGET_DIR/install" --config 'profile.dist.inherits="release"' \
  --config "patch.crates-io.mcp-sieve.path=\"$lib_dir\"" \
  --config "patch.crates-io.mcp-sieve-encoder.path=\"$enc_dir\"" >"$work/install.log" 2>&1 \
  || { tail -30 "$work/install.log" >&2; fail "cargo install from the packaged crate"; }
check_binary "cargo install (packaged crate)" "$work/cargo-root/bin/mcp-sieve"

# --- a loopback server holding the release's files ------------------------------------------------
python3 - "$distrib" "$work/port" >"$work/http.log" 2>&1 <<'PY' &
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
PY
server_pid=$!
for _ in $(seq 50); do [ -f "$work/port" ] && break; sleep 0.1; done
[ -f "$work/port" ] || fail "the loopback server did not start: $(cat "$work/http.log")"
base="http://127.0.0.1:$(cat "$work/port")"

# --- 4. the shell installer -----------------------------------------------------------------------
say "shell installer from $base"
grep -q "$release_url" "$distrib/$app-installer.sh" || fail "the shell installer does not download from $release_url"
mkdir -p "$work/home"
HOME="$work/home" CARGO_HOME="$work/home/.cargo" MCP_SIEVE_SERVER_DOWNLOAD_URL="$base" \
  MCP_SIEVE_SERVER_NO_MODIFY_PATH=1 sh "$distrib/$app-installer.sh" >"$work/sh.log" 2>&1 \
  || { cat "$work/sh.log" >&2; fail "the shell installer"; }
check_binary "shell installer" "$work/home/.cargo/bin/mcp-sieve"

# --- 5. the npm launcher --------------------------------------------------------------------------
say "npm launcher from its packed tarball, downloading from $base"
mkdir -p "$work/npm-src" "$work/npm-user"
tar -xzf "$distrib/$app-npm-package.tar.gz" -C "$work/npm-src"
pkgdir=$(dirname "$(find "$work/npm-src" -name package.json -not -path '*/node_modules/*' | head -1)")
python3 - "$pkgdir/package.json" "$release_url" "$base" "$version" "$app" <<'PY' || fail "the npm package's package.json"
import json, sys
path, release, base, version, app = sys.argv[1:]
pkg = json.load(open(path))
assert pkg["name"] == app, pkg["name"]
assert pkg["version"] == version, pkg["version"]
assert pkg["artifactDownloadUrls"] == [release], pkg["artifactDownloadUrls"]
assert pkg["bin"] == {"mcp-sieve": "run-mcp-sieve.js"} or "mcp-sieve" in pkg["bin"], pkg["bin"]
pkg["artifactDownloadUrls"] = [base]
json.dump(pkg, open(path, "w"), indent=2)
PY
tgz=$(cd "$work" && npm pack --silent "$pkgdir" | tail -1)
(cd "$work/npm-user" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "$work/$tgz") \
  || fail "npm install of the packed launcher"
check_binary "npm launcher" "$work/npm-user/node_modules/.bin/mcp-sieve"
# As a user types it: `npx mcp-sieve-server …` in the project that installed it.
printf '#!/bin/sh\ncd "%s" && exec npx --no-install %s "$@"\n' "$work/npm-user" "$app" >"$work/npx-mcp-sieve"
chmod +x "$work/npx-mcp-sieve"
check_binary "npx $app" "$work/npx-mcp-sieve"

# --- 6. Homebrew formula and PowerShell installer -------------------------------------------------
formula="$distrib/$app.rb"
sum=$(cut -d' ' -f1 "$distrib/$archive.sha256")
grep -q "version \"$version\"" "$formula" || fail "the formula's version is not $version"
grep -q "url \"$release_url/$archive\"" "$formula" || fail "the formula does not download $release_url/$archive"
grep -A1 "url \"$release_url/$archive\"" "$formula" | grep -q "sha256 \"$sum\"" \
  || fail "the formula's sha256 for $archive is not the archive's ($sum)"
grep -q 'bin.install "mcp-sieve"' "$formula" || fail "the formula does not install mcp-sieve"
SIEVE_PS1="$distrib/$app-installer.ps1" SIEVE_DIST_PLAN="$work/plan.json" SIEVE_RELEASE_URL="$release_url" \
  SIEVE_SHA256_FILE="$distrib/$archive.sha256" \
  node --test tests/release/powershell-installer.test.mjs >"$work/ps1.log" 2>&1 \
  || { cat "$work/ps1.log" >&2; fail "tests/release/powershell-installer.test.mjs"; }
say "Homebrew formula: $archive at its sha256; PowerShell installer: parsed, fetches $app-$windows_target.zip, checks no sha256 (as install.md says)"

# --- 7. Dockerfile --------------------------------------------------------------------------------
hadolint=$(command -v hadolint || echo .venv/bin/hadolint)
"$hadolint" Dockerfile || fail "hadolint Dockerfile"
grep -q '^ENTRYPOINT \["/mcp-sieve"\]' Dockerfile || fail "the Dockerfile's entrypoint is not /mcp-sieve"
SIEVE_STATIC_BIN="$bin" node --test tests/release/image-model.test.mjs >"$work/image.log" 2>&1 \
  || { cat "$work/image.log" >&2; fail "tests/release/image-model.test.mjs"; }
replayed=$(grep -q '^# skipped 1' "$work/image.log" && echo "not replayed: $(grep -m1 -o '# SKIP.*' "$work/image.log" | cut -c8-)" \
  || echo "the image's search model replayed under chroot with no network")
say "Dockerfile: hadolint clean, $replayed (no Docker engine here to build it)"
# --- 8. Windows and macOS code -------------------------------------------------------------------
# Into a folder of their own beside the rustup targets it needs (not in this checkout's target/):
# a fresh clone on a machine that has the targets checks in seconds instead of ~7 minutes cold;
# a machine without them skips. MCP_SIEVE_CROSS_DIR chooses another folder.
cross_dir="${MCP_SIEVE_CROSS_DIR:-${CARGO_HOME:-$HOME/.cargo}/mcp-sieve-cross-check}"
installed=$(rustup target list --installed 2>/dev/null || true)
cross() {
  local t=$1; shift
  if ! grep -qx "$t" <<<"$installed"; then
    say "$t: skipped (rustup target add $t)"
    return
  fi
  env "$@" CARGO_TARGET_DIR="$cross_dir" cargo clippy -q -p "$app" --target "$t" -- -D warnings \
    >"$work/check-$t.log" 2>&1 || { cat "$work/check-$t.log" >&2; fail "cargo clippy --target $t"; }
  say "$t: cargo clippy clean"
}
if command -v x86_64-w64-mingw32-gcc >/dev/null; then
  cross x86_64-pc-windows-gnu
else
  say "x86_64-pc-windows-gnu: skipped (no x86_64-w64-mingw32-gcc: apt-get install gcc-mingw-w64-x86-64)"
fi
# `true` as the C compiler and archiver: the build scripts of ring and mimalloc finish without
# objects; the Rust code (Keychain Services' store among it) is checked all the same.
cross x86_64-apple-darwin CC_x86_64_apple_darwin=true AR_x86_64_apple_darwin=true
cross aarch64-apple-darwin CC_aarch64_apple_darwin=true AR_aarch64_apple_darwin=true

say "ok: $app $version"
