// E2E: both protocol eras upstream at once. The gateway under test (the Worker, or the native
// server with SIEVE_TARGET=native) fronts a chained native mcp-sieve (`target/debug/mcp-sieve
// serve`, which offers 2026-07-28) and @modelcontextprotocol/server-everything (official SDK v1:
// 2025-11-25 sessions only), each behind a recording proxy, so the test sees what reaches each
// upstream: the chained one gets stateless 2026-07-28 requests (server/discover, then lists and
// calls with the `_meta` envelope and mirrored headers; no initialize, no session), the other a
// session opened with initialize after its refusal of server/discover. The official SDK v2
// client lists and calls through both; the operator's status names each upstream's version.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startNative, toolNames } from './harness.mjs';
import { startEverything, startWith, recordingProxy } from '../security/helpers.mjs';

const TOKEN = 'eras-downstream-token';

let everything, chained, modernProxy, legacyProxy, gateway;

before(async () => {
  [everything, chained] = await Promise.all([startEverything(), startNative()]);
  [modernProxy, legacyProxy] = await Promise.all([recordingProxy(chained.url), recordingProxy(everything.url)]);
  gateway = await startWith(
    { upstreams: { chain: { url: modernProxy.url, title: 'Chained mcp-sieve' }, everything: { url: legacyProxy.url } } },
    { MCP_SIEVE_TOKEN: TOKEN },
  );
}, { timeout: 120_000 });

after(async () => {
  await gateway?.stop();
  await Promise.all([modernProxy?.stop(), legacyProxy?.stop()]);
  await Promise.all([chained?.stop(), everything?.stop()]);
});

async function connect(mode) {
  const client = new Client({ name: 'sieve-eras-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  }));
  return client;
}

const text = (r) => r.content.map((c) => c.text ?? '').join('\n');

for (const mode of ['legacy', 'auto']) {
  test(`SDK v2 client (${mode}) lists and calls through a modern and a legacy upstream`, { timeout: 60_000 }, async () => {
    const client = await connect(mode);
    try {
      const names = await toolNames(client);
      for (const n of ['chain_echo', 'chain_add', 'everything_echo']) assert.ok(names.includes(n), `${n}: ${names.join(', ')}`);
      const a = await client.callTool({ name: 'chain_echo', arguments: { message: `modern ${mode}` } });
      assert.match(text(a), new RegExp(`modern ${mode}`));
      const b = await client.callTool({ name: 'everything_echo', arguments: { message: `legacy ${mode}` } });
      assert.match(text(b), new RegExp(`legacy ${mode}`));
      const prompts = await client.listPrompts();
      assert.ok(prompts.prompts.some((p) => p.name === 'chain_plan_week'), prompts.prompts.map((p) => p.name).join(', '));
    } finally {
      await client.close();
    }
  });
}

test('the chained mcp-sieve received only stateless 2026-07-28 requests', () => {
  const { bodies, seen, statuses } = modernProxy;
  assert.ok(bodies.length >= 3, `requests reached it: ${bodies.length}`);
  const methods = bodies.map((b) => b.method);
  assert.equal(methods[0], 'server/discover');
  assert.ok(!methods.includes('initialize') && !methods.includes('notifications/initialized'), methods.join(', '));
  assert.ok(methods.includes('tools/list') && methods.includes('tools/call'), methods.join(', '));
  bodies.forEach((b, i) => {
    const h = seen[i];
    assert.equal(h['mcp-session-id'], undefined, `${b.method}: no session`);
    assert.equal(h['mcp-protocol-version'], '2026-07-28', b.method);
    assert.equal(h['mcp-method'], b.method);
    const meta = b.params?._meta ?? {};
    assert.equal(meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28', b.method);
    assert.equal(meta['io.modelcontextprotocol/clientInfo']?.name, 'mcp-sieve-gateway', b.method);
    assert.equal(typeof meta['io.modelcontextprotocol/clientCapabilities'], 'object', b.method);
    if (b.method === 'tools/call') assert.equal(h['mcp-name'], b.params.name, 'Mcp-Name mirrors the name the upstream knows');
  });
  assert.ok(statuses.every((s) => s === 200), `every answer is 200: ${statuses.join(', ')}`);
  // Its own output shows no session opened (it logs refusals and failures, none here).
  assert.doesNotMatch(chained.output(), /refused|failed/i, chained.output());
});

test('server-everything got a 2025-11-25 session after refusing server/discover', () => {
  const { bodies, seen } = legacyProxy;
  const methods = bodies.map((b) => b.method);
  assert.equal(methods[0], 'server/discover');
  const init = bodies.find((b) => b.method === 'initialize');
  assert.equal(init?.params.protocolVersion, '2025-11-25');
  assert.ok(everything.sessions().length >= 1, 'it opened sessions');
  bodies.forEach((b, i) => {
    if (['tools/list', 'tools/call'].includes(b.method)) {
      assert.ok(seen[i]['mcp-session-id'], `${b.method} in a session`);
      assert.equal(seen[i]['mcp-protocol-version'], '2025-11-25');
      assert.equal(b.params?._meta?.['io.modelcontextprotocol/protocolVersion'], undefined, 'no 2026 envelope reaches it');
    }
  });
});

test('the status names each upstream\'s protocol version', async () => {
  const r = await fetch(`${gateway.base}/mcp-sieve/upstreams`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(r.status, 200);
  const { upstreams } = await r.json();
  const by = Object.fromEntries(upstreams.map((u) => [u.name, u]));
  assert.equal(by.chain.state, 'up');
  assert.equal(by.chain.protocolVersion, '2026-07-28');
  assert.equal(by.chain.stateless, true);
  assert.equal(by.everything.protocolVersion, '2025-11-25');
  assert.equal(by.everything.stateless, false);
  const refused = await fetch(`${gateway.base}/mcp-sieve/upstreams`);
  assert.equal(refused.status, 401, 'behind the same gate as /mcp');
});
