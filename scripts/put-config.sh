#!/usr/bin/env bash
# Stores a catalog document as the key "config" of the Worker's MCP_SIEVE_KV namespace in local
# wrangler state, where the Worker reads it at startup (documents of any size: a Worker variable
# cannot hold more than a command-line argument does, 128 KB).
#   scripts/put-config.sh CATALOG.json STATE_DIR    (then: wrangler dev --persist-to STATE_DIR)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/put-config.sh CATALOG.json STATE_DIR" >&2; exit 2; }
file="$(realpath "$1")"; state="$(realpath -m "$2")"
[ -r "$file" ] || { echo "mcp-sieve: cannot read $1" >&2; exit 2; }
cd "$(dirname "$0")/.."
WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true \
  node_modules/.bin/wrangler kv key put config --path "$file" --binding MCP_SIEVE_KV --local \
  --cwd worker --persist-to "$state" >/dev/null
