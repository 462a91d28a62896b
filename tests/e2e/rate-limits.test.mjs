// Rate limits (issue 42 item 5) against the Worker (default; its buckets in a Durable Object per
// limited key) or the native server (SIEVE_TARGET=native; buckets in the process): a limit of 3
// per 60 s on one tool for one principal refuses the 4th call with HTTP 429, Retry-After and a
// JSON-RPC error naming the limit and when to retry (the official SDK client surfaces it);
// another principal and another tool are not limited; a limit of 2 per 2 s lets calls pass again
// after the wait it names.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { startWith, sleep } from '../security/helpers.mjs';

const TOKENS = { alice: 'token-alice-0123456789', bob: 'token-bob-0123456789' };
const DOC = {
  tools: [
    { name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } },
    { name: 'gh_search', description: 'Search', inputSchema: { type: 'object' }, groups: ['github'] },
    { name: 'quick', description: 'Quick', inputSchema: { type: 'object' } },
    { name: 'once', description: 'Once a minute', inputSchema: { type: 'object' } },
  ],
  limits: {
    rates: [
      { id: 'paid-api', per: 'principal', match: { tools: ['gh_*'], principals: ['alice'] }, rate: 3, perSeconds: 60 },
      { id: 'short', per: 'principal', match: { tools: ['quick'] }, rate: 2, window: '2s' },
      { id: 'once', per: 'principal', match: { tools: ['once'] }, rate: 1, perSeconds: 60 },
    ],
  },
};

let server;
before(async () => {
  server = await startWith(DOC, { MCP_SIEVE_TOKENS: JSON.stringify(TOKENS) });
});
after(async () => { await server?.stop(); });

/** A raw stateless (2026-07-28) tools/call by `who`. */
async function rawCall(who, name, id = 1, escape = (json) => json) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKENS[who]}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
    },
    body: escape(JSON.stringify({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name, arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } },
    })),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

async function sdkClient(who) {
  const client = new Client({ name: 'limits-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { authorization: `Bearer ${TOKENS[who]}` } },
  }));
  return client;
}

test('the 4th call in 60 s is refused with 429, Retry-After and the limit named; others pass', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await rawCall('alice', 'gh_search', i);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.result, JSON.stringify(r.body));
  }
  const r = await rawCall('alice', 'gh_search', 9);
  assert.equal(r.status, 429);
  const secs = Number(r.retryAfter);
  assert.ok(secs >= 1 && secs <= 20, `Retry-After ${r.retryAfter}`);
  assert.equal(r.body.id, 9);
  assert.equal(r.body.error.code, -32602);
  assert.equal(r.body.error.data.limit, 'paid-api');
  assert.equal(r.body.error.data.reason, 'rate-limit:paid-api');
  assert.ok(r.body.error.data.retryAfterMs > 0 && r.body.error.data.retryAfterMs <= 20_000);
  assert.match(r.body.error.message, /rate limit "paid-api" reached: 3 uses per 1 min for alice; retry in \d+ s/);
  // Another principal, another tool: not limited.
  for (let i = 0; i < 4; i++) assert.equal((await rawCall('bob', 'gh_search', i)).status, 200);
  for (let i = 0; i < 4; i++) assert.equal((await rawCall('alice', 'echo', i)).status, 200);
});

test('a method or name written with JSON escapes counts against the limit like any other', async () => {
  // The server reads "tools\/call" as tools/call and "onc\u0065" as once: so must the limit.
  const escaped = (json) => json.replace('"tools/call"', '"tools\\/call"').replace('"name":"once"', '"name":"onc\\u0065"');
  assert.match(escaped(JSON.stringify({ method: 'tools/call', params: { name: 'once' } })), /tools\\\/call.*onc\\u0065/);
  const first = await rawCall('bob', 'once', 1, escaped);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.ok(first.body.result, JSON.stringify(first.body));
  const second = await rawCall('bob', 'once', 2, escaped);
  assert.equal(second.status, 429, JSON.stringify(second.body));
  assert.equal(second.body.error.data.limit, 'once');
});

test('the official SDK client (a 2025-11-25 session) surfaces the refusal message', async () => {
  const client = await sdkClient('alice');
  try {
    // alice's paid-api bucket is empty from the test before.
    await assert.rejects(client.callTool({ name: 'gh_search', arguments: {} }), (err) => {
      assert.equal(err.code, 429, String(err));
      assert.match(String(err.message), /rate limit \\?"paid-api\\?" reached/);
      return true;
    });
    // The session goes on: another tool still answers.
    const ok = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    assert.equal(ok.content[0].text, 'hi');
  } finally {
    await client.close();
  }
});

test('the SDK v2 client, pinned to 2026-07-28, surfaces it too', async () => {
  const client = new ClientV2({ name: 'limits-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new TransportV2(new URL(server.url), { requestInit: { headers: { authorization: `Bearer ${TOKENS.alice}` } } }));
  try {
    await assert.rejects(client.callTool({ name: 'gh_search', arguments: {} }), (err) => {
      assert.match(String(err.message), /rate limit \\?"paid-api\\?" reached/, String(err));
      return true;
    });
  } finally {
    await client.close();
  }
});

test('after the wait a limit of 2 per 2 s names, calls pass again', async () => {
  assert.equal((await rawCall('bob', 'quick', 1)).status, 200);
  assert.equal((await rawCall('bob', 'quick', 2)).status, 200);
  const refused = await rawCall('bob', 'quick', 3);
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.data.limit, 'short');
  const wait = refused.body.error.data.retryAfterMs;
  assert.ok(wait > 0 && wait <= 1000, `retryAfterMs ${wait}`);
  await sleep(wait + 150);
  assert.equal((await rawCall('bob', 'quick', 4)).status, 200);
});
