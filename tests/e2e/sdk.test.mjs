// E2E: the official MCP TypeScript SDK client against the local Worker (wrangler dev) — or the
// native server with SIEVE_TARGET=native — covering
// the handshake, groups/tags listing, filtered tools/list (SEP-1300), errors, tools/call and the
// Streamable HTTP rules. Needs the Worker built first (scripts/build.sh).
//
// Note: the SDK's stock schemas (zod `object`, which strips unknown keys) drop `capabilities.filtering`
// and a tool's `groups`/`tags`. So those are read from the raw messages or through our own loose
// schemas with `client.request`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTarget, rejectsWith } from './harness.mjs';
import { post, sessionHeaders } from '../common/mcp-raw.mjs';

const META_GROUPS = 'io.modelcontextprotocol/groups';
const PROTOCOL = '2025-11-25';

const Named = z.object({ name: z.string() }).passthrough();
const GroupsResult = z.object({ groups: z.array(Named) }).passthrough();
const TagsResult = z.object({ tags: z.array(Named) }).passthrough();
const ToolsPage = z.object({ tools: z.array(Named), nextCursor: z.string().optional() }).passthrough();
const Anything = z.object({}).passthrough();

let worker;
let client;
const rawMessages = []; // every JSON-RPC message the transport received, unparsed

before(async () => {
  worker = await startTarget();
  const transport = new StreamableHTTPClientTransport(new URL(worker.url));
  transport.onmessage = (msg) => rawMessages.push(msg); // Protocol.connect chains onto this
  client = new Client({ name: 'sieve-e2e', version: '1.0.0' });
  await client.connect(transport);
}, { timeout: 120_000 });

after(async () => {
  await client?.close().catch(() => {});
  await worker?.stop();
});

/** All tools for `filter` (undefined = no filter), following nextCursor, with unknown fields kept. */
async function listTools(filter) {
  const tools = [];
  let cursor;
  for (let page = 0; page < 50; page++) {
    const params = { ...(filter ? { filter } : {}), ...(cursor ? { cursor } : {}) };
    const res = await client.request({ method: 'tools/list', params }, ToolsPage);
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (!cursor) return tools;
  }
  throw new Error('tools/list: too many pages');
}

let fullCache;
const fullList = async () => (fullCache ??= await listTools());
const names = (tools) => tools.map((t) => t.name).sort();
const textOf = (res) => res.content.find((c) => c.type === 'text')?.text;

test('connect: initialize succeeds, server info and capabilities', () => {
  assert.equal(client.getServerVersion().name, 'mcp-sieve-demo');
  assert.ok(client.getServerCapabilities().tools, 'capabilities.tools');
  const init = rawMessages.find((m) => m.result?.serverInfo)?.result;
  assert.ok(init, 'raw initialize result seen');
  assert.ok(init.capabilities.filtering?.groups, 'capabilities.filtering.groups');
  assert.ok(init.capabilities.filtering?.tags, 'capabilities.filtering.tags');
  assert.ok(init.capabilities.tools, 'capabilities.tools (raw)');
});

test('groups/list', async () => {
  const { groups } = await client.request({ method: 'groups/list' }, GroupsResult);
  assert.ok(groups.length >= 8, `${groups.length} groups`);
  const got = groups.map((g) => g.name);
  for (const g of ['files', 'calendar', 'utilities']) assert.ok(got.includes(g), `group ${g}`);
});

test('tags/list', async () => {
  const { tags } = await client.request({ method: 'tags/list' }, TagsResult);
  const got = tags.map((t) => t.name);
  for (const t of ['stable', 'read-only', 'destructive']) assert.ok(got.includes(t), `tag ${t}`);
});

test('tools/list without filter: all pages, groups mirrored in _meta', async () => {
  const stock = []; // the stock SDK call, following nextCursor
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    stock.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  assert.ok(stock.length >= 60, `${stock.length} tools`);

  const full = await fullList();
  assert.deepEqual(names(full), names(stock));
  assert.equal(new Set(full.map((t) => t.name)).size, full.length, 'no duplicates across pages');
  const grouped = full.filter((t) => t.groups);
  assert.ok(grouped.length > 0);
  for (const t of grouped) assert.deepEqual(t._meta?.[META_GROUPS], t.groups, `${t.name} _meta groups`);
});

test('tools/list filter groups [calendar]', async () => {
  const got = await listTools({ groups: ['calendar'] });
  assert.ok(got.length > 0);
  for (const t of got) assert.ok(t.groups?.includes('calendar'), `${t.name} in calendar`);
  // calendar has no subgroups, so direct membership is the whole rule
  const expected = (await fullList()).filter((t) => t.groups?.includes('calendar'));
  assert.equal(got.length, expected.length);
});

test('tools/list filter groups ANY + tags ALL', async () => {
  const filter = { groups: ['files', 'email'], tags: ['stable', 'read-only'] };
  const { groups } = await client.request({ method: 'groups/list' }, GroupsResult);
  const subgroups = groups.filter((g) => filter.groups.includes(g.parent));
  assert.deepEqual(subgroups, [], 'files/email have no subgroups (else expand them below)');

  const expected = (await fullList()).filter((t) =>
    filter.groups.some((g) => t.groups?.includes(g)) && filter.tags.every((g) => t.tags?.includes(g)));
  assert.ok(expected.length > 0);
  assert.deepEqual(names(await listTools(filter)), names(expected));
});

test('a tool without groups never matches a group filter', async () => {
  const full = await fullList();
  const loner = full.find((t) => !t.groups || t.groups.length === 0);
  assert.ok(loner, 'some tool has no groups');
  const { groups } = await client.request({ method: 'groups/list' }, GroupsResult);
  const got = names(await listTools({ groups: groups.map((g) => g.name) }));
  assert.ok(got.length > 0);
  assert.ok(!got.includes(loner.name), `${loner.name} must not match`);
});

test('bad filter params: -32602 naming filter.groups', async () => {
  await rejectsWith(
    client.request({ method: 'tools/list', params: { filter: { groups: 'calendar' } } }, ToolsPage),
    -32602, /filter\.groups/);
});

test('unknown method: -32601', async () => {
  await rejectsWith(client.request({ method: 'nope/nothing' }, Anything), -32601);
});

test('tools/call: utilities do real work', async () => {
  assert.match(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } })), /42/);

  const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello sieve' } });
  assert.equal(textOf(echo), 'hello sieve');

  const stats = JSON.parse(textOf(await client.callTool({ name: 'text_stats', arguments: { text: 'one two\nthree' } })));
  assert.equal(stats.words, 3);
  assert.equal(stats.lines, 2);

  const time = textOf(await client.callTool({ name: 'current_time', arguments: {} }));
  const ms = Date.parse(time);
  assert.ok(!Number.isNaN(ms), `Date.parse(${JSON.stringify(time)})`);
  assert.ok(Math.abs(ms - Date.now()) < 5 * 60_000, `${time} is within 5 minutes of now`);
});

test('raw Streamable HTTP rules', async () => {
  const init = await post(worker.url, {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  assert.equal(init.status, 200);
  const sessionId = init.headers.get('mcp-session-id');
  assert.ok(sessionId, 'mcp-session-id header');
  assert.equal(init.response?.result?.protocolVersion, PROTOCOL);
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

  const noSession = await post(worker.url, list, { headers: { 'MCP-Protocol-Version': PROTOCOL } });
  assert.equal(noSession.status, 400, 'no Mcp-Session-Id → 400');

  const unknown = await post(worker.url, list, { headers: sessionHeaders('nope') });
  assert.equal(unknown.status, 404, 'unknown session → 404');

  const note = await post(worker.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: sessionHeaders(sessionId) });
  assert.equal(note.status, 202, 'notification → 202');
  assert.equal(note.body, '', 'notification → empty body');

  const bad = await post(worker.url, '{oops', { headers: sessionHeaders(sessionId) });
  assert.ok([200, 400].includes(bad.status), `parse error status ${bad.status}`);
  assert.equal(bad.response?.error?.code, -32700);
});
