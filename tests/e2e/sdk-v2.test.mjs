// E2E: the official TypeScript SDK v2 client (npm @modelcontextprotocol/client 2.4.0, the SDK of
// the 2026-07-28 revision) against the local Worker (wrangler dev) — or the native server with
// SIEVE_TARGET=native — in its three version-negotiation modes: 'legacy' (2025-11-25 initialize),
// 'auto' (probes with server/discover, then the stateless era) and pinned to 2026-07-28. In each:
// connect, list every kind with and without a filter (the filter through `client.request`), follow
// cursors, call a tool, get a prompt, read a resource; in code mode (`?mode=code`) run a program
// whose calls are made at once. The v2 client validates each result against the revision's
// schema (a 2026-07-28 list without ttlMs/cacheScope is rejected, a result without resultType).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTarget } from './harness.mjs';
import { PARALLEL, assertParallel, runCode } from '../common/code-cases.mjs';

const MODES = [
  ['legacy', 'legacy', '2025-11-25'],
  ['auto', 'auto', '2026-07-28'],
  ['pinned 2026-07-28', { pin: '2026-07-28' }, '2026-07-28'],
];

let server;
before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

async function connect(mode, url = server.url) {
  const client = new Client(
    { name: 'sieve-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Every page of a list through `client.request` (the filter is ours, so not a typed helper). */
async function all(client, method, key, params = {}) {
  const items = [];
  let cursor;
  let pages = 0;
  do {
    const r = await client.request({ method, params: cursor ? { ...params, cursor } : params });
    items.push(...r[key]);
    cursor = r.nextCursor;
    pages += 1;
  } while (cursor);
  return { items, pages };
}

for (const [name, mode, era] of MODES) {
  test(`SDK v2 client, ${name} mode: lists, filters, cursors, calls, prompts, resources`, { timeout: 120_000 }, async () => {
    const client = await connect(mode);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), era, `${name} negotiates ${era}`);
      // The typed helpers validate the revision's result schema (ttlMs, cacheScope in 2026-07-28).
      const tools = await client.listTools();
      assert.ok(tools.tools.length > 0 && tools.tools.some((t) => t.name === 'echo'), 'listTools');
      const prompts = await client.listPrompts();
      assert.ok(prompts.prompts.length > 0, 'listPrompts');
      const resources = await client.listResources();
      assert.ok(resources.resources.length > 0, 'listResources');
      const templates = await client.listResourceTemplates();
      assert.ok(Array.isArray(templates.resourceTemplates), 'listResourceTemplates');

      // Whole lists through cursors (page size 50 in the default catalog), with and without a filter.
      const every = await all(client, 'tools/list', 'tools');
      assert.ok(every.pages > 1, `the default catalog spans pages (${every.items.length} tools)`);
      assert.equal(new Set(every.items.map((t) => t.name)).size, every.items.length, 'no tool twice across pages');
      const email = await all(client, 'tools/list', 'tools', { filter: { groups: ['email'] } });
      assert.ok(email.items.length > 0 && email.items.length < every.items.length, 'a group filter narrows the list');
      const emailNames = email.items.map((t) => t.name);
      assert.deepEqual(
        emailNames,
        every.items.filter((t) => emailNames.includes(t.name)).map((t) => t.name),
        'a filtered list keeps the order of the whole list',
      );
      const filteredPrompts = await all(client, 'prompts/list', 'prompts', { filter: { namePatterns: ['*'] } });
      assert.equal(filteredPrompts.items.length, (await all(client, 'prompts/list', 'prompts')).items.length);
      for (const [method, key] of [['resources/list', 'resources'], ['resources/templates/list', 'resourceTemplates']]) {
        const r = await all(client, method, key, { filter: { excludeTags: ['no-such-tag'] } });
        assert.ok(Array.isArray(r.items), method);
      }
      if (era === '2026-07-28') {
        const raw = await client.request({ method: 'tools/list', params: {} });
        assert.ok(Number.isInteger(raw.ttlMs) && raw.ttlMs >= 0, `ttlMs: ${raw.ttlMs}`);
        assert.ok(['public', 'private'].includes(raw.cacheScope), `cacheScope: ${raw.cacheScope}`);
      }

      const called = await client.callTool({ name: 'echo', arguments: { message: `hi from ${name}` } });
      assert.equal(called.content[0].text, `hi from ${name}`);
      const prompt = prompts.prompts[0];
      const args = Object.fromEntries((prompt.arguments ?? []).map((a) => [a.name, 'x']));
      const got = await client.getPrompt({ name: prompt.name, arguments: args });
      assert.ok(got.messages.length > 0, 'getPrompt');
      const read = await client.readResource({ uri: resources.resources[0].uri });
      assert.ok(read.contents.length > 0 && read.contents[0].uri, 'readResource');
    } finally {
      await client.close().catch(() => {});
    }
  });
}

for (const [name, mode] of MODES) {
  test(`SDK v2 client, ${name} mode: code mode, a program's calls made at once`, { timeout: 60_000 }, async () => {
    const client = await connect(mode, `${server.url}?mode=code`);
    try {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['find_tools', 'describe_tools', 'run_code']);
      assertParallel(await runCode(client, PARALLEL));
    } finally {
      await client.close().catch(() => {});
    }
  });
}
