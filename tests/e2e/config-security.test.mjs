// Configuration and transport security of the real Worker under `wrangler dev`: an invalid
// catalog document is a clear -32603 on every request, a document of any size arrives through
// KV as scripts/run.sh --config stores it, Origin allow-list, bearer token, CORS preflight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWorker } from './harness.mjs';
import { call, initialize, post, stateless } from '../common/mcp-raw.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } },
};

/** Stores `doc` in local KV state the way scripts/run.sh --config does; returns the state dir. */
function putConfig(dir, doc) {
  const json = path.join(dir, 'catalog.json');
  writeFileSync(json, typeof doc === 'string' ? doc : JSON.stringify(doc, null, 2));
  const state = path.join(dir, 'state');
  execFileSync(path.join(ROOT, 'scripts', 'put-config.sh'), [json, state]);
  return state;
}

test('an invalid catalog document is a clear error naming every bad field, on every request', async () => {
  const doc = JSON.stringify({ tools: [{ name: 'ok', inputSchema: { type: 'object' } }, { name: 5 }], views: { v: { mode: 'grid' } } });
  const worker = await startWorker({ extraArgs: ['--var', `MCP_SIEVE_CONFIG:${doc}`] });
  try {
    for (const body of [INIT, { jsonrpc: '2.0', id: 2, method: 'tools/list' }]) {
      const r = await post(worker.url, body);
      assert.equal(r.status, 500, r.body);
      assert.equal(r.response.error.code, -32603);
      assert.match(r.response.error.message, /MCP_SIEVE_CONFIG: 2 errors: .*tools\[1\]\.name.*; .*views\.v\.mode/, r.body);
    }
    const discover = await stateless(worker.url, 'server/discover');
    assert.equal(discover.status, 500, 'never a half-working server');
  } finally {
    await worker.stop();
  }
});

test('a document in KV that is not JSON is a clear error too', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-sieve-cfg-'));
  const worker = await startWorker({ persistTo: putConfig(dir, '{"tools": [') });
  try {
    const r = await post(worker.url, INIT);
    assert.equal(r.status, 500, r.body);
    assert.equal(r.response.error.code, -32603);
    assert.match(r.response.error.message, /MCP_SIEVE_KV key "config": .*not valid JSON/, r.body);
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a large catalog document (over the 128 KB command-line limit) is served exactly, through KV as run.sh --config does', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-sieve-cfg-'));
  const tricky = "costs $5 (or ${HOME}), it's \"quoted\", a back\\slash, # not a comment,\nand a `tick`";
  const tools = Array.from({ length: 3000 }, (_, i) => ({
    name: `tool_${i}`, description: `Synthetic tool number ${i} for the size test.`,
    inputSchema: { type: 'object' }, groups: [i % 2 ? 'odd' : 'even'],
  }));
  tools.push({ name: 'tricky', description: tricky, inputSchema: { type: 'object' }, groups: ['odd'] });
  const doc = { groups: [{ name: 'odd' }, { name: 'even' }], tools };
  const state = putConfig(dir, doc);
  assert.ok(readFileSync(path.join(dir, 'catalog.json')).length > 131_072, 'larger than a command-line argument may be');
  const worker = await startWorker({ persistTo: state });
  try {
    const r = await stateless(worker.url, 'tools/list', { filter: { namePatterns: ['tricky'] } });
    assert.equal(r.status, 200, r.body.slice(0, 500));
    assert.deepEqual(r.response.result.tools.map((t) => [t.name, t.description]), [['tricky', tricky]]);
    const groups = await stateless(worker.url, 'groups/list');
    assert.deepEqual(groups.response.result.groups.map((g) => g.name).sort(), ['even', 'odd']);
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Origin allow-list: a foreign Origin is 403, loopback passes', async () => {
  const worker = await startWorker();
  try {
    const bad = await post(worker.url, INIT, { headers: { Origin: 'https://evil.example' } });
    assert.equal(bad.status, 403, bad.body);
    assert.match(bad.response.error.message, /evil\.example/);
    assert.equal(bad.headers.get('access-control-allow-origin'), null);
    const local = await post(worker.url, INIT, { headers: { Origin: `http://127.0.0.1:${new URL(worker.url).port}` } });
    assert.equal(local.status, 200, local.body);
  } finally {
    await worker.stop();
  }
});

test('bearer token from a secret, allowed browser origin with CORS', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-sieve-cfg-'));
  const token = 'e2e-secret-token-7f3a';
  // .dev.vars-style file: wrangler treats these as secrets (not printed).
  const env = path.join(dir, 'secrets.env');
  writeFileSync(env, `MCP_SIEVE_TOKEN=${token}\nMCP_SIEVE_ALLOWED_ORIGINS=https://host.example\n`);
  const worker = await startWorker({ extraArgs: ['--env-file', env], logLevel: 'log' });
  const auth = { Authorization: `Bearer ${token}` };
  try {
    for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: `Basic ${token}` }]) {
      const r = await post(worker.url, INIT, { headers });
      assert.equal(r.status, 401, `${JSON.stringify(headers)}: ${r.body}`);
      assert.match(r.headers.get('www-authenticate'), /^Bearer/);
    }
    const { sessionId } = await initialize(worker.url, { headers: auth });
    const listed = await call(worker.url, sessionId, 'tools/list', {}, { headers: auth });
    assert.equal(listed.status, 200);
    const noAuth = await call(worker.url, sessionId, 'tools/list');
    assert.equal(noAuth.status, 401, 'every request needs the token, not only initialize');

    // CORS preflight from the allowed browser host, then the real request.
    const pre = await fetch(worker.url, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://host.example', 'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type, authorization, mcp-session-id',
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), 'https://host.example');
    assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
    assert.match(pre.headers.get('access-control-allow-headers'), /Authorization/i);
    assert.match(pre.headers.get('access-control-allow-headers'), /Mcp-Session-Id/i);
    const cors = await post(worker.url, INIT, { headers: { ...auth, Origin: 'https://host.example' } });
    assert.equal(cors.status, 200);
    assert.equal(cors.headers.get('access-control-allow-origin'), 'https://host.example');
    assert.match(cors.headers.get('access-control-expose-headers'), /Mcp-Session-Id/);
    const other = await post(worker.url, INIT, { headers: { ...auth, Origin: 'https://other.example' } });
    assert.equal(other.status, 403);

    // The official SDK client with the token.
    const client = new Client({ name: 'e2e-auth', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(worker.url), { requestInit: { headers: auth } }));
    const { tools } = await client.listTools();
    assert.ok(tools.length > 0);
    await client.close();
    assert.ok(!worker.output().includes(token), 'the token never appears in the logs');
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a body over the configured limit is 413 before it is read', async () => {
  const worker = await startWorker({ extraArgs: ['--var', 'MCP_SIEVE_MAX_BODY:2048'] });
  try {
    const big = { ...INIT, params: { ...INIT.params, pad: 'x'.repeat(4096) } };
    const r = await post(worker.url, big);
    assert.equal(r.status, 413, r.body);
    assert.equal((await post(worker.url, INIT)).status, 200);
  } finally {
    await worker.stop();
  }
});
