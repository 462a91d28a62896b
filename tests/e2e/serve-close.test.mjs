// E2E: `mcp-sieve serve` terminated (SIGTERM, as a service manager or a container runtime stops
// it) stops accepting, closes every upstream session it holds at an HTTP upstream with a
// `DELETE` naming it and exits 0: a 2025-11-25 client session's own (opened by the official SDK
// v1 client, still open), the one 2026-07-28 stateless calls share (the SDK v2 client's) and the
// one the lists are fetched over. The upstream is @modelcontextprotocol/server-everything over
// Streamable HTTP behind a recording proxy that sees each request's method and `Mcp-Session-Id`.
// Only native processes: needs target/debug/mcp-sieve (scripts/build.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { post, sessionHeaders } from '../common/mcp-raw.mjs';
import { recordedEverything, ROOT } from '../security/helpers.mjs';
import { freePort, sdkStateless } from './harness.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');

let everything, proxy, catalog, recorded;

before(async () => {
  recorded = await recordedEverything('serve-close');
  ({ everything, proxy, catalog } = recorded);
}, { timeout: 120_000 });

after(async () => {
  await recorded?.stop();
});

/** Starts `mcp-sieve serve` over the catalog; resolves once it answers, with its exit to come. */
async function serve() {
  const port = await freePort();
  const child = spawn(BIN, ['serve', '--catalog', catalog, '--host', '127.0.0.1', '--port', String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (c) => { log = (log + c).slice(-8000); });
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const url = `http://127.0.0.1:${port}/mcp`;
  for (const deadline = Date.now() + 30_000; ;) {
    if (child.exitCode != null) throw new Error(`mcp-sieve serve exited early: ${log}`);
    try {
      await post(url, { jsonrpc: '2.0', id: 0, method: 'ping' }, { timeoutMs: 2000 });
      return { child, url, exit, log: () => log };
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`mcp-sieve serve not ready: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The upstream session the last request matching `which` (its body) was sent in. */
const sentIn = (requests, which) => requests.findLast((r) => r.method === 'POST' && which(r.body ?? {}))?.session;

test('mcp-sieve serve: SIGTERM closes every upstream session it holds (a client session\'s, the shared stateless one, the lists\') and exits 0', { timeout: 60_000 }, async () => {
  const from = proxy.requests.length;
  const server = await serve();
  let client;
  try {
    // A 2025-11-25 session (SDK v1), left open.
    client = new Client({ name: 'serve-close', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'own' } });
    assert.match(r.content[0].text, /own/);
    // A 2026-07-28 stateless call (SDK v2).
    const s = await sdkStateless(server.url, 'tools/call', { name: 'everything_echo', arguments: { message: 'shared' } });
    assert.match(JSON.stringify(s.result), /shared/, JSON.stringify(s));
  } catch (e) {
    server.child.kill('SIGKILL');
    throw e;
  }
  const started = Date.now();
  process.kill(server.child.pid, 'SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  const exited = await server.exit;
  clearTimeout(timer);
  const took = Date.now() - started;
  assert.deepEqual(exited, { code: 0, signal: null }, `exit 0 on SIGTERM; output:\n${server.log()}`);
  assert.ok(took < 6_000, `it exited promptly (${took} ms)`);
  const requests = proxy.requests.slice(from);
  const own = sentIn(requests, (b) => b.method === 'tools/call' && b.params?.arguments?.message === 'own');
  const shared = sentIn(requests, (b) => b.method === 'tools/call' && b.params?.arguments?.message === 'shared');
  const lists = sentIn(requests, (b) => b.method === 'tools/list');
  assert.ok(own && shared && lists && own !== shared, `the calls reached the upstream in sessions: ${own}, ${shared}, lists ${lists}`);
  const named = new Set(requests.filter((q) => q.session).map((q) => q.session));
  const deleted = new Set(requests.filter((q) => q.method === 'DELETE').map((q) => q.session));
  assert.deepEqual([...named].filter((x) => !deleted.has(x)), [], `every upstream session opened got its DELETE: ${[...named]}; deleted: ${[...deleted]}`);
  for (const x of named) {
    const a = await post(everything.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { headers: sessionHeaders(x) });
    assert.ok([400, 404].includes(a.status), `the upstream no longer knows ${x}: ${a.status}`);
  }
  await client.close().catch(() => {});
});
