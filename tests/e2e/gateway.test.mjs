// E2E: gateway mode. A small upstream MCP server written with the official SDK (McpServer +
// StreamableHTTPServerTransport, on 127.0.0.1) is fronted by the real Worker under wrangler dev,
// configured (MCP_SIEVE_CONFIG) with `upstream.url` pointing at it, an overlay assigning groups
// and tags to the upstream's tools, and a policy rule. The official SDK Client talks to both: the
// Worker's filtered lists carry the upstream's items with their fields intact, policy refuses a
// hidden tool, and calls, prompts and resource reads pass the upstream's results through.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { startWorker, startNative } from './harness.mjs';
import { sleep } from '../security/helpers.mjs';

const META_GROUPS = 'io.modelcontextprotocol/groups';
const Anything = z.object({}).passthrough();
const ToolsPage = z.object({ tools: z.array(Anything), nextCursor: z.string().optional() }).passthrough();

/** Every upstream server instance, and the tools added to all of them by `enable_beta`. */
const instances = [];
const added = new Set();

/** One upstream MCP server instance (one per session, as the SDK's examples do). */
function upstreamServer() {
  const s = new McpServer({ name: 'upstream-e2e', version: '3.1.4' }, { instructions: 'An upstream for the gateway test.' });
  const text = (t) => ({ content: [{ type: 'text', text: t }] });
  s.registerTool('git_status', { description: 'Working tree status', inputSchema: { path: z.string().optional() },
    annotations: { readOnlyHint: true }, _meta: { 'vendor.example/owner': 'vcs-team' } }, async ({ path }) => text(`clean: ${path ?? '.'}`));
  s.registerTool('git_push', { title: 'Push', description: 'Push commits', inputSchema: { remote: z.string(), force: z.boolean().optional() } },
    async ({ remote, force }) => text(`pushed to ${remote}${force ? ' (forced)' : ''}`));
  s.registerTool('git_reset_hard', { description: 'Discard all local changes', annotations: { destructiveHint: true } },
    async () => text('reset done'));
  s.registerTool('weather', { description: 'Weather for a city', inputSchema: { city: z.string() } }, async ({ city }) => text(`sunny in ${city}`));
  s.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() }, outputSchema: { sum: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }));
  s.registerTool('fail', { description: 'Always fails' }, async () => ({ content: [{ type: 'text', text: 'it failed' }], isError: true }));
  s.registerTool('echo', { description: 'Echoes', inputSchema: { message: z.string() } }, async ({ message }) => text(message));
  s.registerTool('notes_write', { description: 'Writes a note', inputSchema: { note: z.string() } }, async ({ note }) => text(`saved ${note.length} chars`));
  // Adds a tool to the upstream (every session's server: the gateway lists over a session of
  // its own, and forwards each client's calls in that client's own upstream session) and says so
  // on the request's own stream, where a gateway (which opens no GET stream upstream) sees it.
  s.registerTool('enable_beta', { description: 'Adds the beta tool (or one named `name`)', inputSchema: { name: z.string().optional() } }, async ({ name }, extra) => {
    const tool = name ?? 'beta_tool';
    added.add(tool);
    for (const each of instances) each.enable(tool);
    await extra.sendNotification({ method: 'notifications/tools/list_changed' });
    return text('enabled');
  });
  const mine = new Map();
  s.enable = (tool) => {
    if (!mine.has(tool)) mine.set(tool, s.registerTool(tool, { description: 'New' }, async () => text(tool === 'beta_tool' ? 'beta' : tool)));
  };
  for (const tool of added) s.enable(tool);
  instances.push(s);
  s.registerResource('readme', 'up://readme', { description: 'The readme', mimeType: 'text/markdown' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: '# Upstream\nHello.' }] }));
  s.registerPrompt('greet', { description: 'Greets someone', argsSchema: { who: z.string() } },
    async ({ who }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${who}` } }] }));
  return s;
}

/** The upstream's HTTP server: sessions by Mcp-Session-Id, as in the SDK's stateful example. */
async function startUpstream() {
  const transports = new Map();
  const srv = http.createServer(async (req, res) => {
    try {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const body = raw ? JSON.parse(raw) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = sid && transports.get(sid);
      if (!transport) {
        if (sid) { res.writeHead(404).end(); return; }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, transport),
        });
        await upstreamServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${srv.address().port}/mcp`;
  return {
    url,
    stop: async () => {
      for (const t of transports.values()) await t.close().catch(() => {});
      srv.closeAllConnections?.();
      await new Promise((resolve) => srv.close(resolve));
    },
  };
}

const ToolListChanged = z.object({ method: z.literal('notifications/tools/list_changed') }).passthrough();

async function connect(url, name) {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

let upstream;
let worker;
let direct; // SDK client straight to the upstream
let viaGateway; // SDK client to the Worker (or the native server with SIEVE_TARGET=native)
let tmp;

before(async () => {
  upstream = await startUpstream();
  const doc = {
    upstream: { url: upstream.url, refreshSeconds: 300 },
    groups: [{ name: 'code', title: 'Code' }, { name: 'git', parent: 'code' }, { name: 'outside' }],
    tags: [{ name: 'vcs', description: 'Version control' }],
    overlay: {
      'git_*': { groups: ['git'], tags: ['vcs'] },
      git_reset_hard: { tags: ['destructive'] },
      weather: { groups: ['outside'], tags: ['read-only'] },
      echo: { tags: ['read-only'] },
    },
    policy: { rules: [{ hide: { tags: ['destructive'] } }] },
  };
  if (process.env.SIEVE_TARGET === 'native') {
    // The native server in gateway mode: the same document as a --catalog file.
    tmp = mkdtempSync(path.join(tmpdir(), 'sieve-gateway-'));
    writeFileSync(path.join(tmp, 'gateway.json'), JSON.stringify(doc));
    worker = await startNative({ extraArgs: ['--catalog', path.join(tmp, 'gateway.json')] });
  } else {
    worker = await startWorker({ extraArgs: ['--var', `MCP_SIEVE_CONFIG:${JSON.stringify(doc)}`] });
  }
  direct = await connect(upstream.url, 'direct');
  viaGateway = await connect(worker.url, 'via-gateway');
}, { timeout: 120_000 });

after(async () => {
  await viaGateway?.close().catch(() => {});
  await direct?.close().catch(() => {});
  await worker?.stop();
  await upstream?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function listTools(client, filter) {
  const tools = [];
  let cursor;
  do {
    const res = await client.request({ method: 'tools/list', params: { ...(filter ? { filter } : {}), ...(cursor ? { cursor } : {}) } }, ToolsPage);
    tools.push(...res.tools);
    cursor = res.nextCursor;
  } while (cursor);
  return tools;
}

/** A gateway tool without the membership and the pinning digest the gateway added: what the upstream listed. */
function withoutMembership(tool) {
  const t = structuredClone(tool);
  delete t.groups;
  delete t.tags;
  if (t._meta) {
    assert.match(t._meta['dev.mcp-sieve/digest'], /^sha256:[0-9a-f]{64}$/, `${t.name}: its digest`);
    delete t._meta['dev.mcp-sieve/digest'];
    delete t._meta[META_GROUPS];
    if (Object.keys(t._meta).length === 0) delete t._meta;
  }
  return t;
}

test('tools/list with a filter returns exactly the overlay-selected upstream tools, fields intact', async () => {
  const upstreamTools = new Map((await listTools(direct)).map((t) => [t.name, t]));
  assert.equal(upstreamTools.size, 9);
  const git = await listTools(viaGateway, { groups: ['code'] });
  assert.deepEqual(git.map((t) => t.name), ['git_status', 'git_push']); // git_reset_hard: hidden by policy
  for (const t of git) {
    assert.deepEqual(t.groups, ['git']);
    assert.deepEqual(t.tags, ['vcs']);
    assert.deepEqual(t._meta[META_GROUPS], ['git']);
    assert.deepEqual(withoutMembership(t), upstreamTools.get(t.name));
  }
  assert.equal(git[0]._meta['vendor.example/owner'], 'vcs-team');
  const readOnly = await listTools(viaGateway, { tags: ['read-only'] });
  assert.deepEqual(readOnly.map((t) => t.name), ['weather', 'echo']);
  const all = await listTools(viaGateway);
  assert.deepEqual(all.map((t) => t.name).sort(), [...upstreamTools.keys()].filter((n) => n !== 'git_reset_hard').sort());
  for (const t of all) assert.deepEqual(withoutMembership(t), upstreamTools.get(t.name));
  const groups = await viaGateway.request({ method: 'groups/list', params: {} }, z.object({ groups: z.array(Anything) }).passthrough());
  assert.deepEqual(groups.groups.map((g) => g.name), ['code', 'git', 'outside']);
});

test('a tool hidden by policy is refused with -32602 and never reaches the upstream', async () => {
  const direct_ = await direct.callTool({ name: 'git_reset_hard', arguments: {} });
  assert.equal(direct_.content[0].text, 'reset done'); // the upstream has it
  await assert.rejects(viaGateway.callTool({ name: 'git_reset_hard', arguments: {} }), (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.equal(e.code, -32602);
    assert.match(e.message, /Unknown tool/);
    return true;
  });
});

test('tools/call passes the upstream result through untouched', async () => {
  for (const [name, args] of [['add', { a: 2, b: 40 }], ['git_push', { remote: 'origin', force: true }], ['fail', {}], ['echo', { message: 'hi ✓' }]]) {
    const want = await direct.request({ method: 'tools/call', params: { name, arguments: args } }, Anything);
    const got = await viaGateway.request({ method: 'tools/call', params: { name, arguments: args } }, Anything);
    assert.deepEqual(got, want, name);
  }
  const sum = await viaGateway.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
  assert.deepEqual(sum.structuredContent, { sum: 42 });
  // An argument error of the upstream (its -32602 or isError result) passes through as well.
  const bad = { name: 'add', arguments: { a: 'x', b: 1 } };
  const wantBad = await direct.request({ method: 'tools/call', params: bad }, Anything).then((r) => ({ r }), (e) => ({ e: [e.code, e.message] }));
  const gotBad = await viaGateway.request({ method: 'tools/call', params: bad }, Anything).then((r) => ({ r }), (e) => ({ e: [e.code, e.message] }));
  assert.deepEqual(gotBad, wantBad);
});

test('prompts/get and resources/read pass through', async () => {
  const prompts = await viaGateway.listPrompts();
  assert.deepEqual(prompts.prompts.map((p) => p.name), ['greet']);
  assert.deepEqual(await viaGateway.getPrompt({ name: 'greet', arguments: { who: 'Ada' } }),
    await direct.getPrompt({ name: 'greet', arguments: { who: 'Ada' } }));
  const resources = await viaGateway.listResources();
  assert.deepEqual(resources.resources.map((r) => r.uri), ['up://readme']);
  assert.deepEqual(await viaGateway.readResource({ uri: 'up://readme' }), await direct.readResource({ uri: 'up://readme' }));
  await assert.rejects(viaGateway.getPrompt({ name: 'nope' }), (e) => e.code === -32602);
});

test('the gateway takes the upstream server name when the document has none', async () => {
  assert.equal(viaGateway.getServerVersion()?.name, 'upstream-e2e');
  assert.equal(viaGateway.getInstructions(), 'An upstream for the gateway test.');
});

test('an upstream list_changed on a forwarded call refreshes the lists and reaches connected clients', async () => {
  // Another client, connected before the change: the SDK opens the session's GET stream.
  const watcher = await connect(worker.url, 'watcher');
  const heard = new Promise((resolve) => {
    watcher.setNotificationHandler(ToolListChanged, () => resolve(Date.now()));
  });
  await sleep(1500); // the GET stream is open
  const before_ = (await listTools(viaGateway)).map((t) => t.name);
  assert.ok(!before_.includes('beta_tool'));
  const r = await viaGateway.callTool({ name: 'enable_beta', arguments: {} });
  assert.equal(r.content[0].text, 'enabled');
  const changedAt = Date.now();
  const at = await Promise.race([heard, sleep(15_000).then(() => null)]);
  assert.ok(at, 'the connected client received notifications/tools/list_changed on its GET stream');
  console.log(`list_changed reached the other client ${at - changedAt} ms after the upstream's change`);
  const seen = (await listTools(watcher)).map((t) => t.name);
  assert.ok(seen.includes('beta_tool'), `the notified client sees the new list: ${seen.join(', ')}`);
  await watcher.close();
  const after_ = (await listTools(viaGateway)).map((t) => t.name);
  assert.ok(after_.includes('beta_tool'), after_.join(', '));
  assert.equal((await viaGateway.callTool({ name: 'beta_tool', arguments: {} })).content[0].text, 'beta');
});

test('a 2026-07-28 client (SDK v2, subscriptions/listen) hears of an upstream change and gets the new list', { timeout: 60_000 }, async () => {
  let resolveChange;
  const changed = new Promise((r) => { resolveChange = r; });
  const modern = new ClientV2(
    { name: 'listener-v2', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      listChanged: { tools: { debounceMs: 0, onChanged: (err, items) => resolveChange({ err, items }) } },
    },
  );
  await modern.connect(new StreamableHTTPClientTransportV2(new URL(worker.url)));
  try {
    assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
    await sleep(1500); // the subscription is open
    await viaGateway.callTool({ name: 'enable_beta', arguments: { name: 'gamma_tool' } });
    const got = await Promise.race([changed, sleep(15_000).then(() => null)]);
    assert.ok(got, 'the SDK v2 client received notifications/tools/list_changed through subscriptions/listen');
    assert.ifError(got.err);
    assert.ok(got.items.some((t) => t.name === 'gamma_tool'), `the refreshed list holds the new tool: ${got.items.map((t) => t.name)}`);
  } finally {
    await modern.close().catch(() => {});
  }
});
