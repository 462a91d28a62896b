#!/usr/bin/env bash
# Load and soak against the Worker in wrangler dev (loopback, bounded): SOAK_SECONDS (default 60)
# of mixed traffic from SOAK_SESSIONS (default 100) concurrent sessions with different concerns.
# Checks every answer against the session's view and that the Worker's live heap at rest
# comes back to where it was before the soak (no leak).
# Needs a build (scripts/build.sh); scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --test tests/soak/soak.test.mjs
