// A panic in the Worker or in a session's Durable Object, against the real Worker under
// `wrangler dev`: the request that panicked gets a 500, the panic is logged, and the next
// requests are served correctly (the isolate starts a fresh wasm instance; the session comes
// back from its storage). MCP_SIEVE_DIAGNOSTICS lets a test ask for the panic (X-Sieve-Panic):
// no input reaches one otherwise.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWorker } from './harness.mjs';
import { sleep } from '../security/helpers.mjs';
import { call, initialize, post, stateless } from '../common/mcp-raw.mjs';

let worker;
before(async () => {
  worker = await startWorker({ extraArgs: ['--var', 'MCP_SIEVE_DIAGNOSTICS:1'], logLevel: 'log' });
}, { timeout: 120_000 });
after(async () => { await worker?.stop(); });

const PANIC = { 'X-Sieve-Panic': '1' };

/** Waits (up to 10 s: wrangler forwards the runtime's log with a delay) until the log holds `n` panic reports. */
async function panicsLogged(n) {
  for (let i = 0; i < 100 && (worker.output().match(/deliberate panic/g) ?? []).length < n; i++) await sleep(100);
  return (worker.output().match(/deliberate panic/g) ?? []).length;
}
const names = (r) => r.response.result.tools.map((t) => t.name).sort();

// A panic on the full path of the front Worker (a GET never takes the fast path), as the
// isolate's first request; the next test's panic is on the stateless fast path.
test('a panic on the first request is a JSON-RPC 500; the next request is served', { timeout: 30_000 }, async () => {
  const crashed = await post(worker.url, undefined, { method: 'GET', headers: { ...PANIC, Accept: 'text/event-stream' } });
  assert.equal(crashed.status, 500, crashed.body);
  assert.equal(crashed.messages[0]?.error?.code, -32603, crashed.body);
  const again = await stateless(worker.url, 'tools/list', { filter: { groups: ['email'] } });
  assert.equal(again.status, 200, again.body);
  assert.ok(again.response.result.tools.length > 0, again.body);
});

test('a panic in the Worker is a logged 500; the next request is served', { timeout: 30_000 }, async () => {
  const before = await stateless(worker.url, 'tools/list', { filter: { groups: ['math'] } });
  assert.equal(before.status, 200, before.body);
  const crashed = await stateless(worker.url, 'tools/list', {}, { headers: PANIC });
  assert.equal(crashed.status, 500, crashed.body);
  assert.equal(crashed.messages[0]?.error?.code, -32603, crashed.body);
  for (let i = 0; i < 3; i++) {
    const again = await stateless(worker.url, 'tools/list', { filter: { groups: ['math'] } });
    assert.equal(again.status, 200, again.body);
    assert.deepEqual(names(again), names(before));
  }
  assert.ok(await panicsLogged(1) >= 1, 'the panic is logged');
});

test('a panic in a session object is a JSON-RPC 500; the session and its concerns survive', { timeout: 30_000 }, async () => {
  const { sessionId } = await initialize(worker.url, { concerns: { security: 'high' } });
  const before = await call(worker.url, sessionId, 'tools/list');
  assert.equal(before.status, 200, before.body);
  const crashed = await call(worker.url, sessionId, 'tools/list', {}, { headers: PANIC });
  assert.equal(crashed.status, 500, crashed.body);
  assert.equal(crashed.messages[0]?.error?.code, -32603, crashed.body);
  const after = await call(worker.url, sessionId, 'tools/list');
  assert.equal(after.status, 200, after.body);
  assert.deepEqual(names(after), names(before));
  const concerns = await call(worker.url, sessionId, 'concerns/list');
  assert.equal(concerns.response.result.configuration.security, 'high', concerns.body);
  // A fresh session still works too.
  const other = await initialize(worker.url);
  assert.equal((await call(worker.url, other.sessionId, 'ping')).status, 200);
  assert.ok(await panicsLogged(2) >= 2, 'the panic is logged');
});

test('every response reports the wasm memory size when diagnostics are on', async () => {
  const r = await stateless(worker.url, 'tools/list');
  assert.equal(r.status, 200, r.body);
  assert.ok(Number(r.headers.get('x-sieve-wasm-memory')) >= 65536, `header: ${r.headers.get('x-sieve-wasm-memory')}`);
});
