// E2E: a view URL on the gateway in front of a real upstream (npm
// @modelcontextprotocol/server-everything on loopback), with `overlay` groups and tags: an
// unmodified official SDK client and the MCP Inspector CLI, given only the view URL, see and may
// call only the view's tools. Worker, or the native server with SIEVE_TARGET=native.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startEverything, startWith } from '../security/helpers.mjs';

const CLI_DIR = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build');
let upstream;
let gw;

before(async () => {
  upstream = await startEverything();
  gw = await startWith({
    upstream: { url: upstream.url, refreshSeconds: 3600 },
    groups: [{ name: 'basics', title: 'Basic tools' }],
    tags: [{ name: 'math' }],
    overlay: { echo: { groups: ['basics'] }, 'get-sum': { groups: ['basics'], tags: ['math'] } },
    views: { basics: { description: 'echo and get-sum', filter: { groups: ['basics'] } } },
  });
}, { timeout: 120_000 });

after(async () => {
  await gw?.stop();
  await upstream?.stop();
});

function inspector(url, ...args) {
  return new Promise((resolve) => {
    execFile(process.execPath, ['index.js', url, '--transport', 'http', ...args], { cwd: CLI_DIR, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

test('the SDK client at the view URL sees and calls only the view\'s upstream tools', { timeout: 60_000 }, async () => {
  const client = new Client({ name: 'view-upstream', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/basics`)));
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(tools, ['echo', 'get-sum']);
    const echoed = await client.callTool({ name: 'echo', arguments: { message: 'through a view' } });
    assert.match(echoed.content[0].text, /through a view/);
    const posts = upstream.posts();
    await assert.rejects(client.callTool({ name: 'get-env', arguments: {} }), /Unknown tool/);
    assert.equal(upstream.posts(), posts, 'a tool outside the view is not forwarded');
  } finally { await client.close(); }
});

test('the Inspector CLI at the view URL lists only the view\'s tools and cannot call others', { timeout: 90_000 }, async () => {
  const listed = await inspector(`${gw.url}/basics`, '--method', 'tools/list');
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(JSON.parse(listed.stdout).tools.map((t) => t.name).sort(), ['echo', 'get-sum']);
  const called = await inspector(`${gw.url}/basics`, '--method', 'tools/call', '--tool-name', 'get-sum', '--tool-arg', 'a=2', '--tool-arg', 'b=40');
  assert.equal(called.code, 0, called.stderr);
  assert.match(called.stdout, /42/);
  const refused = await inspector(`${gw.url}/basics`, '--method', 'tools/call', '--tool-name', 'get-env');
  assert.match(refused.stdout + refused.stderr, /Unknown tool/);
});
