// Hostile-input catalogue against the real Worker: every case in hostile-cases.json names its
// expected HTTP status and JSON-RPC code, and after each case the Worker must still answer a normal
// request correctly. Special bodies: {"$long": n} a string of n bytes, {"$huge": n} a body of n bytes,
// {"$cursorReuse": method} a real tools/list cursor replayed on `method` with another filter.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startTarget } from './harness.mjs';
import { initialize, post, sessionHeaders } from '../common/mcp-raw.mjs';

const CASES = JSON.parse(readFileSync(new URL('./hostile-cases.json', import.meta.url), 'utf8'));
let server;

before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

/** Sends `body` (a string, or undefined for none) with exactly the case's method and headers. */
const send = (method, body, headers) => post(server.url, body, { method, headers });

const baseHeaders = (session) => (session ? sessionHeaders(session) : {});

async function newSession(clientName = 'hostile') {
  return (await initialize(server.url, { clientInfo: { name: clientName, version: '1' } })).sessionId;
}

async function body(c, session) {
  const b = c.body;
  if (b === undefined) return undefined;
  if (typeof b === 'string') return b;
  if (b.$long) return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x'.repeat(b.$long) } } });
  if (b.$huge) return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(b.$huge) } });
  if (b.$cursorReuse) {
    const first = await send('POST', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), baseHeaders(session));
    const cursor = first.response?.result?.nextCursor;
    assert.ok(cursor, 'the default catalog has more than one page of tools');
    return JSON.stringify({ jsonrpc: '2.0', id: 2, method: b.$cursorReuse, params: { cursor, filter: { tags: ['beta'] } } });
  }
  return JSON.stringify(b);
}

/** A normal request answered correctly: the Worker keeps serving. */
async function stillServing(session) {
  const r = await send('POST', JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: { filter: { groups: ['calendar'] } } }), baseHeaders(session));
  assert.equal(r.status, 200);
  assert.ok(r.response.result.tools.length > 0);
  assert.ok(r.response.result.tools.every((t) => t.groups.includes('calendar')));
}

test(`hostile-input catalogue (${CASES.length} cases)`, async (t) => {
  assert.ok(CASES.length >= 50);
  const session = await newSession();
  const restricted = await newSession('restricted-hostile');
  let passed = 0;
  for (const c of CASES) {
    await t.test(c.name, async () => {
      const sid = c.session === 'none' ? null : c.session === 'forged' ? 'forged-0000' : c.client ? restricted : session;
      const headers = { ...baseHeaders(sid), ...(c.headers ?? {}) };
      const r = await send(c.method ?? 'POST', await body(c, sid), headers);
      assert.equal(r.status, c.status, `${c.name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
      if (c.code !== undefined) {
        assert.equal(r.response?.error?.code, c.code, `${c.name}: ${r.body.slice(0, 300)}`);
        assert.ok(r.response.error.message.length > 10, 'the message says what was wrong');
      }
      await stillServing(session);
      passed += 1;
    });
  }
  console.log(`hostile-input catalogue: ${passed} of ${CASES.length} cases passed, Worker still serving after each`);
});
