#!/usr/bin/env bash
# Generates the npm package's API reference from its hand-written types (pkg/mcp_sieve.d.ts,
# with the `///` docs and `@example` blocks wasm-bindgen copies into it) with typedoc, into
# target/site/api/ (served by the Worker at /api/; generated, not committed). Run by
# scripts/build.sh after pkg/ and target/site/ are built.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
[ -f pkg/mcp_sieve.d.ts ] || { echo "pkg/mcp_sieve.d.ts is missing: run scripts/build.sh first" >&2; exit 1; }
mkdir -p target
# typedoc reads the entry through a TypeScript program: one that holds just the package's types.
cat > target/api-tsconfig.json <<'JSON'
{
  "compilerOptions": { "target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
                       "lib": ["ESNext", "DOM"], "strict": true, "noEmit": true, "types": [] },
  "files": ["../pkg/mcp_sieve.d.ts"]
}
JSON
rm -rf target/site/api
typedoc --entryPoints pkg/mcp_sieve.d.ts --tsconfig target/api-tsconfig.json --out target/site/api \
  --name "mcp-sieve (npm package)" --readme none --disableSources --treatWarningsAsErrors \
  --logLevel Warn
echo "API reference: target/site/api/index.html"
