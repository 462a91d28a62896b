// Issue 23, item 4: a cancelled refresh does not freeze the gateway. In gateway mode one request
// at a time refreshes the upstream's lists (the others are served the cached ones). When the
// client of that request goes away while the upstream is slow to answer, the refresh must not
// stay "in flight" forever: the next request refreshes. The upstream here is an MCP server on
// 127.0.0.1 written with node:http, whose tool list the test changes, and whose next
// `tools/list` it can make take 2 s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { call, openSession, sessionHeaders } from '../common/mcp-raw.mjs';
import { native, sleep, startWith } from './helpers.mjs';

/** How long the upstream's slow `tools/list` takes, ms. */
const SLOW_MS = 2000;
/** When the impatient client leaves, ms after its request. */
const LEAVE_MS = 100;
/**
 * How long after the client left a request must see the new list. The native server drops a
 * request whose client left (hyper), so the next request refreshes at once (seen ~115 ms after
 * the client left): well before the abandoned refresh's slow answer. Under `wrangler dev` the
 * request goes on after its client left, so its refresh ends when the upstream answers (seen
 * ~1.9 s after, with no second refresh). In production a Worker request is cancelled when its
 * client leaves, without its future being dropped: there the refresh's 30 s deadline
 * (`upstream::REFRESH_DEADLINE_MS`) frees the single flight; this test cannot show that locally.
 */
const WINDOW_MS = native() ? SLOW_MS - 500 : SLOW_MS + 3000;

const upstreamState = { tools: ['a'], slowNext: false, slowSeen: 0, lists: 0 };
let upstream;
let gw;

function changingUpstream() {
  return http.createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    const msg = raw ? JSON.parse(raw) : {};
    res.on('error', () => {});
    const reply = (result) => {
      if (res.destroyed) return;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': 'changing-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    };
    if (msg.id === undefined) { res.writeHead(202).end(); return; }
    if (msg.method === 'initialize') {
      reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'changing', version: '1' } });
    } else if (msg.method === 'tools/list') {
      upstreamState.lists += 1;
      const tools = upstreamState.tools.map((name) => ({ name, description: `Tool ${name}`, inputSchema: { type: 'object' } }));
      if (upstreamState.slowNext) {
        upstreamState.slowNext = false;
        upstreamState.slowSeen += 1;
        setTimeout(() => reply({ tools }), SLOW_MS);
      } else {
        reply({ tools });
      }
    } else {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `no ${msg.method}` } }));
    }
  });
}

before(async () => {
  upstream = changingUpstream();
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  gw = await startWith({ upstream: { url: `http://127.0.0.1:${upstream.address().port}/mcp`, refreshSeconds: 1 } });
}, { timeout: 120_000 });

after(async () => {
  await gw?.stop();
  upstream?.closeAllConnections?.();
  await new Promise((r) => upstream.close(r));
});

/** Sends `method` in session `sid` and disconnects after `ms` without reading an answer. */
function leaveAfter(url, sid, method, ms) {
  return new Promise((resolve) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 900, method, params: {} });
    const req = http.request(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'Content-Length': Buffer.byteLength(body), ...sessionHeaders(sid) },
    }, (res) => { res.resume(); res.on('end', () => resolve('answered')); });
    req.on('error', () => resolve('left'));
    req.setTimeout(ms, () => { req.destroy(); resolve('left'); });
    req.end(body);
  });
}

const names = (r) => (r.response?.result?.tools ?? []).map((t) => t.name).sort();

test('23.4 after a client leaves the request that refreshes the upstream lists, the next request refreshes', { timeout: 60_000 }, async () => {
  const { sessionId } = await openSession(gw.url);
  assert.deepEqual(names(await call(gw.url, sessionId, 'tools/list', {})), ['a']);
  // The upstream's list changes; its next tools/list answers after SLOW_MS.
  upstreamState.tools = ['a', 'b'];
  upstreamState.slowNext = true;
  await sleep(1100); // the cached lists are due for a refresh (refreshSeconds: 1)
  const outcome = await leaveAfter(gw.url, sessionId, 'tools/list', LEAVE_MS);
  assert.equal(outcome, 'left', 'the client left before an answer: the refresh was still waiting for the upstream');
  assert.equal(upstreamState.slowSeen, 1, 'the request the client left began a refresh');
  const left = Date.now();
  // The upstream answers at once now: the next request refreshes and sees its new list.
  let seen = [];
  while (Date.now() - left < WINDOW_MS) {
    await sleep(100);
    seen = names(await call(gw.url, sessionId, 'tools/list', {}));
    if (seen.includes('b')) break;
  }
  assert.deepEqual(seen, ['a', 'b'],
    `within ${WINDOW_MS} ms after the client left, a request refreshed the lists (upstream tools/list calls: ${upstreamState.lists})`);
});

test('23.4 the gateway keeps refreshing afterwards', { timeout: 30_000 }, async () => {
  const { sessionId } = await openSession(gw.url);
  upstreamState.tools = ['a', 'b', 'c'];
  await sleep(1100);
  let seen = [];
  const started = Date.now();
  while (Date.now() - started < 5000 && !seen.includes('c')) {
    seen = names(await call(gw.url, sessionId, 'tools/list', {}));
    if (!seen.includes('c')) await sleep(200);
  }
  assert.deepEqual(seen, ['a', 'b', 'c']);
});
