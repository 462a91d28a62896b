// Issue 13, items 4 and 5: bounded sessions and tasks, against the Worker (or the native server
// with SIEVE_TARGET=native) serving the default catalog.
//  4. an idle session expires (MCP_SIEVE_SESSION_IDLE_SECONDS; default 24 h) and is then 404,
//     while one in use stays; oversized initialize fields are -32602 naming the field and limit;
//  5. the 101st live task of a session is refused (default cap 100) with an error naming the cap;
//     a repeated notifications/initialized changes nothing.
// Issue 23, item 5: DELETE and the GET stream check the session's principal as POST does.
import http from 'node:http';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { LEGACY, call, openSession, post } from '../common/mcp-raw.mjs';
import { assertCapped, sleep, startWith } from './helpers.mjs';

let server;
before(async () => { server = await startWith(null); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

const initialize = (params) => post(server.url, {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'sec', version: '1' }, ...params },
});

test('4. an idle session expires after MCP_SIEVE_SESSION_IDLE_SECONDS and is then 404; a used one stays', { timeout: 150_000 }, async () => {
  const short = await startWith(null, { MCP_SIEVE_SESSION_IDLE_SECONDS: '3' });
  try {
    const idle = (await openSession(short.url)).sessionId;
    const busy = (await openSession(short.url)).sessionId;
    for (let i = 0; i < 5; i++) {
      await sleep(1000);
      const r = await call(short.url, busy, 'ping');
      assert.equal(r.status, 200, `a session in use does not expire (after ${i + 1} s): ${r.text}`);
    }
    const r = await call(short.url, idle, 'tools/list');
    assert.equal(r.status, 404, `a session idle for 5 s with a 3 s idle limit must be 404; got ${r.status}`);
  } finally {
    await short.stop();
  }
});

test('4. a huge clientInfo.name is -32602 naming the field and the limit', async () => {
  const r = await initialize({ clientInfo: { name: 'n'.repeat(100_000), version: '1' } });
  assertCapped(r, /clientInfo\.name/, 100_000);
  assert.equal(r.headers.get('mcp-session-id'), null, 'no session is created');
});

test('4. a huge clientInfo.version is -32602 naming the field and the limit', async () => {
  const r = await initialize({ clientInfo: { name: 'sec', version: 'v'.repeat(100_000) } });
  assertCapped(r, /clientInfo\.version/, 100_000);
});

test('4. thousands of capability keys are -32602 naming the field and the limit', async () => {
  const capabilities = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`x-cap-${i}`, {}]));
  const r = await initialize({ capabilities });
  assertCapped(r, /capabilities/, 5000);
});

test('5. the 101st live task of a session is refused with an error naming the cap of 100', { timeout: 120_000 }, async () => {
  const { sessionId } = await openSession(server.url);
  const create = () => call(server.url, sessionId, 'tools/call', {
    name: 'long_report', arguments: { seconds: 30 }, task: { ttl: 300_000 },
  });
  for (let i = 1; i <= 100; i++) {
    const r = await create();
    assert.ok(r.response?.result?.task?.taskId, `task ${i} is created: ${r.text.slice(0, 300)}`);
  }
  const r = await create();
  const err = r.response?.error;
  assert.ok(err, `task 101 must be refused; got ${r.text.slice(0, 300)}`);
  assert.ok([-32600, -32602].includes(err.code), r.text.slice(0, 300));
  assert.match(err.message, /\b100\b/, 'the message names the cap');
  assert.match(err.message, /task/i);
  const listed = await call(server.url, sessionId, 'tasks/list');
  const count = listed.response.result.tasks.length + (listed.response.result.nextCursor ? 50 : 0);
  assert.ok(count <= 100, 'the refused task was not stored');
});

test('5. a repeated notifications/initialized does not replace concerns set by the first', async () => {
  const init = await initialize({});
  const sid = init.headers.get('mcp-session-id');
  const first = await post(server.url, { jsonrpc: '2.0', method: 'notifications/initialized', params: { concerns: { security: 'high' } } }, { sessionId: sid });
  assert.equal(first.status, 202);
  const set = await call(server.url, sid, 'concerns/list');
  assert.equal(set.response.result.configuration.security, 'high', 'the first notifications/initialized configures');
  const second = await post(server.url, { jsonrpc: '2.0', method: 'notifications/initialized', params: { concerns: { security: 'low' } } }, { sessionId: sid });
  assert.equal(second.status, 202);
  const after = await call(server.url, sid, 'concerns/list');
  assert.equal(after.response.result.configuration.security, 'high', 'the concerns set by the first notifications/initialized stay');
});

// Issue 23, item 5: a session belongs to its principal on every method. With MCP_SIEVE_TOKENS
// naming alice and bob, bob holding alice's session id gets 404 on DELETE (and her session lives
// on) and on GET (he never reads her stream of list changes); alice's own GET and DELETE work.
test('23.5 DELETE and the GET stream of a session are 404 for another principal', { timeout: 150_000 }, async () => {
  const tokens = { alice: 'token-alice-0123456789', bob: 'token-bob-0123456789' };
  const owned = await startWith(null, { MCP_SIEVE_TOKENS: JSON.stringify(tokens) });
  try {
    const as = (who) => ({ Authorization: `Bearer ${tokens[who]}` });
    const { sessionId } = await openSession(owned.url, { headers: as('alice') });
    const del = await post(owned.url, undefined, { method: 'DELETE', sessionId, headers: as('bob') });
    assert.equal(del.status, 404, `bob's DELETE of alice's session: ${del.status} ${del.text.slice(0, 200)}`);
    const still = await call(owned.url, sessionId, 'tools/list', {}, { headers: as('alice') });
    assert.equal(still.status, 200, `alice's session lives on after bob's DELETE: ${still.text.slice(0, 200)}`);
    const bobs = await openStream(owned.url, sessionId, as('bob'));
    assert.equal(bobs.status, 404, 'bob cannot open the GET stream of alice\'s session');
    const hers = await openStream(owned.url, sessionId, as('alice'));
    assert.equal(hers.status, 200, 'alice opens her own stream');
    assert.match(hers.contentType ?? '', /text\/event-stream/);
    const ended = await post(owned.url, undefined, { method: 'DELETE', sessionId, headers: as('alice') });
    assert.equal(ended.status, 204, 'alice ends her session');
    const gone = await call(owned.url, sessionId, 'tools/list', {}, { headers: as('alice') });
    assert.equal(gone.status, 404, 'and it is gone');
  } finally {
    await owned.stop();
  }
});

/** GET on the endpoint with `sessionId` and `headers`: the status and Content-Type, the stream then closed. */
function openStream(url, sessionId, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'GET',
      headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY, ...headers },
    }, (res) => {
      resolve({ status: res.statusCode, contentType: res.headers['content-type'] });
      res.resume();
      req.destroy();
    });
    req.on('error', (e) => { if (!req.destroyed) reject(e); });
    req.setTimeout(20_000, () => req.destroy(new Error('no answer to GET in 20 s')));
    req.end();
  });
}
