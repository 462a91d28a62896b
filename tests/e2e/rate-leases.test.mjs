// Rate limits on the Worker's fast path (issue 42 items 5 and 6): without authentication a
// stateless tools/call is answered synchronously while the isolate holds tokens leased from the
// limit's Durable Object (worker/src/operate/limiter.rs, src/operate/lease.rs), and asks the object only
// when its lease is spent. The limit is never exceeded: of 30 calls in a row, and of 40 at once,
// at most 20 pass (a limit of 20 per 60 s, leases of 5) and the rest get 429 naming the limit; in
// a row at most one lease (5 tokens) may expire unspent on a slow machine, so at least 15 pass.
// Runs natively too (SIEVE_TARGET=native: buckets in the process, no leases).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWith } from '../security/helpers.mjs';

const DOC = {
  tools: [
    { name: 'one', description: 'One', inputSchema: { type: 'object' } },
    { name: 'two', description: 'Two', inputSchema: { type: 'object' } },
  ],
  limits: {
    rates: [
      { id: 'in-a-row', per: 'tool', match: { tools: ['one'] }, rate: 20, perSeconds: 60 },
      { id: 'at-once', per: 'tool', match: { tools: ['two'] }, rate: 20, perSeconds: 60 },
    ],
  },
};

let server;
before(async () => { server = await startWith(DOC); });
after(async () => { await server?.stop(); });

async function call(name, id) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name, arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } },
    }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

function checkRefusal(r, limit) {
  assert.equal(r.status, 429);
  assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
  assert.equal(r.body.error.data.limit, limit);
  assert.equal(r.body.error.data.reason, `rate-limit:${limit}`);
  assert.ok(r.body.error.data.retryAfterMs > 0 && r.body.error.data.retryAfterMs <= 3000);
}

test('of 30 calls in a row under a limit of 20 per 60 s, 15 to 20 pass, then all are refused', async () => {
  const got = [];
  for (let i = 0; i < 30; i++) got.push(await call('one', i + 1));
  const passed = got.findIndex((r) => r.status !== 200);
  assert.ok(passed >= 15 && passed <= 20, JSON.stringify(got.map((r) => r.status)));
  for (const r of got.slice(0, passed)) assert.ok(!r.body.error, JSON.stringify(r.body));
  for (const r of got.slice(passed)) checkRefusal(r, 'in-a-row');
});

test('of 40 calls at once under a limit of 20 per 60 s, at most 20 pass', async () => {
  const got = await Promise.all(Array.from({ length: 40 }, (_, i) => call('two', i + 1)));
  const passed = got.filter((r) => r.status === 200).length;
  assert.ok(passed >= 1 && passed <= 20, JSON.stringify(got.map((r) => r.status)));
  for (const r of got.filter((x) => x.status !== 200)) checkRefusal(r, 'at-once');
});
