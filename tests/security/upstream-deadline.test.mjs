// Issue 38, item 4, where the Worker runs the same budget as the native server: an upstream's
// `limits.callTimeoutSeconds` is one deadline for the whole forwarded call, and
// `limits.maxAnswerBytes` caps its answer; both name the limit. (The native drivers' trickling,
// SSE keep-alive, stdio and cancel cases are in upstream-untrusted.test.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { call, openSession } from '../common/mcp-raw.mjs';
import { startWith } from './helpers.mjs';

const held = [];
let server;
let gw;

before(async () => {
  server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    const msg = raw ? JSON.parse(raw) : {};
    if (msg.id === undefined) { res.writeHead(202).end(); return; }
    const ok = (result) => { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })); };
    if (msg.method === 'initialize') return ok({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'slow', version: '1' } });
    if (msg.method === 'tools/list') return ok({ tools: ['hang', 'big'].map((name) => ({ name, inputSchema: { type: 'object' } })) });
    if (msg.method === 'tools/call' && msg.params.name === 'hang') { held.push(res); return; }
    if (msg.method === 'tools/call') return ok({ content: [{ type: 'text', text: 'x'.repeat(200_000) }] });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } }));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/mcp`;
  gw = await startWith({ upstreams: { slow: { url, limits: { callTimeoutSeconds: 2, maxAnswerBytes: 100000 } } } });
}, { timeout: 180_000 });

after(async () => {
  for (const r of held) r.destroy();
  await gw?.stop();
  server?.closeAllConnections?.();
  await new Promise((r) => server.close(r));
});

test('a call past the upstream\'s limits.callTimeoutSeconds fails at that deadline, naming it', { timeout: 30_000 }, async () => {
  const url = `${gw.base}/mcp`;
  const { sessionId } = await openSession(url);
  const t0 = Date.now();
  const r = await call(url, sessionId, 'tools/call', { name: 'slow_hang', arguments: {} });
  const ms = Date.now() - t0;
  assert.match(JSON.stringify(r.response.error ?? r.response.result), /within 2 s \(limits\.callTimeoutSeconds\)/);
  assert.ok(ms >= 1_800 && ms < 6_000, `${ms} ms`);
});

test('an answer over the upstream\'s limits.maxAnswerBytes is refused, naming it', { timeout: 30_000 }, async () => {
  const url = `${gw.base}/mcp`;
  const { sessionId } = await openSession(url);
  const r = await call(url, sessionId, 'tools/call', { name: 'slow_big', arguments: {} });
  assert.match(JSON.stringify(r.response.error ?? r.response.result), /100000 bytes/);
});
