#!/usr/bin/env bash
# The main job: installs what is missing for it, builds the package, the Worker and the page, and
# serves MCP at http://127.0.0.1:8787/mcp with the demo page at http://127.0.0.1:8787/ (wrangler
# dev, local workerd). The test command's own tools are not installed here (scripts/test.sh does).
#   scripts/run.sh [--config FILE] [--port N]
set -euo pipefail
cd "$(dirname "$0")/.."
port=8787
config=""
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    *) echo "usage: scripts/run.sh [--config FILE] [--port N]" >&2; exit 2 ;;
  esac
done
scripts/bootstrap.sh --run
scripts/build.sh --run
# Session ids are tagged with MCP_SIEVE_SESSION_SECRET: one kept in worker/.dev.vars (not committed)
# lets sessions outlive a restart of the run command.
if ! grep -qs '^MCP_SIEVE_SESSION_SECRET=' worker/.dev.vars; then
  echo "MCP_SIEVE_SESSION_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >> worker/.dev.vars
fi
export WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false
args=(dev --cwd worker --ip 127.0.0.1 --port "$port" --show-interactive-dev-session=false)
if [ -n "$config" ]; then
  case "$config" in /*) ;; *) config="$OLDPWD/$config" ;; esac  # relative to where it was run
  # Through the MCP_SIEVE_KV namespace in its own local state: a document of any size fits.
  state="$PWD/worker/.wrangler/state-config"
  scripts/put-config.sh "$config" "$state"
  args+=(--persist-to "$state")
fi
echo "mcp-sieve: demo page http://127.0.0.1:$port/  ·  MCP endpoint http://127.0.0.1:$port/mcp"
exec node_modules/.bin/wrangler "${args[@]}"
