// Issue 13, item 8 (upstream answers in gateway mode): the gateway bounds what it waits for and
// what it reads from the upstream. The upstream here is a hostile MCP server on 127.0.0.1 written
// with node:http (it speaks the protocol correctly for initialize and tools/list): its tool
// `hang` never answers, and its tool `flood` answers 64 MB. Through the gateway each is a
// JSON-RPC -32603 error within the deadline, and the gateway keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { call, openSession } from '../common/mcp-raw.mjs';
import { startWith } from './helpers.mjs';

/** The longest the tests accept for the gateway's upstream deadline to fire, ms. */
const DEADLINE_MS = 40_000;
const FLOOD_BYTES = 64 << 20;

let upstream;
let gw;
const held = [];

function hostileUpstream() {
  const tools = [
    { name: 'hang', description: 'Never answers', inputSchema: { type: 'object' } },
    { name: 'flood', description: 'Answers 64 MB', inputSchema: { type: 'object' } },
    { name: 'ok', description: 'Answers', inputSchema: { type: 'object' } },
  ];
  return http.createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    const msg = raw ? JSON.parse(raw) : {};
    const reply = (result) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': 'hostile-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    };
    if (msg.id === undefined) { res.writeHead(202).end(); return; }
    if (msg.method === 'initialize') {
      reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } });
    } else if (msg.method === 'tools/list') {
      reply({ tools });
    } else if (msg.method === 'tools/call' && msg.params?.name === 'hang') {
      held.push(res); // never answered
    } else if (msg.method === 'tools/call' && msg.params?.name === 'flood') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const head = `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"content":[{"type":"text","text":"`;
      res.write(head);
      const chunk = 'x'.repeat(1 << 20);
      let sent = 0;
      const more = () => {
        while (sent < FLOOD_BYTES) {
          sent += chunk.length;
          if (!res.write(chunk)) { res.once('drain', more); return; }
        }
        res.end('"}]}}');
      };
      res.on('error', () => {});
      more();
    } else if (msg.method === 'tools/call') {
      reply({ content: [{ type: 'text', text: 'fine' }] });
    } else {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } }));
    }
  });
}

before(async () => {
  upstream = hostileUpstream();
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  gw = await startWith({ upstream: { url: `http://127.0.0.1:${upstream.address().port}/mcp`, refreshSeconds: 3600 } });
}, { timeout: 120_000 });

after(async () => {
  for (const r of held) r.destroy();
  await gw?.stop();
  upstream?.closeAllConnections?.();
  await new Promise((r) => upstream.close(r));
});

async function boundedError(sid, name) {
  const started = Date.now();
  const r = await Promise.race([
    call(gw.url, sid, 'tools/call', { name, arguments: {} }),
    new Promise((resolve) => setTimeout(() => resolve(null), DEADLINE_MS)),
  ]);
  const ms = Date.now() - started;
  assert.ok(r, `tools/call ${name}: no answer within ${DEADLINE_MS} ms: the gateway must give up on the upstream`);
  assert.equal(r.response?.error?.code, -32603, `tools/call ${name}: ${r.status} ${r.text.slice(0, 200)}`);
  return { r, ms };
}

test('8. an upstream that never answers is a -32603 error within the gateway deadline', { timeout: DEADLINE_MS + 20_000 }, async () => {
  const { sessionId } = await openSession(gw.url);
  await boundedError(sessionId, 'hang');
  const ok = await call(gw.url, sessionId, 'tools/call', { name: 'ok', arguments: {} });
  assert.equal(ok.response?.result?.content?.[0]?.text, 'fine', `the gateway still serves: ${ok.status} ${ok.text.slice(0, 300)}`);
});

test('8. an upstream answer over the byte cap is a -32603 error naming the cap', { timeout: DEADLINE_MS + 20_000 }, async () => {
  const { sessionId } = await openSession(gw.url);
  const { r } = await boundedError(sessionId, 'flood');
  assert.match(r.response.error.message, /\d/, 'the message names the byte cap');
  const ok = await call(gw.url, sessionId, 'tools/call', { name: 'ok', arguments: {} });
  assert.equal(ok.response?.result?.content?.[0]?.text, 'fine', `the gateway still serves: ${ok.status} ${ok.text.slice(0, 300)}`);
});
