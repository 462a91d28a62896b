//! Builds code mode's engine for the Worker (worker/code/sandbox.mjs): its module and its two
//! packages (quickjs-emscripten-core, @jitl/quickjs-wasmfile-release-sync) bundled into one ES
//! module, written as text (worker/build/code/sandbox.txt) for worker/code/run.mjs to hand to the
//! Worker Loader, and the engine's wasm beside it as data (quickjs.bin). Run after worker-build
//! (scripts/build.sh); `node worker/code/build.mjs`.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, '..', 'build', 'code');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [path.join(here, 'sandbox.mjs')],
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'neutral',
  // The packages' workerd builds (no fetch of the wasm, no Node APIs).
  conditions: ['workerd', 'worker', 'import'],
  mainFields: ['module', 'main'],
  external: ['cloudflare:workers', './quickjs.wasm'],
  outfile: path.join(out, 'sandbox.txt'),
  logLevel: 'warning',
});
const require = createRequire(import.meta.url);
copyFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'), path.join(out, 'quickjs.bin'));
for (const f of ['sandbox.txt', 'quickjs.bin']) {
  console.log(`worker/build/code/${f}: ${statSync(path.join(out, f)).size} bytes`);
}
