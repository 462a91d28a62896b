//! What a fresh isolate's first requests compile (issue 63): the Worker (THIS=DIR: DIR/entry.mjs
//! and DIR/build, default worker/) under `wrangler dev` as scripts/bench-cold.sh starts it (MCP
//! only, the embedded default catalog; DOC=FILE puts FILE in KV instead), with workerd run through
//! bench/workerd-v8-flags.mjs and V8's `--trace-wasm-compilation-times`: each wasm function V8
//! compiles (Liftoff on its first call, on the request's thread; TurboFan when it tiers up, on
//! background threads), named from the wasm's name section, with its body's bytes and the time V8
//! took. After `wrangler dev` is ready it sends REQUESTS (default 2) stateless `tools/list`
//! requests (bench-cold.sh's first one), one at a time, and prints for each: its wall time,
//! workerd's CPU time for it (every thread, schedstat), what was compiled for it (totals by tier,
//! the TOP functions by time, default 25, and the crates' shares by bytes). Compile times of single
//! functions are noisy on a loaded machine; the bytes are not. A tool, not a test.
//!   node bench/cold-trace.mjs            THIS=/work/cold-base REQUESTS=1 TOP=40 node bench/cold-trace.mjs
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = resolve(process.env.THIS ?? join(root, 'worker'));
const requests = Number(process.env.REQUESTS ?? 2);
const top = Number(process.env.TOP ?? 25);
const work = mkdtempSync(join(tmpdir(), 'cold-trace-'));
const trace = join(work, 'v8.txt');

/** Names and body sizes of the wasm's functions, by V8's function index (imports first). */
function functions(wasm) {
  const b = readFileSync(wasm);
  let p = 8;
  const leb = () => {
    let r = 0, s = 0, x;
    do { x = b[p++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80);
    return r;
  };
  const skipLimits = () => { const f = b[p++]; leb(); if (f & 1) leb(); };
  let imports = 0;
  const sizes = [];
  const names = new Map();
  while (p < b.length) {
    const id = b[p++];
    const end = leb() + p;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        p += leb(); p += leb();
        const kind = b[p++];
        if (kind === 0) { leb(); imports++; } else if (kind === 1) { p++; skipLimits(); } else if (kind === 2) skipLimits();
        else if (kind === 3) p += 2; else if (kind === 4) { p++; leb(); }
      }
    } else if (id === 10) {
      for (let n = leb(); n > 0; n--) { const l = leb(); sizes.push(l); p += l; }
    } else if (id === 0) {
      const l = leb();
      if (b.toString('utf8', p, p + l) === 'name') {
        p += l;
        while (p < end) {
          const sub = b[p++];
          const subEnd = leb() + p;
          if (sub === 1) for (let n = leb(); n > 0; n--) { const i = leb(); const k = leb(); names.set(i, b.toString('utf8', p, p + k)); p += k; }
          p = subEnd;
        }
      }
    }
    p = end;
  }
  return { imports, sizes, names, code: sizes.reduce((a, c) => a + c, 0) };
}

/** The crate (or `crate::module` for ours) a Rust symbol belongs to, for the shares by bytes. */
function area(name) {
  const bare = name.replace(/^<+/, '').replace(/^&(mut )?/, '');
  const m = /^([a-z_0-9]+)(?:::([a-z_0-9]+))?/.exec(bare);
  if (!m) return name.startsWith('#') ? '(unnamed)' : '(other)';
  return m[1].startsWith('mcp_sieve') && m[2] ? `${m[1]}::${m[2]}` : m[1];
}

/** Prints what V8 compiled in the trace's `text`: totals by tier, the TOP functions, the areas. */
function report(label, text, fns) {
  const rows = [];
  for (const line of text.split('\n')) {
    const m = /#(\d+) using (\w+), took (\d+) μs.*bodysize (\d+)/.exec(line);
    if (m) rows.push({ tier: m[2], us: Number(m[3]), bytes: Number(m[4]), name: fns.names.get(Number(m[1])) ?? `#${m[1]}` });
  }
  console.log(`${label}:`);
  for (const tier of ['Liftoff', 'TurboFan']) {
    const t = rows.filter((x) => x.tier === tier);
    const sum = (f) => t.reduce((a, x) => a + f(x), 0);
    console.log(`${tier}: ${t.length} functions, ${sum((x) => x.bytes)} bytes, ${(sum((x) => x.us) / 1000).toFixed(1)} ms`);
    for (const x of [...t].sort((a, b) => b.us - a.us).slice(0, top)) {
      console.log(`  ${(x.us / 1000).toFixed(2).padStart(6)} ms ${String(x.bytes).padStart(7)} B  ${x.name.slice(0, 140)}`);
    }
    if (tier === 'Liftoff' && t.length) {
      const by = new Map();
      for (const x of t) { const k = area(x.name); const v = by.get(k) ?? [0, 0, 0]; by.set(k, [v[0] + 1, v[1] + x.bytes, v[2] + x.us]); }
      console.log('  by crate/module (bytes):');
      for (const [k, [n, bytes, us]] of [...by].sort((a, b) => b[1][1] - a[1][1]).slice(0, top)) {
        console.log(`  ${String(bytes).padStart(8)} B ${(us / 1000).toFixed(1).padStart(6)} ms ${String(n).padStart(4)} fns  ${k}`);
      }
    }
  }
}

const freePort = () => new Promise((res) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
});
function cpuMs(group) {
  let ns = 0;
  for (const pid of execFileSync('pgrep', ['-g', String(group), 'workerd']).toString().split(/\s+/).filter(Boolean)) {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      try { ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]); } catch { /* a thread ended */ }
    }
  }
  return ns / 1e6;
}

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'cold', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
} } });

const snap = join(work, 'snap');
for (const part of ['entry.mjs', 'build', 'code']) {
  try { statSync(join(src, part)); } catch { continue; }
  cpSync(join(src, part), join(snap, part), { recursive: true });
}
const cfg = join(work, 'cfg');
const toml = readFileSync(join(root, 'worker/wrangler.toml'), 'utf8')
  .replace(/^\[assets\][\s\S]*?^run_worker_first.*\n/m, '')
  .replace(/^main = .*/m, `main = "${join(snap, 'entry.mjs')}"`);
cpSync(join(root, 'worker/wrangler.toml'), join(cfg, 'wrangler.toml'));
writeFileSync(join(cfg, 'wrangler.toml'), toml);
const wrangler = join(root, 'node_modules/.bin/wrangler');
const state = join(work, 'state');
if (process.env.DOC) {
  execFileSync(wrangler, ['kv', 'key', 'put', 'config', '--path', resolve(process.env.DOC), '--binding', 'MCP_SIEVE_KV',
    '--local', '--cwd', cfg, '--persist-to', state], { stdio: 'ignore' });
}
const [port, inspector] = [await freePort(), await freePort()];
writeFileSync(trace, '');
const child = spawn(wrangler, ['dev', '--cwd', cfg, '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector),
  '--show-interactive-dev-session=false', '--log-level', 'info', '--persist-to', state], {
  detached: true,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: {
    ...process.env,
    WRANGLER_CI_DISABLE_CONFIG_WATCHING: 'true',
    MINIFLARE_WORKERD_PATH: join(root, 'bench/workerd-v8-flags.mjs'),
    WORKERD_V8_FLAGS: ['--trace-wasm-compilation-times', ...(process.env.V8_FLAGS ?? '').split(' ').filter(Boolean)].join(' '),
    WORKERD_STDOUT: trace,
  },
});
let log = '';
child.stdout.on('data', (d) => { log += d; });
child.stderr.on('data', (d) => { log += d; });
const stop = () => { try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ } };
try {
  for (let i = 0; !log.includes('Ready on'); i++) {
    if (child.exitCode !== null || i > 600) throw new Error(`wrangler dev did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));
  const wasm = join(snap, 'build/index_bg.wasm');
  const fns = functions(wasm);
  console.log(`${wasm}: ${statSync(wasm).size} bytes, ${fns.sizes.length} functions (${fns.code} bytes of code), ${fns.imports} imports`);
  report('at load (before the first request: the module\'s instantiation and its global scope)', readFileSync(trace, 'utf8'), fns);
  for (let r = 1; r <= requests; r++) {
    const before = readFileSync(trace, 'utf8').length;
    const c0 = cpuMs(child.pid);
    const t0 = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', body: BODY, headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' } });
    const text = await res.text();
    const wall = performance.now() - t0;
    const c1 = cpuMs(child.pid);
    // TurboFan's tier-up finishes on background threads after the answer.
    await new Promise((r) => setTimeout(r, 1500));
    const c2 = cpuMs(child.pid);
    console.log(`\nrequest ${r}: HTTP ${res.status}, ${text.length} bytes, wall ${wall.toFixed(1)} ms, workerd CPU ${(c1 - c0).toFixed(1)} ms to the answer (+${(c2 - c1).toFixed(1)} ms in the 1.5 s after)`);
    report(`request ${r}`, readFileSync(trace, 'utf8').slice(before), fns);
  }
} finally {
  stop();
  await new Promise((r) => setTimeout(r, 300));
  if (!process.env.KEEP) rmSync(work, { recursive: true, force: true });
}
