// E2E: the official MCP TypeScript SDK client against the local Worker (wrangler dev) — or the
// native server with SIEVE_TARGET=native — over every method of the protocol engine beyond
// tools (sdk.test.mjs covers tools, groups and tags): resources, templates, prompts, concerns,
// tasks (tools/call with params.task, tasks/get, tasks/result, tasks/list, tasks/cancel),
// logging/setLevel and completion/complete in the 2025-11-25 era; and the stateless 2026-07-28
// era through the raw client, tests/common/mcp-raw.mjs (the SDK does not speak it yet), with the per-request `_meta` fields and
// the Mcp-Method / Mcp-Name headers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startTarget, rejectsWith } from './harness.mjs';
import { MODERN, stateless } from '../common/mcp-raw.mjs';

const Anything = z.object({}).passthrough();
const Named = z.object({ name: z.string() }).passthrough();
const ToolsPage = z.object({ tools: z.array(Named), nextCursor: z.string().optional() }).passthrough();
const TaskResult = z.object({ task: z.object({ taskId: z.string(), status: z.string() }).passthrough() }).passthrough();

let server;
let client;
let toolsChanged = 0;

before(async () => {
  server = await startTarget();
  client = new Client({ name: 'sieve-e2e-engine', version: '1.0.0' });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { toolsChanged++; });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
}, { timeout: 120_000 });

after(async () => {
  await client?.close().catch(() => {});
  await server?.stop();
});

/** Every page of a stock SDK list call. */
async function all(list, key) {
  const out = [];
  let cursor;
  do {
    const page = await list(cursor ? { cursor } : undefined);
    out.push(...page[key]);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

test('resources/list, resources/templates/list and a filter', async () => {
  const resources = await all((p) => client.listResources(p), 'resources');
  assert.ok(resources.some((r) => r.uri === 'workspace://readme'));
  const templates = await all((p) => client.listResourceTemplates(p), 'resourceTemplates');
  assert.ok(templates.some((t) => t.uriTemplate === 'db://tables/{table}/schema'));

  const Page = z.object({ resources: z.array(z.object({ uri: z.string() }).passthrough()) }).passthrough();
  const filtered = await client.request({ method: 'resources/list', params: { filter: { groups: ['database'] } } }, Page);
  assert.ok(filtered.resources.length > 0 && filtered.resources.length < resources.length, 'the filter narrows');
  for (const r of filtered.resources) assert.ok(r.groups?.includes('database'), `${r.uri} in database`);
});

test('resources/read: a resource and a URI matching a template', async () => {
  const readme = await client.readResource({ uri: 'workspace://readme' });
  assert.equal(readme.contents[0].uri, 'workspace://readme');
  assert.ok(readme.contents[0].text.length > 0);
  const table = await client.readResource({ uri: 'db://tables/orders/schema' });
  assert.equal(table.contents[0].uri, 'db://tables/orders/schema');
  await rejectsWith(client.readResource({ uri: 'nope://nothing' }), -32002, /Unknown resource/);
});

test('prompts/list and prompts/get (required arguments enforced)', async () => {
  const prompts = await all((p) => client.listPrompts(p), 'prompts');
  assert.ok(prompts.some((p) => p.name === 'plan_week'));
  const got = await client.getPrompt({ name: 'plan_week', arguments: { weekStart: '2025-11-24' } });
  assert.match(got.messages[0].content.text, /2025-11-24/);
  await rejectsWith(client.getPrompt({ name: 'plan_week', arguments: {} }), -32602, /weekStart/);
  await rejectsWith(client.getPrompt({ name: 'no_such_prompt' }), -32602, /no_such_prompt/);
});

test('concerns/list, concerns/update narrows tools/list and announces list_changed', async () => {
  const Concerns = z.object({ concerns: z.array(Named) }).passthrough();
  const listed = await client.request({ method: 'concerns/list' }, Concerns);
  assert.deepEqual(listed.concerns.map((c) => c.name).sort(), ['cost', 'security']);

  const names = async () => {
    const out = [];
    let cursor;
    do {
      const p = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ToolsPage);
      out.push(...p.tools.map((t) => t.name));
      cursor = p.nextCursor;
    } while (cursor);
    return out;
  };
  const before = await names();
  assert.ok(before.includes('run_query'), 'run_query (security: high) visible before');
  const changedBefore = toolsChanged;
  const updated = await client.request({ method: 'concerns/update', params: { concerns: { security: 'low' } } }, Anything);
  assert.equal(updated.configuration?.security, 'low');
  const after = await names();
  assert.ok(!after.includes('run_query'), 'run_query hidden once security is low');
  assert.ok(after.length < before.length);
  for (let i = 0; i < 50 && toolsChanged === changedBefore; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(toolsChanged > changedBefore, 'notifications/tools/list_changed received');

  await rejectsWith(client.request({ method: 'concerns/update', params: { concerns: { security: 'ultra' } } }, Anything),
    -32602, /ultra/);
  await client.request({ method: 'concerns/update', params: { concerns: { security: null } } }, Anything);
  assert.deepEqual((await names()).sort(), before.sort(), 'null removes the configuration');
});

test('tasks: tools/call with params.task, tasks/get, tasks/list, tasks/result, tasks/cancel', async () => {
  const call = (seconds) => client.request({
    method: 'tools/call',
    params: { name: 'long_report', arguments: { seconds }, task: { ttl: 60_000 } },
  }, TaskResult);
  const { task } = await call(1);
  assert.equal(task.status, 'working');
  const got = await client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, Anything);
  assert.equal(got.taskId, task.taskId);

  const Listed = z.object({ tasks: z.array(z.object({ taskId: z.string(), status: z.string() }).passthrough()) }).passthrough();
  const working = await client.request({ method: 'tasks/list', params: { status: ['working'] } }, Listed);
  assert.ok(working.tasks.some((t) => t.taskId === task.taskId), 'tasks/list status filter');

  const result = await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, Anything, { timeout: 60_000 });
  assert.match(result.content[0].text, /report ready: ran 1 s/);
  const done = await client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, Anything);
  assert.equal(done.status, 'completed');

  const long = (await call(30)).task;
  const cancelled = await client.request({ method: 'tasks/cancel', params: { taskId: long.taskId } }, Anything);
  assert.equal(cancelled.status, 'cancelled');
  const asc = await client.request({ method: 'tasks/list', params: { orderBy: 'createdAt', order: 'asc' } }, Listed);
  const ids = asc.tasks.map((t) => t.taskId);
  assert.ok(ids.indexOf(task.taskId) < ids.indexOf(long.taskId), 'ordered by createdAt asc');
  await rejectsWith(client.request({ method: 'tasks/get', params: { taskId: 'nope' } }, Anything), -32602, /nope/);
});

test('logging/setLevel and completion/complete', async () => {
  assert.deepEqual(await client.setLoggingLevel('warning'), {});
  await rejectsWith(client.request({ method: 'logging/setLevel', params: { level: 'loud' } }, Anything), -32602, /params\.level/);
  const done = await client.complete({ ref: { type: 'ref/prompt', name: 'plan_week' }, argument: { name: 'weekStart', value: '' } });
  assert.ok(Array.isArray(done.completion.values));
});

/** A 2026-07-28 request to the server under test (see statelessRequest). */
const modern = (method, params = {}, { headers = {} } = {}) =>
  stateless(server.url, method, params, { clientInfo: { name: 'raw', version: '1' }, headers });

test('2026-07-28: server/discover and the stateless list methods', async () => {
  const d = await modern('server/discover');
  assert.equal(d.status, 200);
  assert.ok(d.response.result.supportedVersions.includes(MODERN));
  assert.ok(d.response.result.capabilities.extensions['dev.mcp-sieve/filtering']);
  assert.equal(d.headers.get('mcp-session-id'), null, 'no session');

  const tools = await modern('tools/list', { filter: { groups: ['calendar'] } });
  assert.equal(tools.response.result.resultType, 'complete');
  assert.ok(tools.response.result.tools.length > 0);
  for (const t of tools.response.result.tools) assert.ok(t.groups.includes('calendar'));
  const narrowed = await modern('tools/list', { filter: { groups: ['database'] }, concerns: { security: 'low' } });
  assert.ok(!narrowed.response.result.tools.some((t) => t.name === 'run_query'), 'per-request concerns');

  for (const [method, key] of [['resources/list', 'resources'], ['resources/templates/list', 'resourceTemplates'], ['prompts/list', 'prompts']]) {
    const r = await modern(method);
    assert.equal(r.status, 200, method);
    assert.ok(r.response.result[key].length > 0, `${method} lists ${key}`);
  }
  const concerns = await modern('concerns/list');
  assert.ok(concerns.response.result.concerns.length === 2);
});

test('2026-07-28: tools/call, prompts/get, resources/read with Mcp-Name; header mismatches', async () => {
  const echo = await modern('tools/call', { name: 'echo', arguments: { message: 'stateless' } });
  assert.equal(echo.response.result.content[0].text, 'stateless');
  const prompt = await modern('prompts/get', { name: 'plan_week', arguments: { weekStart: '2025-12-01' } });
  assert.match(prompt.response.result.messages[0].content.text, /2025-12-01/);
  const read = await modern('resources/read', { uri: 'workspace://readme' });
  assert.equal(read.response.result.contents[0].uri, 'workspace://readme');

  const wrongName = await modern('tools/call', { name: 'echo', arguments: { message: 'x' } }, { headers: { 'Mcp-Name': 'add' } });
  assert.equal(wrongName.response.error?.code, -32020, 'Mcp-Name must match params.name');
  const wrongMethod = await modern('tools/list', {}, { headers: { 'Mcp-Method': 'prompts/list' } });
  assert.equal(wrongMethod.response.error?.code, -32020, 'Mcp-Method must match the body');
  const ping = await modern('ping');
  assert.equal(ping.status, 404, 'ping is not part of 2026-07-28');
});
