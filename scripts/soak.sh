#!/usr/bin/env bash
# Load and soak against the Worker in wrangler dev (loopback, bounded): SOAK_SECONDS (default 60)
# of mixed traffic from SOAK_SESSIONS (default 100) concurrent sessions with different concerns.
# Needs a build (scripts/build.sh). Not part of scripts/test.sh: its memory check is not yet met.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --test tests/soak/soak.test.mjs
