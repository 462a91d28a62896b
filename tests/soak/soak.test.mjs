// Load and soak against the real Worker (loopback, bounded): SOAK_SECONDS (default 60) of mixed
// traffic from SOAK_SESSIONS (default 100) concurrent sessions, each with its own concerns. Every
// tools/list answer is checked against the set that session must see, computed here from the
// catalog document by the written rule (not by asking the server). The Worker's live heap at rest
// (its wasm allocator's count, reported per response with MCP_SIEVE_DIAGNOSTICS) must come back to
// where it was before the soak; its linear memory, which follows peaks of concurrency, and the
// runtime processes' RSS are reported beside it (under wrangler dev it grows with traffic for a Worker
// that does nothing too: see docs/src/security.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { startWorker } from '../e2e/harness.mjs';
import { call, initialize } from '../common/mcp-raw.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 100);
const DOC = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
let server;

before(async () => { server = await startWorker({ extraArgs: ['--var', 'MCP_SIEVE_DIAGNOSTICS:1'] }); }, { timeout: 120_000 });
/** The largest wasm memory size any response reported since the last sample, in bytes. */
let wasmSeen = 0;
after(async () => { await server?.stop(); });

/** The concern configurations sessions use: every combination of one value or none per concern. */
function configurations() {
  let out = [{}];
  for (const c of DOC.concerns) {
    out = out.flatMap((cfg) => [cfg, ...c.values.map((v) => ({ ...cfg, [c.name]: v }))]);
  }
  return out;
}

/** Tool names a session with `cfg` must see: unmapped or equal for every configured concern. */
function expected(cfg) {
  return DOC.tools
    .filter((t) => Object.entries(cfg).every(([c, v]) => {
      const mapped = DOC.concernMapping?.[t.name]?.[c] ?? t._meta?.concerns?.[c];
      return mapped === undefined || String(mapped) === v;
    }))
    .map((t) => t.name)
    .sort();
}

/**
 * How often `wrangler dev` reloaded its runtime under the soak. Its proxy then answers a POST in
 * flight with this 503 and asks the client to send it again; the request is sent once more, and
 * the reloads are reported. The Worker's own failures stay errors.
 */
const RELOADED = 'Your worker restarted mid-request';
let reloads = 0;

/** The live heap (bytes) the last answer reported (`X-Sieve-Wasm-Heap`). */
let heapSeen = 0;

/** A request in `session`; notes the Worker's wasm memory size and live heap the answer reports. */
async function request(session, method, params) {
  let r = await call(server.url, session, method, params);
  if (r.status === 503 && r.body.startsWith(RELOADED)) {
    reloads += 1;
    r = await call(server.url, session, method, params);
  }
  wasmSeen = Math.max(wasmSeen, Number(r.headers.get('x-sieve-wasm-memory') ?? 0));
  heapSeen = Number(r.headers.get('x-sieve-wasm-heap') ?? 0);
  return r;
}

async function open(cfg, n) {
  const { sessionId, init } = await initialize(server.url, { clientInfo: { name: `soak-${n}`, version: '1' }, initializedParams: { concerns: cfg } });
  wasmSeen = Math.max(wasmSeen, Number(init.headers.get('x-sieve-wasm-memory') ?? 0));
  return sessionId;
}

async function listNames(session) {
  const names = [];
  let cursor;
  do {
    const r = await request(session, 'tools/list', cursor ? { cursor } : {});
    if (r.status !== 200 || !r.response?.result) throw new Error(`tools/list: ${r.status} ${r.body.slice(0, 300)}`);
    names.push(...r.response.result.tools.map((t) => t.name));
    cursor = r.response.result.nextCursor;
  } while (cursor);
  return names.sort();
}

/** Resident memory of the server's process group, in KB. */
function rssKb() {
  const pgid = server.pid;
  if (!pgid) return NaN;
  const out = execFileSync('ps', ['-o', 'rss=', '-g', String(pgid)], { encoding: 'utf8' });
  return out.split('\n').map(Number).filter(Boolean).reduce((a, b) => a + b, 0);
}

test(`soak: ${SESSIONS} sessions, ${SECONDS} s of mixed traffic`, { timeout: (SECONDS + 120) * 1000 }, async () => {
  const cfgs = configurations();
  const sessions = [];
  for (let i = 0; i < SESSIONS; i++) {
    const cfg = cfgs[i % cfgs.length];
    sessions.push({ cfg, want: expected(cfg), id: await open(cfg, i) });
  }
  assert.ok(new Set(sessions.map((s) => s.want.join())).size > 4, 'sessions must see different sets');
  const stats = { requests: 0, errors: 0, wrongView: 0 };
  // Warm up with every kind of request the soak sends (a kind first served mid-soak grows the
  // allocator's high-water mark once, which is not a leak), then measure memory over the soak.
  await Promise.all(sessions.map(async (s, i) => {
    await request(s.id, 'tools/call', { name: 'echo', arguments: { message: `warm-${i}` } });
    await request(s.id, 'concerns/list');
    await listNames(s.id);
  }));
  // The live heap at rest (nothing else in flight), before and after the soak.
  const atRest = async () => { await request(sessions[0].id, 'ping'); return heapSeen; };
  const heapBefore = await atRest();
  const samples = [rssKb()];
  const wasm = [wasmSeen];
  const sampler = setInterval(() => { samples.push(rssKb()); wasm.push(wasmSeen); }, 5000);
  const deadline = Date.now() + SECONDS * 1000;
  await Promise.all(sessions.map(async (s, i) => {
    for (let n = 0; Date.now() < deadline; n++) {
      try {
        if (n % 4 === 0) {
          const r = await request(s.id, 'tools/call', { name: 'echo', arguments: { message: `s${i}-${n}` } });
          stats.requests += 1;
          if (r.response?.result?.content?.[0]?.text !== `s${i}-${n}`) stats.errors += 1;
        } else if (n % 4 === 1) {
          const r = await request(s.id, 'concerns/list');
          stats.requests += 1;
          if (JSON.stringify(r.response?.result?.configuration) !== JSON.stringify(Object.fromEntries(Object.entries(s.cfg).sort()))) stats.wrongView += 1;
        } else {
          const names = await listNames(s.id);
          stats.requests += 1;
          if (names.join() !== s.want.join()) stats.wrongView += 1;
        }
      } catch (e) {
        stats.errors += 1;
        if (stats.errors <= 3) console.log(`soak error: ${e.message.slice(0, 200)}`);
      }
    }
  }));
  clearInterval(sampler);
  samples.push(rssKb());
  wasm.push(wasmSeen);
  const heapAfter = await atRest();
  const mb = (kb) => Math.round(kb / 1024);
  console.log(`soak: ${stats.requests} requests from ${SESSIONS} sessions in ${SECONDS} s, ${stats.errors} errors, `
    + `${stats.wrongView} answers showing another view, ${reloads} reloads of the local runtime (the request sent again); Worker wasm memory every 5 s (KB): ${wasm.map((b) => Math.round(b / 1024)).join(' ')}; `
    + `live heap at rest before and after (KB): ${Math.round(heapBefore / 1024)} ${Math.round(heapAfter / 1024)}; `
    + `runtime processes' RSS every 5 s (MB): ${samples.map(mb).join(' ')}`);
  if (stats.errors || stats.wrongView) console.log(`the Worker's last output:\n${server.output()}`);
  assert.equal(stats.errors, 0);
  assert.ok(reloads <= 2, `wrangler dev reloaded the runtime ${reloads} times`);
  assert.equal(stats.wrongView, 0);
  assert.ok(stats.requests > SESSIONS, 'traffic flowed');
  // No leak: the live heap at rest after the soak is within 256 KiB of the one before it (a leak
  // of 20 bytes a request would show). The linear memory is reported, not bounded: it only grows,
  // and its high-water mark follows how many requests happened to be in flight at once.
  assert.ok(heapBefore > 0, 'the Worker reports its live heap (MCP_SIEVE_DIAGNOSTICS)');
  assert.ok(heapAfter <= heapBefore + 256 * 1024, `the live heap grew: ${heapBefore} -> ${heapAfter} bytes`);
});
