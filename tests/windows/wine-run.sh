#!/bin/sh
# CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER of the Windows lane (scripts/test-windows.sh): runs a
# Windows .exe (a test binary cargo built) under Wine, with the bcryptprimitives.dll shim beside
# it (tests/windows/bcryptprimitives.c; Wine 8 lacks ProcessPrng, which Rust's std imports).
# WINE, WINEPREFIX and SIEVE_WINE_SHIM come from the lane's script.
set -eu
exe=$1
shift
dir=$(dirname "$exe")
[ -f "$dir/bcryptprimitives.dll" ] || cp "$SIEVE_WINE_SHIM" "$dir/bcryptprimitives.dll"
exec "${WINE:-/usr/lib/wine/wine64}" "$exe" "$@"
