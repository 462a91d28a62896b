// E2E (issue 27, items 3 and 4): the official SDK v2 client (@modelcontextprotocol/client)
// against the Worker — or the native server with SIEVE_TARGET=native — for GitHub's view
// semantics (X-MCP-Exclude-Tools, /mcp/x/{toolset}/readonly, X-MCP-Lockdown and the operator's
// MCP_SIEVE_LOCKDOWN, aliases) and the progressive-discovery drafts: the Progressive Disclosure
// WG's `io.modelcontextprotocol/groups` extension (groups/list, groups/get, scoped tools out of
// tools/list for a client declaring it), SEP-2564's uriPatterns, SEP-2636's tools/catalog and
// tools/describe. Custom methods go through `client.request`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startNative, startWorker, toolNames as listNames } from './harness.mjs';

const EXT = 'io.modelcontextprotocol/groups';
const GITHUB = ['list_pull_requests', 'get_pull_request', 'create_pull_request', 'merge_pull_request',
  'list_issues', 'create_issue', 'close_issue', 'open_issue_for_failed_run'];
const Anything = z.object({}).passthrough();

const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
const github = doc.groups.find((g) => g.name === 'github');
github.scoped = true;
github.instructions = 'Read the pull request before merging it.';
doc.tools.find((t) => t.name === 'echo').aliases = ['say'];
doc.lockdown = { toolsets: ['utilities'], excludeTools: ['add'], readOnly: true };
const CATALOG = JSON.stringify(doc);

let tmp;
/** The server under test with the catalog above and these environment variables. */
async function start(vars = {}) {
  if (process.env.SIEVE_TARGET === 'native') {
    tmp ??= mkdtempSync(path.join(tmpdir(), 'sieve-discovery-'));
    writeFileSync(path.join(tmp, 'catalog.json'), CATALOG);
    return startNative({ extraArgs: ['--catalog', path.join(tmp, 'catalog.json')], env: vars });
  }
  const extra = Object.entries(vars).flatMap(([k, v]) => ['--var', `${k}:${v}`]);
  return startWorker({ extraArgs: ['--var', `MCP_SIEVE_CONFIG:${CATALOG}`, ...extra] });
}

let server;
before(async () => { server = await start(); }, { timeout: 120_000 });
after(async () => {
  await server?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function connect(url, { declare = false, mode = { pin: '2026-07-28' }, headers = {} } = {}) {
  const client = new Client(
    { name: 'discovery-e2e', version: '1.0.0' },
    { capabilities: declare ? { extensions: { [EXT]: {} } } : {}, versionNegotiation: { mode } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

for (const [label, mode] of [['2026-07-28', { pin: '2026-07-28' }], ['legacy', 'legacy']]) {
  test(`groups extension (${label}): a declaring client gets bundles, others the flat list and SEP-1300 groups`, { timeout: 60_000 }, async () => {
    const plain = await connect(server.url, { mode });
    const ext = await connect(server.url, { mode, declare: true });
    try {
      const flat = await listNames(plain);
      assert.ok(GITHUB.every((t) => flat.includes(t)), 'flattened for a client without the extension');
      const sep1300 = await plain.request({ method: 'groups/list', params: {} }, Anything);
      assert.ok(sep1300.groups.some((g) => g.name === 'github' && g.parent === 'code'), JSON.stringify(sep1300));

      const scoped = await listNames(ext);
      assert.ok(GITHUB.every((t) => !scoped.includes(t)), scoped.join(', '));
      assert.equal(scoped.length, flat.length - GITHUB.length);
      const groups = await ext.request({ method: 'groups/list', params: {} }, Anything);
      assert.deepEqual(groups.groups, [{ name: 'github', title: 'GitHub', description: 'Pull requests and issues on GitHub.' }]);
      const got = await ext.request({ method: 'groups/get', params: { name: 'github' } }, Anything);
      assert.equal(got.instructions, 'Read the pull request before merging it.');
      assert.deepEqual(got.contents.tools.map((t) => t.name).sort(), [...GITHUB].sort());
      assert.ok(got.contents.tools.every((t) => t.inputSchema));
      await assert.rejects(ext.request({ method: 'groups/get', params: { name: 'code' } }, Anything), (e) => e.code === -32002);
      // Discovery gating is not access control: a scoped tool answers.
      const r = await ext.callTool({ name: 'list_issues', arguments: {} });
      assert.ok(r.content.length > 0);
    } finally { await plain.close(); await ext.close(); }
  });
}

test('SEP-2636 tools/catalog + tools/describe and SEP-2564 uriPatterns', { timeout: 60_000 }, async () => {
  const client = await connect(server.url);
  try {
    // The SDK keeps only the capability fields it knows: read server/discover as sent.
    const caps = (await client.request({ method: 'server/discover', params: {} }, Anything)).capabilities;
    assert.equal(caps.tools.progressiveDisclosure, true, JSON.stringify(caps));
    assert.ok(caps.resources.filtering.supported.includes('uriPatterns'));
    assert.ok(caps.extensions[EXT]);
    const catalog = await client.request({ method: 'tools/catalog', params: { query: 'merge a pull request' } }, Anything);
    assert.equal(catalog.tools[0].name, 'merge_pull_request');
    assert.match(catalog.tools[0].schemaHash, /^[0-9a-f]{64}$/);
    assert.equal(catalog.tools[0].inputSchema, undefined);
    const described = await client.request({ method: 'tools/describe', params: { names: ['echo', 'add'] } }, Anything);
    assert.deepEqual(described.tools.map((t) => t.name), ['echo', 'add']);
    assert.ok(described.tools[1].inputSchema);
    await assert.rejects(
      client.request({ method: 'tools/describe', params: { names: ['echo', 'nope'] } }, Anything),
      (e) => e.code === -32002 && JSON.stringify(e.data).includes('nope'),
    );
    const res = await client.request({ method: 'resources/list', params: { filter: { uriPatterns: ['db://*'] } } }, Anything);
    assert.deepEqual(res.resources.map((r) => r.uri), ['db://schema']);
  } finally { await client.close(); }
});

test('GitHub view semantics: exclude beats include, /x/{toolset}/readonly, X-MCP-Lockdown, aliases', { timeout: 60_000 }, async () => {
  const ex = await connect(server.url, { headers: { 'X-MCP-Tools': 'add,echo,send_email', 'X-MCP-Exclude-Tools': 'send_email' } });
  try {
    assert.deepEqual((await listNames(ex)).sort(), ['add', 'echo']);
    await assert.rejects(ex.callTool({ name: 'send_email', arguments: {} }), /Unknown tool/);
  } finally { await ex.close(); }
  const url = await connect(`${server.url}/x/email/readonly`, { mode: 'legacy' });
  try {
    assert.deepEqual((await listNames(url)).sort(), ['list_messages', 'read_message', 'search_emails']);
  } finally { await url.close(); }
  // The document's lockdown, turned on by the request: utilities, without add, read-only.
  const locked = await connect(server.url, { headers: { 'X-MCP-Lockdown': 'true', 'X-MCP-Tools': 'add,echo,send_email' } });
  try {
    assert.deepEqual(await listNames(locked), ['echo']);
  } finally { await locked.close(); }
  // An alias: callable, not listed.
  const plain = await connect(server.url);
  try {
    assert.ok(!(await listNames(plain)).includes('say'));
    const r = await plain.callTool({ name: 'say', arguments: { message: 'hi' } });
    assert.equal(r.content[0].text, 'hi');
  } finally { await plain.close(); }
});

test('MCP_SIEVE_LOCKDOWN: the operator\'s lockdown bounds every request; X-MCP-Lockdown: false cannot lift it', { timeout: 120_000 }, async () => {
  const operator = await start({ MCP_SIEVE_LOCKDOWN: 'true' });
  try {
    const client = await connect(operator.url, { headers: { 'X-MCP-Lockdown': 'false' } });
    try {
      const tools = await listNames(client);
      assert.deepEqual(tools.sort(), ['current_time', 'echo', 'long_report', 'text_stats']);
      await assert.rejects(client.callTool({ name: 'send_email', arguments: {} }), /Unknown tool/);
    } finally { await client.close(); }
  } finally { await operator.stop(); }
});
