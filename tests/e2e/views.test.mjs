// E2E: views for clients that send no filter, with unmodified official clients (SDK v1 in the
// 2025 era, SDK v2 pinned to 2026-07-28) against the Worker — or the native server with
// SIEVE_TARGET=native — serving the default catalog (views "email", "utilities", "safe"). The
// client is only given a URL (or headers) and sees and may call only the view's tools.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { startTarget, toolNames as names } from './harness.mjs';

const EMAIL = ['list_messages', 'read_message', 'send_email', 'search_emails', 'draft_reply', 'delete_message', 'archive_message', 'attach_file_to_email'];
let server;
before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

async function v1(url, headers = {}) {
  const client = new Client({ name: 'views-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

test('a named view: the SDK client at /mcp/email sees and calls only email tools', { timeout: 60_000 }, async () => {
  const client = await v1(`${server.url}/email`);
  try {
    const tools = await names(client);
    assert.ok(tools.length > 0 && tools.every((t) => EMAIL.includes(t)), tools.join(', '));
    const r = await client.callTool({ name: 'list_messages', arguments: {} });
    assert.ok(r.content.length > 0);
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'x' } }), /Unknown tool/);
  } finally { await client.close(); }
});

test('a query view and GitHub-style headers', { timeout: 60_000 }, async () => {
  const q = await v1(`${server.url}?groups=utilities&names=e*`);
  try {
    assert.deepEqual(await names(q), ['echo']);
    assert.equal((await q.callTool({ name: 'echo', arguments: { message: 'hi' } })).content[0].text, 'hi');
    await assert.rejects(q.callTool({ name: 'add', arguments: { a: 1, b: 2 } }), /Unknown tool/);
  } finally { await q.close(); }
  const h = await v1(server.url, { 'X-MCP-Tools': 'add,echo' });
  try {
    assert.deepEqual((await names(h)).sort(), ['add', 'echo']);
  } finally { await h.close(); }
});

test('a 2026-07-28 client (SDK v2, pinned) on a view URL', { timeout: 60_000 }, async () => {
  const client = new ClientV2({ name: 'views-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new TransportV2(new URL(`${server.url}/utilities`)));
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(tools.sort(), ['add', 'current_time', 'echo', 'long_report', 'text_stats']);
    await assert.rejects(client.callTool({ name: 'send_email', arguments: {} }), /Unknown tool/);
  } finally { await client.close(); }
});

test('search mode: SDK v1 at /mcp/search and SDK v2 at ?mode=search find, then call, only the view\'s tools', { timeout: 60_000 }, async () => {
  const client = await v1(`${server.url}/search`);
  try {
    const listed = (await client.listTools()).tools;
    assert.deepEqual(listed.map((t) => t.name), ['find_tools', 'describe_tools', 'call_tool', 'echo']);
    const found = await client.callTool({ name: 'find_tools', arguments: { query: 'send an email', limit: 3 } });
    const tools = found.structuredContent.tools;
    assert.ok(tools.length > 0 && tools.length <= 3 && tools[0].inputSchema, JSON.stringify(found));
    assert.ok(tools.some((t) => t.name === 'send_email'), tools.map((t) => t.name).join(', '));
    assert.deepEqual(JSON.parse(found.content[0].text), tools);
    const r = await client.callTool({ name: 'call_tool', arguments: { name: 'add', arguments: { a: 2, b: 3 } } });
    assert.match(JSON.stringify(r.content), /5/);
    assert.deepEqual((await client.listTools()).tools, listed, 'the list does not change');
  } finally { await client.close(); }
  const v2 = new ClientV2({ name: 'search-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await v2.connect(new TransportV2(new URL(`${server.url}?groups=utilities&mode=search`)));
  try {
    assert.deepEqual((await v2.listTools()).tools.map((t) => t.name), ['find_tools', 'describe_tools', 'call_tool']);
    const found = await v2.callTool({ name: 'find_tools', arguments: { query: 'send an email' } });
    assert.ok(found.structuredContent.tools.every((t) => ['add', 'current_time', 'echo', 'long_report', 'text_stats'].includes(t.name)));
    const echoed = await v2.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'hi' } } });
    assert.equal(echoed.content[0].text, 'hi');
    await assert.rejects(v2.callTool({ name: 'call_tool', arguments: { name: 'send_email', arguments: {} } }), /Unknown tool/);
  } finally { await v2.close(); }
});

test('unknown and malformed views are refused, naming what is wrong', async () => {
  const unknown = await fetch(`${server.url}/nope`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{}' });
  assert.equal(unknown.status, 404);
  assert.match(await unknown.text(), /unknown view .*nope.*views: email/);
  const bad = await fetch(`${server.url}?concerns.security=extreme`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{}' });
  assert.equal(bad.status, 400);
  assert.match(await bad.text(), /extreme/);
});
