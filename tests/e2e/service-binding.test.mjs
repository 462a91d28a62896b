// E2E (Worker): mcp-sieve's Worker fronting a second local Worker through a Cloudflare service
// binding — the way an edge MCP server's author puts mcp-sieve in front of their own Worker. One
// `wrangler dev -c <mcp-sieve's wrangler.toml plus [[services]] EDGE> -c
// tests/fixtures/edge-worker/wrangler.toml` runs both (the second: an MCP server written with the
// official TypeScript SDK); the document says {"upstreams": {"edge": {"service": "EDGE"}}}. The
// official SDK v2 client lists, filters (annotations as tags, a view), searches and calls through
// it in both eras; the binding's configured header (a secret) reaches the second Worker, the
// client's Authorization never does; each downstream session has its own upstream session over
// the binding; what the second Worker sends on an upstream session's own stream (its GET: a log
// message its `announce` tool sends outside the call) reaches that session's client on its GET
// stream, read over the binding by the session's Durable Object; a binding the Worker does not
// have is a configuration error naming it. The native server has no service bindings: skipped there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startWorker, toolNames } from './harness.mjs';
import { native, startWith, sleep, ROOT } from '../security/helpers.mjs';

const skip = native() && 'service bindings are the Worker’s';
const SECRET = `edge-key-${process.pid}-${Date.now()}`;
const TOKEN = 'downstream-token-for-edge';
const EDGE_CONFIG = path.join(ROOT, 'tests', 'fixtures', 'edge-worker', 'wrangler.toml');

const doc = {
  upstreams: { edge: { service: 'EDGE', title: 'Edge Worker', headers: { 'X-Edge-Key': '${EDGE_KEY}' }, tagsFromAnnotations: true } },
  views: { readonly: { filter: { tags: ['read-only'] } }, find: { mode: 'search' } },
};

let server, tmp;

/**
 * mcp-sieve's own wrangler.toml with a service binding added, written beside nothing: its relative
 * paths (the entry module, the static assets) made absolute, so it works from a temporary folder
 * and worker/ stays as deployed.
 */
function configWithBinding(dir) {
  const worker = path.join(ROOT, 'worker');
  let toml = readFileSync(path.join(worker, 'wrangler.toml'), 'utf8');
  const absolute = (key) => {
    const re = new RegExp(`^(${key}\\s*=\\s*)"([^"]+)"`, 'm');
    assert.match(toml, re, `worker/wrangler.toml has ${key}`);
    toml = toml.replace(re, (_, k, v) => `${k}${JSON.stringify(path.resolve(worker, v))}`);
  };
  absolute('main');
  absolute('directory');
  toml += '\n[[services]]\nbinding = "EDGE"\nservice = "sieve-edge-fixture"\n';
  const file = path.join(dir, 'wrangler.toml');
  writeFileSync(file, toml);
  return file;
}

before(async () => {
  if (skip) return;
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-edge-'));
  server = await startWorker({
    extraArgs: ['-c', configWithBinding(tmp), '-c', EDGE_CONFIG,
      '--var', `MCP_SIEVE_CONFIG:${JSON.stringify(doc)}`, '--var', `EDGE_KEY:${SECRET}`, '--var', `MCP_SIEVE_TOKEN:${TOKEN}`],
  });
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function connect(url, mode) {
  const client = new Client({ name: 'sieve-edge-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
  client.heard = [];
  client.setNotificationHandler('notifications/message', (n) => { client.heard.push(n.params.data); });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
  return client;
}

const text = (r) => r.content.map((c) => c.text ?? '').join('\n');

for (const mode of ['legacy', 'auto']) {
  test(`SDK v2 client (${mode}): the second Worker's tools through the service binding, namespaced, filtered, called`, { timeout: 90_000, skip }, async () => {
    const client = await connect(server.url, mode);
    try {
      assert.deepEqual((await toolNames(client)).sort(), ['edge_add', 'edge_announce', 'edge_echo', 'edge_purge_cache', 'edge_request_headers']);
      assert.match(text(await client.callTool({ name: 'edge_echo', arguments: { message: `over the binding (${mode})` } })), new RegExp(`edge echo: over the binding \\(${mode}\\)`));
      assert.equal(text(await client.callTool({ name: 'edge_add', arguments: { a: 2, b: 40 } })), '42');
      const headers = JSON.parse(text(await client.callTool({ name: 'edge_request_headers', arguments: {} })));
      // The upstream received the secret's value (the gateway redacts exactly that value from
      // what it relays back: security IV), and the client never sees it.
      assert.equal(headers['x-edge-key'], '[redacted:EDGE_KEY]', 'the configured header, its secret resolved, crosses the binding; its echo is redacted');
      assert.equal(headers.authorization, undefined, "the client's Authorization is never forwarded");
    } finally {
      await client.close();
    }
  });
}

test('each downstream session has its own session in the second Worker, kept across its calls', { timeout: 90_000, skip }, async () => {
  const a = await connect(server.url, 'legacy');
  const b = await connect(server.url, 'legacy');
  const upstreamSession = async (c) => JSON.parse(text(await c.callTool({ name: 'edge_request_headers', arguments: {} })))['mcp-session-id'];
  try {
    const [a1, a2, b1] = [await upstreamSession(a), await upstreamSession(a), await upstreamSession(b)];
    assert.ok(a1 && b1, `the upstream's session id crosses the binding: ${a1}, ${b1}`);
    assert.equal(a1, a2, "one downstream session keeps its upstream session");
    assert.notEqual(a1, b1, 'two downstream sessions never share one upstream session');
  } finally {
    await a.close();
    await b.close();
  }
});

test("what the second Worker sends on an upstream session's GET stream reaches that session's client, over the binding", { timeout: 90_000, skip }, async () => {
  const [a, b] = [await connect(server.url, 'legacy'), await connect(server.url, 'legacy')];
  try {
    await a.setLoggingLevel('info');
    await b.setLoggingLevel('debug');
    // Each session's upstream session is opened (and its GET stream with it) by its first call.
    assert.match(text(await a.callTool({ name: 'edge_echo', arguments: { message: 'a' } })), /edge echo: a/);
    assert.match(text(await b.callTool({ name: 'edge_echo', arguments: { message: 'b' } })), /edge echo: b/);
    // The client's own GET stream opens beside its first requests (the SDK opens it): asked
    // again until heard, in case the first went out before the client listened.
    const deadline = Date.now() + 20_000;
    for (let n = 1; !a.heard.some((d) => String(d).startsWith('edge announces: ')); n++) {
      assert.ok(Date.now() < deadline, `no log message from the second Worker's GET stream reached the client: ${JSON.stringify(a.heard)}`);
      assert.equal(text(await a.callTool({ name: 'edge_announce', arguments: { message: `round ${n}` } })), 'announced');
      for (let t = 0; t < 40 && a.heard.length === 0; t++) await sleep(50);
    }
    assert.match(String(a.heard[0]), /^edge announces: round \d+$/);
    await sleep(300);
    assert.deepEqual(b.heard, [], "nothing of the other session's");
  } finally {
    await a.close();
    await b.close();
  }
});

test('a view (annotations as tags) and search mode over the service binding', { timeout: 90_000, skip }, async () => {
  const ro = await connect(`${server.url}/readonly`, 'legacy');
  try {
    assert.deepEqual((await toolNames(ro)).sort(), ['edge_add', 'edge_announce', 'edge_echo', 'edge_request_headers']);
    await assert.rejects(ro.callTool({ name: 'edge_purge_cache', arguments: {} }), /Unknown tool/);
  } finally {
    await ro.close();
  }
  const find = await connect(`${server.url}/find`, 'auto');
  try {
    assert.deepEqual((await toolNames(find)).sort(), ['call_tool', 'describe_tools', 'find_tools']);
    const found = await find.callTool({ name: 'find_tools', arguments: { query: 'add two numbers' } });
    assert.equal(found.structuredContent.tools[0].name, 'edge_add', text(found));
    assert.equal(text(await find.callTool({ name: 'call_tool', arguments: { name: 'edge_add', arguments: { a: 1, b: 1 } } })), '2');
  } finally {
    await find.close();
  }
});

test('a service binding the Worker does not have is a configuration error naming it', { timeout: 90_000, skip }, async () => {
  const missing = await startWith({ upstreams: { edge: { service: 'NOPE' } } });
  try {
    const r = await fetch(missing.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.match(await r.text(), /upstreams\.edge\.service: this Worker has no service binding \\"NOPE\\"/);
  } finally {
    await missing.stop();
  }
});
