// Load and soak against the real Worker (loopback, bounded): SOAK_SECONDS (default 60) of mixed
// traffic from SOAK_SESSIONS (default 100) concurrent sessions, each with its own concerns. Every
// tools/list answer is checked against the set that session must see, computed here from the
// catalog document by the written rule (not by asking the server). The Worker's own memory (its
// wasm instance, reported per response with MCP_SIEVE_DIAGNOSTICS) must stay flat; the runtime
// processes' RSS is reported beside it (under wrangler dev it grows with traffic for a Worker
// that does nothing too: see the README).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { startWorker } from '../e2e/harness.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 100);
const VERSION = '2025-11-25';
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

async function post(body, session) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      ...(session ? { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': VERSION } : {}),
    },
    body: JSON.stringify(body),
  });
  wasmSeen = Math.max(wasmSeen, Number(res.headers.get('x-sieve-wasm-memory') ?? 0));
  const text = await res.text();
  const line = text.split('\n').filter((l) => l.startsWith('data: ')).pop();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(line ? line.slice(6) : text) : null };
}

async function open(cfg, n) {
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: `soak-${n}`, version: '1' } } });
  const id = init.headers.get('mcp-session-id');
  await post({ jsonrpc: '2.0', method: 'notifications/initialized', params: { concerns: cfg } }, id);
  return id;
}

async function listNames(session, n) {
  const names = [];
  let cursor;
  do {
    const r = await post({ jsonrpc: '2.0', id: n, method: 'tools/list', params: cursor ? { cursor } : {} }, session);
    if (r.status !== 200 || !r.json.result) throw new Error(`tools/list: ${r.status} ${JSON.stringify(r.json)}`);
    names.push(...r.json.result.tools.map((t) => t.name));
    cursor = r.json.result.nextCursor;
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
  // Warm up, then measure memory over the soak.
  await Promise.all(sessions.map((s, i) => listNames(s.id, i)));
  const samples = [rssKb()];
  const wasm = [wasmSeen];
  const sampler = setInterval(() => { samples.push(rssKb()); wasm.push(wasmSeen); }, 5000);
  const deadline = Date.now() + SECONDS * 1000;
  await Promise.all(sessions.map(async (s, i) => {
    for (let n = 0; Date.now() < deadline; n++) {
      try {
        if (n % 4 === 0) {
          const r = await post({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'echo', arguments: { message: `s${i}-${n}` } } }, s.id);
          stats.requests += 1;
          if (r.json?.result?.content?.[0]?.text !== `s${i}-${n}`) stats.errors += 1;
        } else if (n % 4 === 1) {
          const r = await post({ jsonrpc: '2.0', id: n, method: 'concerns/list' }, s.id);
          stats.requests += 1;
          if (JSON.stringify(r.json?.result?.configuration) !== JSON.stringify(Object.fromEntries(Object.entries(s.cfg).sort()))) stats.wrongView += 1;
        } else {
          const names = await listNames(s.id, n);
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
  const mb = (kb) => Math.round(kb / 1024);
  console.log(`soak: ${stats.requests} requests from ${SESSIONS} sessions in ${SECONDS} s, ${stats.errors} errors, `
    + `${stats.wrongView} answers showing another view; Worker wasm memory every 5 s (KB): ${wasm.map((b) => Math.round(b / 1024)).join(' ')}; `
    + `runtime processes' RSS every 5 s (MB): ${samples.map(mb).join(' ')}`);
  assert.equal(stats.errors, 0);
  assert.equal(stats.wrongView, 0);
  assert.ok(stats.requests > SESSIONS, 'traffic flowed');
  // Flat after warm-up: from the first sample (every session served once already) to the end,
  // the wasm memory may not grow by more than 1 MiB (a leak of 100 bytes a request would show).
  assert.ok(wasm[0] > 0, 'the Worker reports its wasm memory (MCP_SIEVE_DIAGNOSTICS)');
  assert.ok(wasm[wasm.length - 1] <= wasm[0] + 1024 * 1024, `wasm memory grew: ${wasm.join(' ')} bytes`);
});
