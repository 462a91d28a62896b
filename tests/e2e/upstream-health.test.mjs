// E2E (native server): an upstream's health as clients see it, with a tiny Streamable HTTP
// upstream run as a child process (tests/fixtures/tiny-upstream.mjs) and the official SDK client.
// A dead HTTP upstream that nobody calls is noticed by the gateway's periodic check (a `ping`
// after 15 s of silence): a listening client gets notifications/tools/list_changed and its tools
// leave tools/list within the bound, and a call of one of them names the upstream and why instead
// of "Unknown tool". `serve` and `stdio` start with every upstream down (initialize answers, the
// lists are empty) and fill in with list_changed when the upstream comes up. An upstream's HTTP
// 401 on a call is an error naming the upstream, the status and the challenge's error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { freePort } from './harness.mjs';
import { startWith, native, ROOT, sleep } from '../security/helpers.mjs';

const NATIVE = native();
const nativeOnly = { skip: !NATIVE && 'checked against the native server (SIEVE_TARGET=native)' };
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const ToolListChanged = z.object({ method: z.literal('notifications/tools/list_changed') }).passthrough();
/** How long a dead upstream may stay in the lists: the check's 15 s of silence, its 5 s deadline, ticks. */
const BOUND_MS = 25_000;

/** Starts the tiny upstream (a child process) on `port` (a free one when not given). */
async function startTiny({ port, tools = 'echo', refuse } = {}) {
  port ??= await freePort();
  const env = { ...process.env, PORT: String(port), TOOLS: tools, ...(refuse ? { REFUSE_CALLS: String(refuse) } : {}) };
  const child = spawn(process.execPath, [path.join(ROOT, 'tests', 'fixtures', 'tiny-upstream.mjs')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (c) => { log += c; });
  child.stderr.on('data', (c) => { log += c; });
  let exited = null;
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => { exited = { code, signal }; resolve(); }));
  for (const deadline = Date.now() + 15_000; !log.includes('listening on port');) {
    if (exited) throw new Error(`the tiny upstream exited (${JSON.stringify(exited)}):\n${log}`);
    if (Date.now() > deadline) throw new Error(`the tiny upstream did not start:\n${log}`);
    await sleep(50);
  }
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    pid: child.pid,
    kill: async () => {
      if (!exited) process.kill(child.pid, 'SIGKILL');
      await exit;
    },
  };
}

async function connectHttp(url) {
  const client = new Client({ name: 'health-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const names = async (client) => (await client.listTools()).tools.map((t) => t.name).sort();

/** Resolves with the time of the next notifications/tools/list_changed `client` gets. */
const nextListChanged = (client) =>
  new Promise((resolve) => client.setNotificationHandler(ToolListChanged, () => resolve(Date.now())));

test('a dead HTTP upstream nobody calls leaves the lists within the bound (list_changed); a call of its tool names it', { timeout: 120_000, ...nativeOnly }, async () => {
  const a = await startTiny({ tools: 'one,two' });
  const b = await startTiny({ tools: 'keep' });
  const server = await startWith({ upstreams: { a: { url: a.url }, b: { url: b.url } } });
  const client = await connectHttp(server.url);
  try {
    assert.deepEqual(await names(client), ['a_one', 'a_two', 'b_keep']);
    const heard = nextListChanged(client);
    await sleep(1500); // the client's GET stream is open
    const killed = Date.now();
    await a.kill();
    // No call, no list: only the gateway's own check can notice.
    const at = await Promise.race([heard, sleep(BOUND_MS).then(() => null)]);
    assert.ok(at, `a listening client got notifications/tools/list_changed within ${BOUND_MS} ms\n${server.output?.() ?? ''}`);
    console.log(`the dead upstream left the lists ${at - killed} ms after it was killed`);
    assert.deepEqual(await names(client), ['b_keep'], "a's tools left tools/list");
    // Its tool is not "Unknown": the error names the upstream and why.
    await assert.rejects(client.callTool({ name: 'a_one', arguments: {} }), (e) => {
      assert.match(e.message, /upstream "a" is down/);
      assert.match(e.message, /"a_one"/);
      assert.doesNotMatch(e.message, /Unknown tool/);
      return true;
    });
    // A name no upstream serves stays "Unknown tool".
    await assert.rejects(client.callTool({ name: 'nobody_here', arguments: {} }), /Unknown tool/);
  } finally {
    await client.close();
    await server.stop();
    await a.kill();
    await b.kill();
  }
});

test('serve starts with every upstream down: initialize answers, the lists are empty, and fill in (list_changed) when it comes up', { timeout: 120_000, ...nativeOnly }, async () => {
  const port = await freePort();
  const server = await startWith({ upstreams: { late: { url: `http://127.0.0.1:${port}/mcp` } } });
  let up;
  const client = await connectHttp(server.url);
  try {
    assert.deepEqual(await names(client), []);
    const heard = nextListChanged(client);
    await sleep(1500); // the client's GET stream is open
    up = await startTiny({ port, tools: 'hello' });
    const at = await Promise.race([heard, sleep(45_000).then(() => null)]);
    assert.ok(at, 'the client got notifications/tools/list_changed when the upstream came up');
    assert.deepEqual(await names(client), ['late_hello']);
    const r = await client.callTool({ name: 'late_hello', arguments: {} });
    assert.equal(r.content[0].text, 'called hello');
  } finally {
    await client.close();
    await server.stop();
    await up?.kill();
  }
});

test('stdio starts with every upstream down: initialize answers, the lists are empty, and fill in (list_changed) when it comes up', { timeout: 120_000, ...nativeOnly }, async () => {
  const port = await freePort();
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-health-'));
  const catalog = path.join(tmp, 'catalog.json');
  writeFileSync(catalog, JSON.stringify({ upstreams: { late: { url: `http://127.0.0.1:${port}/mcp` } } }));
  const client = new Client({ name: 'health-stdio-e2e', version: '1.0.0' });
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', catalog], stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (c) => { stderr += c; });
  let up;
  try {
    await client.connect(transport);
    assert.deepEqual(await names(client), [], stderr);
    const heard = nextListChanged(client);
    up = await startTiny({ port, tools: 'hello' });
    const at = await Promise.race([heard, sleep(45_000).then(() => null)]);
    assert.ok(at, `the client got notifications/tools/list_changed when the upstream came up\n${stderr}`);
    assert.deepEqual(await names(client), ['late_hello']);
  } finally {
    await client.close();
    await up?.kill();
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("an upstream's HTTP 401 on a call names the upstream, the status and the challenge's error", { timeout: 60_000, ...nativeOnly }, async () => {
  const gh = await startTiny({ tools: 'delete', refuse: 401 });
  const server = await startWith({ upstreams: { gh: { url: gh.url } } });
  const client = await connectHttp(server.url);
  try {
    await assert.rejects(client.callTool({ name: 'gh_delete', arguments: {} }), (e) => {
      assert.match(e.message, /upstream "gh": it refused tools\/call with HTTP 401 Unauthorized/);
      assert.match(e.message, /invalid_token/);
      assert.doesNotMatch(e.message, /an error without a message/);
      return true;
    });
  } finally {
    await client.close();
    await server.stop();
    await gh.kill();
  }
});
