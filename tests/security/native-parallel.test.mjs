// Issue 23, item 3 (first bullet): the native server (target/debug/mcp-sieve, always, whatever
// SIEVE_TARGET says) serves requests in parallel. One slow but legal request (a `tools/list`
// whose 256 name patterns are each tried on every one of 5,000 tools) must not hold a plain
// `tools/list` sent while it runs, whether from another session or from the same one; and two
// requests of one session that both change it must not lose either change (the server reads a
// session under a short lock, runs the request without one, and writes back only if nobody
// wrote the session meanwhile; else it runs the request again on the new session).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startNative } from '../e2e/harness.mjs';
import { call, openSession } from '../common/mcp-raw.mjs';
import { sleep } from './helpers.mjs';

const TOOLS = 5000;
/** The session idle time the server runs with: a session is written for its use every 2 s. */
const IDLE_SECONDS = 8;

let server;
let tmp;

/** A catalog of TOOLS tools in 5 groups with 10 tags, and one concern. */
function catalog() {
  const tools = [];
  for (let i = 0; i < TOOLS; i++) {
    tools.push({ name: `tool_${i}`, description: `Tool ${i}`, inputSchema: { type: 'object' },
      groups: [`g${i % 5}`], tags: [`t${i % 10}`], _meta: { concerns: { security: i % 2 ? 'high' : 'low' } } });
  }
  return {
    groups: [0, 1, 2, 3, 4].map((i) => ({ name: `g${i}` })),
    tags: [...Array(10).keys()].map((i) => ({ name: `t${i}` })),
    concerns: [{ name: 'security', description: 'Security level', values: ['high', 'low'], default: 'low' }],
    tools,
  };
}

/** 256 patterns of 250 bytes that match no tool: legal (within the caps), and work for every tool. */
const SLOW_FILTER = { namePatterns: [...Array(256).keys()].map((k) => `*${'q'.repeat(240)}${String(k).padStart(3, '0')}*`) };

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-parallel-'));
  writeFileSync(path.join(tmp, 'catalog.json'), JSON.stringify(catalog()));
  server = await startNative({
    extraArgs: ['--catalog', path.join(tmp, 'catalog.json')],
    env: { MCP_SIEVE_SESSION_IDLE_SECONDS: String(IDLE_SECONDS) },
  });
}, { timeout: 60_000 });
after(async () => {
  await server?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Runs `f`; resolves { ms, r, at } (its duration, its answer, when it ended). */
async function timed(f) {
  const started = Date.now();
  const r = await f();
  return { ms: Date.now() - started, r, at: Date.now() };
}

/** The median duration of five plain `tools/list` in session `sid`, ms. */
async function usual(sid) {
  const ms = [];
  for (let i = 0; i < 5; i++) {
    const { ms: one, r } = await timed(() => call(server.url, sid, 'tools/list', {}));
    assert.equal(r.status, 200, r.text.slice(0, 200));
    ms.push(one);
  }
  return ms.sort((a, b) => a - b)[2];
}

/** Starts the slow request in `slowSid`, then a plain one in `plainSid`, and checks the plain one was not held. */
async function plainWhileSlow(slowSid, plainSid) {
  const alone = await usual(plainSid);
  const slow = timed(() => call(server.url, slowSid, 'tools/list', { filter: SLOW_FILTER }));
  await sleep(150);
  const plain = await timed(() => call(server.url, plainSid, 'tools/list', {}));
  const s = await slow;
  assert.equal(s.r.status, 200, s.r.text.slice(0, 300));
  assert.deepEqual(s.r.response?.result?.tools, [], 'the slow request matches nothing');
  assert.equal(plain.r.status, 200, plain.r.text.slice(0, 300));
  assert.equal(plain.r.response?.result?.tools?.length, 50, 'a plain tools/list is a page of 50');
  assert.ok(s.ms >= 400, `the slow request must be slow for this test to mean anything (took ${s.ms} ms)`);
  // Held behind the slow one, the plain request would take what is left of it.
  assert.ok(plain.at < s.at, `the plain tools/list (${plain.ms} ms) ended after the slow one (${s.ms} ms): it waited for it`);
  assert.ok(plain.ms <= Math.max(s.ms / 5, alone * 10),
    `a plain tools/list took ${plain.ms} ms while a slow one ran (${s.ms} ms); alone it takes ${alone} ms`);
}

test('23.3 a plain tools/list is answered in its usual time while a slow one of another session runs', { timeout: 120_000 }, async () => {
  const a = await openSession(server.url);
  const b = await openSession(server.url);
  await plainWhileSlow(a.sessionId, b.sessionId);
});

test('23.3 a plain tools/list is answered in its usual time while a slow one of the same session runs', { timeout: 120_000 }, async () => {
  const a = await openSession(server.url);
  await plainWhileSlow(a.sessionId, a.sessionId);
});

test('23.3 two requests of one session that both change it keep both changes', { timeout: 120_000 }, async () => {
  const { sessionId } = await openSession(server.url);
  // After 2 s idle, the slow request writes the session back (it records its use) ...
  await sleep(2200);
  const slow = call(server.url, sessionId, 'tools/list', { filter: SLOW_FILTER });
  await sleep(150);
  // ... and a concerns/update, while it runs, changes the session too.
  const upd = await call(server.url, sessionId, 'concerns/update', { concerns: { security: 'high' } });
  assert.equal(upd.status, 200, upd.text.slice(0, 300));
  assert.ok(upd.response?.result, upd.text.slice(0, 300));
  // Keep the session in use while the slow request runs (its length depends on the machine).
  let done = false;
  const slowDone = slow.then((r) => { done = true; return r; });
  while (!done) {
    await Promise.race([slowDone, sleep(1000)]);
    if (!done) assert.equal((await call(server.url, sessionId, 'ping', {})).status, 200);
  }
  assert.equal((await slowDone).status, 200);
  const list = await call(server.url, sessionId, 'concerns/list', {});
  const security = list.response?.result?.concerns?.find((c) => c.name === 'security');
  assert.equal(security?.effective, 'high',
    `the concern update made while another request of the session ran is kept: ${list.text.slice(0, 400)}`);
  const tools = await call(server.url, sessionId, 'tools/list', {});
  assert.ok(tools.response.result.tools.every((t) => Number(t.name.slice(5)) % 2 === 1),
    'tools/list is filtered by the kept concern (only "high" tools)');
});
