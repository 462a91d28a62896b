//! The Worker's module load in workerd (V8 as Cloudflare runs it): what an isolate pays for the
//! wasm before its first request — the module's compile (workerd compiles a wasm module when it
//! loads the script; V8 then decodes and validates every function, and compiles each lazily on
//! its first call) and its instantiation (worker-build's index.js instantiates at the top level:
//! memory, data segments, tables). Workers' clocks do not advance inside a script, so it is timed
//! from outside: the CPU time workerd ran (every thread, from the scheduler's count, so a loaded
//! machine's other work does not inflate it) from `workerd serve` to its first answer, for three scripts that
//! carry the same bytes — as a data module (not compiled: the floor, which includes reading the
//! configuration that embeds them), as a wasm module (compiled at load), and as a wasm module
//! instantiated at the top level with stub imports — each started TRIALS times in turn; the
//! medians' differences are the module's compile and instantiation. A script, not a test;
//! scripts/bench-cold.sh runs it on each build it measures.
//!   node bench/wasm-load.mjs WASM [TRIALS] [V8 FLAG...]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';

const [wasm, trials = '7', ...flags] = process.argv.slice(2);
if (!wasm) {
  console.error('usage: node bench/wasm-load.mjs WASM [TRIALS] [V8 FLAG...]');
  process.exit(2);
}
// The workerd binary wrangler runs (the `workerd` package's own path).
const workerd = createRequire(import.meta.url)('workerd').default;

const SCRIPTS = {
  data: `import bytes from 'w.bin';
export default { fetch() { return new Response(String(bytes.byteLength)); } };`,
  compile: `import mod from 'w.wasm';
export default { fetch() { return new Response(String(WebAssembly.Module.exports(mod).length)); } };`,
  'compile+instantiate': `import mod from 'w.wasm';
const imports = {};
for (const imp of WebAssembly.Module.imports(mod)) {
  imports[imp.module] ??= {};
  imports[imp.module][imp.name] = imp.kind === 'function' ? () => {}
    : imp.kind === 'tag' ? new WebAssembly.Tag({ parameters: ['externref'] }) : undefined;
}
const instance = new WebAssembly.Instance(mod, imports);
export default { fetch() { return new Response(String(Object.keys(instance.exports).length)); } };`,
};

const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/** Milliseconds of CPU run so far by process `pid`, every thread (/proc/PID/task/T/schedstat, in ns). */
function cpuMs(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1e6;
}

/** CPU milliseconds workerd ran from `workerd serve` to the first answer of the script `kind`. */
async function start(kind) {
  const dir = mkdtempSync(join(tmpdir(), 'wasm-load-'));
  const port = await freePort();
  const module = kind === 'data' ? '(name = "w.bin", data = embed "w.wasm")' : '(name = "w.wasm", wasm = embed "w.wasm")';
  writeFileSync(join(dir, 'w.wasm'), readFileSync(wasm));
  writeFileSync(join(dir, 'main.js'), SCRIPTS[kind]);
  writeFileSync(join(dir, 'c.capnp'), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
  v8Flags = [${flags.map((f) => JSON.stringify(f)).join(', ')}],
);
const w :Workerd.Worker = (
  modules = [ (name = "main.js", esModule = embed "main.js"), ${module} ],
  compatibilityDate = "2025-09-01",
);
`);
  const child = spawn(workerd, ['serve', join(dir, 'c.capnp')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`workerd exited: ${err}`);
      const r = await fetch(`http://127.0.0.1:${port}/`).catch(() => null);
      if (r) {
        const body = await r.text();
        if (!r.ok) throw new Error(`${kind}: HTTP ${r.status} ${body} ${err}`);
        return cpuMs(child.pid);
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

const times = Object.fromEntries(Object.keys(SCRIPTS).map((k) => [k, []]));
for (let i = 0; i < Number(trials); i++) for (const kind of Object.keys(SCRIPTS)) times[kind].push(await start(kind));
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
for (const [kind, v] of Object.entries(times)) console.log(`  ${kind}: median ${m[kind].toFixed(1)} ms (${v.map((x) => x.toFixed(0)).join(', ')})`);
console.log(`${wasm}: compile ${(m.compile - m.data).toFixed(1)} ms, instantiate ${(m['compile+instantiate'] - m.compile).toFixed(1)} ms, both ${(m['compile+instantiate'] - m.data).toFixed(1)} ms (workerd's CPU, medians of ${trials} starts, above the same bytes as data)`);
