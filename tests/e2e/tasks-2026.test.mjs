// E2E: tasks in the 2026-07-28 era (the `io.modelcontextprotocol/tasks` extension) against the
// Worker — each task in a Durable Object named after its id — or the native server with
// SIEVE_TARGET=native. No session: a stateless tools/call answers `resultType: "task"` with the
// task inline (SEP-2663), and any later stateless request naming the task id reaches it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stateless, TASKS_CAPS, initialize, call, post } from '../common/mcp-raw.mjs';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTarget, sdkStateless } from './harness.mjs';
import { startWith, sleep } from '../security/helpers.mjs';

let server;
before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

const result = (r) => {
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.ok(r.response?.result, r.text.slice(0, 300));
  return r.response.result;
};

const Anything = z.object({}).passthrough();

// SEP-2663 (modelcontextprotocol/ext-tasks): the creating call answers resultType "task" with the
// task's fields inline (ttlMs, pollIntervalMs), and tasks/get of a finished task carries its
// result. The official SDK v2 client (pinned to 2026-07-28) asks tasks/get and tasks/cancel; it
// refuses resultType "task", so the creating call goes over its transport as is.
test('a stateless task call answers SEP-2663\'s CreateTaskResult; tasks/get carries the finished task\'s result', { timeout: 60_000 }, async () => {
  const discover = result(await stateless(server.url, 'server/discover'));
  assert.ok(discover.capabilities.extensions['io.modelcontextprotocol/tasks'], 'discover advertises the tasks extension');
  // A client that declares the tasks extension in its capabilities (SEP-2663: only such a client
  // may be answered with a task, or use tasks/*).
  const client = new Client({ name: 'sieve-tasks-2026', version: '1.0.0' },
    { capabilities: TASKS_CAPS, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  try {
    // SEP-2663: the server alone decides which calls run as tasks (long_report supports them);
    // the client sends no params.task (the extension removed it).
    const createdMsg = await sdkStateless(server.url, 'tools/call', { name: 'long_report', arguments: { seconds: 1 } },
      { capabilities: TASKS_CAPS });
    const created = createdMsg.result;
    assert.equal(created?.resultType, 'task', JSON.stringify(createdMsg));
    assert.equal(typeof created.taskId, 'string', `the task's fields inline: ${JSON.stringify(created)}`);
    assert.equal(created.status, 'working');
    assert.equal(created.ttlMs, 86_400_000, 'the extension names the TTL ttlMs (the server\'s: a day)');
    assert.equal(typeof created.pollIntervalMs, 'number');
    assert.deepEqual(['task', 'ttl', 'pollInterval'].filter((k) => k in created), [], JSON.stringify(created));
    const id = created.taskId;
    const working = await client.request({ method: 'tasks/get', params: { taskId: id } }, Anything);
    assert.equal(working.taskId, id);
    assert.equal(working.ttlMs, 86_400_000, JSON.stringify(working));
    assert.equal(working.result, undefined, 'a working task has no result yet');
    let got = working;
    for (let i = 0; i < 20 && got.status === 'working'; i++) {
      await sleep(created.pollIntervalMs);
      got = await client.request({ method: 'tasks/get', params: { taskId: id } }, Anything);
    }
    assert.equal(got.status, 'completed', JSON.stringify(got));
    assert.match(got.result?.content?.[0]?.text ?? '', /^report ready/, `tasks/get carries the result: ${JSON.stringify(got)}`);
    // SEP-2663 (2026-07-28): "tasks/result is removed; clients calling it MUST receive -32601".
    const removed = await stateless(server.url, 'tasks/result', { taskId: id }, { capabilities: TASKS_CAPS });
    assert.equal(removed.response?.error?.code, -32601, removed.text.slice(0, 300));
    // params.task is ignored: on a tool without task support the call runs (not -32601).
    const plain = await sdkStateless(server.url, 'tools/call', { name: 'echo', arguments: { message: 'x' }, task: { ttl: 1000 } },
      { capabilities: TASKS_CAPS });
    assert.equal(plain.error, undefined, JSON.stringify(plain));
    assert.notEqual(plain.result?.resultType, 'task', JSON.stringify(plain));
    // Another task, cancelled while working: acknowledged, then tasks/get says cancelled, no result.
    const other = (await sdkStateless(server.url, 'tools/call', { name: 'long_report', arguments: { seconds: 30 }, task: {} },
      { capabilities: TASKS_CAPS })).result.taskId;
    assert.notEqual(other, id);
    await client.request({ method: 'tasks/cancel', params: { taskId: other } }, Anything);
    const cancelled = await client.request({ method: 'tasks/get', params: { taskId: other } }, Anything);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.result, undefined);
    // Unknown ids are "Unknown task"; tasks/list is not part of this era.
    const unknown = await stateless(server.url, 'tasks/get', { taskId: `${id}-forged` }, { capabilities: TASKS_CAPS });
    assert.equal(unknown.response?.error?.code, -32602);
    assert.match(unknown.response.error.message, /Unknown task/);
    const list = await stateless(server.url, 'tasks/list', {});
    assert.equal(list.response?.error?.code, -32601);
  } finally {
    await client.close().catch(() => {});
  }
});

// SEP-2663: "A server MUST NOT return CreateTaskResult to a client that did not include the
// extension capability on its request"; such a client's tasks/get, tasks/update and tasks/cancel
// are -32021 (Missing Required Client Capability; HTTP 400), naming the extension it lacks.
test('a client that does not declare the tasks extension never gets a task: its params.task is ignored and tasks/* are -32021', { timeout: 60_000 }, async () => {
  const client = new Client({ name: 'sieve-no-tasks', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  try {
    // params.task without the declaration, over the SDK v2 transport: the tool's own result.
    const r = await sdkStateless(server.url, 'tools/call', { name: 'long_report', arguments: { seconds: 1 }, task: { ttl: 60_000 } });
    assert.notEqual(r.result?.resultType, 'task', JSON.stringify(r));
    assert.equal(r.result?.taskId, undefined, JSON.stringify(r));
    assert.match(r.result?.content?.[0]?.text ?? '', /^report ready/, JSON.stringify(r));
    // The SDK v2 client's own callTool of the task tool: a CallToolResult.
    const called = await client.callTool({ name: 'long_report', arguments: { seconds: 1 } });
    assert.match(called.content[0].text, /^report ready/);
    // A declaring client's task: the non-declaring client may not ask about it.
    const id = (await sdkStateless(server.url, 'tools/call', { name: 'long_report', arguments: { seconds: 30 }, task: {} },
      { capabilities: TASKS_CAPS })).result.taskId;
    assert.equal(typeof id, 'string');
    await assert.rejects(client.request({ method: 'tasks/get', params: { taskId: id } }, Anything),
      (e) => e.code === -32021 && /Missing required client capability/.test(e.message), 'the SDK v2 client sees -32021');
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const raw = await stateless(server.url, method, { taskId: id });
      assert.equal(raw.status, 400, `${method}: ${raw.text.slice(0, 300)}`);
      assert.equal(raw.response?.error?.code, -32021, raw.text.slice(0, 300));
      assert.deepEqual(raw.response.error.data, { requiredCapabilities: TASKS_CAPS });
    }
    // The task was not cancelled by the refused request.
    assert.equal(result(await stateless(server.url, 'tasks/get', { taskId: id }, { capabilities: TASKS_CAPS })).status, 'working');
  } finally {
    await client.close().catch(() => {});
  }
});

// Issue 23, item 6: stateless tasks are bounded. A cap per principal (callers without a token
// share one) and one for the server; a finished (or cancelled) task is evicted to make room, a
// working one never: past a cap with nothing finished, the next task is refused (-32602 naming
// the option and what to do).
const work = { name: 'long_report', arguments: { seconds: 30 }, task: { ttl: 60_000 } };
const refused = (r, option) => {
  const err = r.response?.error;
  assert.ok(err, `expected a refusal naming ${option}; got HTTP ${r.status} ${r.text.slice(0, 300)}`);
  assert.equal(err.code, -32602, r.text.slice(0, 300));
  assert.match(err.message, new RegExp(`options\\.${option}\\b`), err.message);
  assert.match(err.message, /wait|cancel|try again/, 'the message says what to do');
};

test('callers without a token share one task budget; a cancelled task makes room, a working one never', { timeout: 120_000 }, async () => {
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.options = { ...doc.options, maxTasksPerPrincipal: 2, maxTasks: 3 };
  const capped = await startWith(doc);
  try {
    const as = (name) => ({ clientInfo: { name, version: '1' }, capabilities: TASKS_CAPS });
    const first = result(await stateless(capped.url, 'tools/call', work, as('one'))).taskId;
    result(await stateless(capped.url, 'tools/call', work, as('two')));
    // A third anonymous client: the same budget.
    refused(await stateless(capped.url, 'tools/call', work, as('three')), 'maxTasksPerPrincipal');
    assert.equal(result(await stateless(capped.url, 'tasks/cancel', { taskId: first }, as('one'))).status, 'cancelled');
    const third = result(await stateless(capped.url, 'tools/call', work, as('three'))).taskId;
    assert.equal(result(await stateless(capped.url, 'tasks/get', { taskId: third }, as('three'))).status, 'working');
    // The cancelled task was evicted to make room.
    const gone = await stateless(capped.url, 'tasks/get', { taskId: first }, as('one'));
    assert.equal(gone.response?.error?.code, -32602, gone.text.slice(0, 300));
  } finally {
    await capped.stop();
  }
});

test('each principal has its own task budget and the server has one for all; finished tasks are evicted first', { timeout: 120_000 }, async () => {
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.options = { ...doc.options, maxTasksPerPrincipal: 2, maxTasks: 3 };
  const tokens = { alice: 'token-alice', bob: 'token-bob' };
  const capped = await startWith(doc, { MCP_SIEVE_TOKENS: JSON.stringify(tokens) });
  const by = (who) => ({ headers: { Authorization: `Bearer ${tokens[who]}` }, capabilities: TASKS_CAPS });
  try {
    const a1 = result(await stateless(capped.url, 'tools/call', work, by('alice'))).taskId;
    result(await stateless(capped.url, 'tools/call', work, by('alice')));
    refused(await stateless(capped.url, 'tools/call', work, by('alice')), 'maxTasksPerPrincipal');
    // Bob's budget is his own, but the server holds at most three.
    result(await stateless(capped.url, 'tools/call', work, by('bob')));
    refused(await stateless(capped.url, 'tools/call', work, by('bob')), 'maxTasks');
    // Bob cannot cancel (or see) alice's task; alice can, and then bob's next task evicts it.
    assert.equal((await stateless(capped.url, 'tasks/cancel', { taskId: a1 }, by('bob'))).response?.error?.code, -32602);
    refused(await stateless(capped.url, 'tools/call', work, by('bob')), 'maxTasks');
    assert.equal(result(await stateless(capped.url, 'tasks/cancel', { taskId: a1 }, by('alice'))).status, 'cancelled');
    const b2 = result(await stateless(capped.url, 'tools/call', work, by('bob'))).taskId;
    assert.equal(result(await stateless(capped.url, 'tasks/get', { taskId: b2 }, by('bob'))).status, 'working');
    assert.equal((await stateless(capped.url, 'tasks/get', { taskId: a1 }, by('alice'))).response?.error?.code, -32602,
      'the cancelled task was evicted');
  } finally {
    await capped.stop();
  }
});

// A 2025-11-25 session's own tasks count in options.maxTasks with the 2026-07-28 ones (the Worker
// asks its TaskLedger object before the session's object runs the call): at the cap the next is
// refused, whoever asks; a cancelled one makes room (and leaves its session); a session that
// ends releases its working tasks.
test('a session\'s tasks count in options.maxTasks: refused at the cap; a cancelled task or an ended session makes room', { timeout: 120_000 }, async () => {
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.options = { ...doc.options, maxTasks: 2 };
  const capped = await startWith(doc);
  const made = (r) => {
    const id = r.response?.result?.task?.taskId;
    assert.equal(typeof id, 'string', r.text.slice(0, 300));
    return id;
  };
  try {
    const [a, b] = [await initialize(capped.url), await initialize(capped.url)];
    const first = made(await call(capped.url, a.sessionId, 'tools/call', work));
    made(await call(capped.url, a.sessionId, 'tools/call', work));
    refused(await call(capped.url, b.sessionId, 'tools/call', work), 'maxTasks');
    refused(await stateless(capped.url, 'tools/call', work, { capabilities: TASKS_CAPS }), 'maxTasks');
    const cancelled = await call(capped.url, a.sessionId, 'tasks/cancel', { taskId: first });
    assert.equal(cancelled.response?.result?.status, 'cancelled', cancelled.text.slice(0, 300));
    made(await call(capped.url, b.sessionId, 'tools/call', work));
    const gone = await call(capped.url, a.sessionId, 'tasks/get', { taskId: first });
    assert.ok(gone.response?.error, `the cancelled task was evicted to make room: ${gone.text.slice(0, 300)}`);
    refused(await call(capped.url, b.sessionId, 'tools/call', work), 'maxTasks');
    const ended = await post(capped.url, undefined, { method: 'DELETE', headers: a.headers });
    assert.equal(ended.status, 204, ended.text);
    made(await call(capped.url, b.sessionId, 'tools/call', work));
  } finally {
    await capped.stop();
  }
});
