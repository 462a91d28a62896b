// The Worker's fast path of a 2025-11-25 session's plain request (worker/src/sessions/fast.rs,
// worker/entry.mjs) answers exactly as the full path does: the front checks the request in one
// synchronous call and sends it to the session's Durable Object, which serves it in another. A
// session's POST with a Content-Length takes it; the same request sent chunked (no
// Content-Length) takes the full path, in the front and in the object. With MCP_SIEVE_DIAGNOSTICS
// set, an answer the object served on the fast path carries `X-Sieve-Path: fast-session`, so each
// pair is checked to have taken both paths (a request that meets the look at the catalog
// document in KV due every 5 s, which only the full path takes, is sent again). A paged list walked on one path and then the other
// shows they read and write the same session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWorker } from './harness.mjs';
import { initialize, outcome, parseMessages, post, postChunked, postMarked, sessionHeaders } from '../common/mcp-raw.mjs';

let worker;
before(async () => {
  worker = await startWorker({ extraArgs: ['--var', 'MCP_SIEVE_DIAGNOSTICS:1'] });
}, { timeout: 180_000 });
after(async () => {
  await worker?.stop();
});


let nextId = 1000;
const request = (method, params = {}) => JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });

test('every plain request of a session gets the same answer from the fast path and the full path', { timeout: 60_000 }, async () => {
  const { sessionId } = await initialize(worker.url, { concerns: { security: 'high' } });
  const email = await initialize(`${worker.url}/email`);
  const h = sessionHeaders(sessionId);
  const FAST = 'fast-session';
  const c = [];
  const add = (name, body, { path = '/mcp', headers = h, marker = FAST } = {}) => c.push([name, path, body, headers, marker]);
  add('tools/list', () => request('tools/list'));
  add('tools/list with a group filter', () => request('tools/list', { filter: { groups: ['email'] } }));
  add('tools/list with a tag expression', () => request('tools/list', { filter: { tags: { anyOf: ['read-only'] } } }));
  add('tools/list with a malformed filter', () => request('tools/list', { filter: { groups: 'math' } }));
  add('tools/list with concerns', () => request('tools/list', { _meta: { concerns: { security: 'low' } } }));
  add('tools/list through the session\'s view', () => request('tools/list'), { path: '/mcp/email', headers: sessionHeaders(email.sessionId) });
  add('tools/list through a URL query', () => request('tools/list'), { path: '/mcp?groups=email' });
  add('prompts/list', () => request('prompts/list'));
  add('resources/list', () => request('resources/list'));
  add('resources/templates/list', () => request('resources/templates/list'));
  add('ping', () => request('ping'));
  add('an unknown method', () => request('no/such'));
  add('a notification', () => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }));
  add('no protocol version', () => request('tools/list'), { headers: { 'Mcp-Session-Id': sessionId } });
  // Answered by the front on both paths (the object is not asked).
  add('a wrong protocol version', () => request('tools/list'), { headers: { ...h, 'MCP-Protocol-Version': '1999-01-01' } });
  add('a foreign Origin', () => request('tools/list'), { headers: { ...h, Origin: 'https://evil.example' }, marker: null });
  add('an unknown view', () => request('tools/list'), { path: '/mcp/no-such-view', marker: null });
  add('a forged session id', () => request('tools/list'), { headers: sessionHeaders(`${sessionId.slice(0, -1)}${sessionId.endsWith('0') ? '1' : '0'}`), marker: null });
  // Not taken by the fast path (the full path answers both).
  add('initialize inside a session', () => request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } }), { marker: null });
  add('tools/call', () => request('tools/call', { name: 'add', arguments: { a: 1, b: 2 } }), { marker: null });
  add('malformed JSON', () => '{"jsonrpc":"2.0","id":1,"method":', { marker: null });
  add('a header only the front may set', () => request('tools/list'), { headers: { ...h, 'X-MCP-Sieve-Run': 'run-1' }, marker: null });
  // Each send makes its body (a request id is used once in a session); the ids are not compared.
  for (const [name, path, body, headers, marker] of c) {
    const url = `${worker.url.replace(/\/mcp$/, '')}${path}`;
    const full = await postChunked(url, body(), headers);
    const quick = await postMarked(url, body, headers, Boolean(marker));
    assert.equal(full.headers['x-sieve-path'], undefined, `${name}: a chunked request takes the full path`);
    assert.equal(quick.headers.get('x-sieve-path'), marker, `${name}: the path taken`);
    const same = (o) => ({ ...o, messages: Array.isArray(o.messages) ? o.messages.map(({ id, ...m }) => m) : o.messages });
    assert.deepEqual(
      same(outcome(quick.status, quick.headers.get('content-type'), quick.body)),
      same(outcome(full.status, full.headers['content-type'], full.body)),
      name,
    );
  }
});

test('a paged list walked on the fast path and the full path in turn reads one session', { timeout: 30_000 }, async () => {
  const { sessionId } = await initialize(worker.url);
  const h = sessionHeaders(sessionId);
  const seen = [];
  let cursor;
  for (let page = 0; page < 20; page++) {
    const body = request('tools/list', cursor ? { cursor } : {});
    const a = page % 2 === 0 ? await post(worker.url, body, { headers: h }) : await postChunked(worker.url, body, h);
    const status = a.status;
    const type = typeof a.headers.get === 'function' ? a.headers.get('content-type') : a.headers['content-type'];
    assert.equal(status, 200, a.body);
    const [m] = parseMessages(a.body, type);
    seen.push(...m.result.tools.map((t) => t.name));
    cursor = m.result.nextCursor;
    if (!cursor) break;
  }
  const whole = await post(worker.url, request('tools/list'), { headers: h });
  assert.ok(seen.length > whole.response.result.tools.length, `more than one page (${seen.length} tools)`);
  assert.equal(new Set(seen).size, seen.length, 'no tool twice across the pages');
});

test('a session ended with DELETE is gone on the fast path too', { timeout: 30_000 }, async () => {
  const { sessionId } = await initialize(worker.url);
  const h = sessionHeaders(sessionId);
  const ok = await postMarked(worker.url, () => request('ping'), h);
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.headers.get('x-sieve-path'), 'fast-session');
  const ended = await post(worker.url, undefined, { method: 'DELETE', headers: h });
  assert.ok(ended.status < 300, `DELETE: ${ended.status} ${ended.body}`);
  const gone = await post(worker.url, request('ping'), { headers: h });
  assert.equal(gone.status, 404, gone.body);
});
