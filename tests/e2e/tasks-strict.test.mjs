// E2E: a 2025-11-25 session's tasks at an upstream that follows SEP-2663 to the letter (the
// 2026-07-28 tasks extension: no tasks/result, no tasks/list; an official-SDK v2 server,
// tests/fixtures/tasks-upstream.mjs, behind a recording proxy), through the gateway under test
// (the Worker, or the native server with SIEVE_TARGET=native), with the official SDK v1 client.
// Its tasks/result blocks until the task is terminal, as 2025-11-25 says: the gateway asks the
// upstream's tasks/get at the task's pollIntervalMs meanwhile (and the session's other requests
// are answered as it waits), then answers the result, or a failed task's inline `error` as the
// JSON-RPC error; tasks/get of a failed task says why in statusMessage. A task that waits for
// input (`input_required` with the extension's `inputRequests`) has its question asked of the
// session's client during that tasks/result, on its SSE stream, and the answer goes to the task
// with the extension's tasks/update.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWith, recordingProxy, until as eventually } from '../security/helpers.mjs';
import { sdkStateless } from './harness.mjs';
import { stateless, TASKS_CAPS } from '../common/mcp-raw.mjs';
import { startTasksUpstream } from '../fixtures/tasks-upstream.mjs';

const TOKEN = 'strict-tasks-token';
const Anything = z.object({}).passthrough();
const Created = z.object({ task: z.object({ taskId: z.string(), status: z.string() }).passthrough() }).passthrough();

let upstream, proxy, gateway;

before(async () => {
  upstream = await startTasksUpstream();
  proxy = await recordingProxy(upstream.url);
  gateway = await startWith({ upstreams: { strict: { url: proxy.url } } }, { MCP_SIEVE_TOKEN: TOKEN });
}, { timeout: 120_000 });

after(async () => {
  await gateway?.stop();
  await proxy?.stop();
  await upstream?.stop();
});

async function session(capabilities = {}) {
  const c = new Client({ name: 'sieve-strict-tasks', version: '1.0.0' }, { capabilities });
  await c.connect(new StreamableHTTPClientTransport(new URL(gateway.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  }));
  return c;
}

const create = (c, name, seconds) => c.request({
  method: 'tools/call',
  params: { name, arguments: { seconds }, task: { ttl: 60_000 } },
}, Created).then((r) => r.task);

test('tasks/result of a working task at a strict SEP-2663 upstream waits for it, polling tasks/get', { timeout: 60_000 }, async () => {
  const c = await session();
  try {
    const task = await create(c, 'strict_slow_job', 2);
    assert.equal(task.status, 'working');
    const from = proxy.bodies.length;
    const started = Date.now();
    let answered = false;
    const result = c.request({ method: 'tasks/result', params: { taskId: task.taskId } }, Anything, { timeout: 30_000 })
      .finally(() => { answered = true; });
    // The session's other requests are answered while its tasks/result waits.
    await new Promise((r) => setTimeout(r, 300));
    const got = await c.request({ method: 'tasks/get', params: { taskId: task.taskId } }, Anything);
    assert.equal(got.status, 'working', JSON.stringify(got));
    assert.equal(answered, false, 'tasks/result is still waiting');
    const r = await result;
    assert.match(r.content?.[0]?.text ?? '', /slow_job done after 2 s/, JSON.stringify(r));
    assert.ok(Date.now() - started >= 1_500, 'it was answered once the task finished');
    const sent = proxy.bodies.slice(from).filter((m) => m.params?.taskId === task.taskId).map((m) => m.method);
    assert.equal(sent[0], 'tasks/result', `asked first as is: ${sent}`);
    assert.ok(sent.filter((m) => m === 'tasks/get').length >= 3, `then tasks/get until it finished: ${sent}`);
  } finally {
    await c.close().catch(() => {});
  }
});

test('a failed task at a strict SEP-2663 upstream: tasks/result answers its error, tasks/get its statusMessage', { timeout: 60_000 }, async () => {
  const c = await session();
  try {
    const task = await create(c, 'strict_doomed_job', 1);
    await assert.rejects(
      c.request({ method: 'tasks/result', params: { taskId: task.taskId } }, Anything, { timeout: 30_000 }),
      (e) => e.code === -32000 && /doomed_job gave up after 1 s/.test(e.message),
    );
    const got = await c.request({ method: 'tasks/get', params: { taskId: task.taskId } }, Anything);
    assert.equal(got.status, 'failed', JSON.stringify(got));
    assert.equal(got.statusMessage, 'doomed_job gave up after 1 s', JSON.stringify(got));
    assert.equal(got.error, undefined, '2025-11-25 has no inline error');
    assert.equal(got.resultType, undefined);
  } finally {
    await c.close().catch(() => {});
  }
});

test('a task waiting for input at a strict SEP-2663 upstream: its question reaches the session during tasks/result, its answer goes back with tasks/update', { timeout: 60_000 }, async () => {
  const c = await session({ elicitation: {} });
  const questions = [];
  c.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params);
    return { action: 'accept', content: { ok: true } };
  });
  try {
    const task = await create(c, 'strict_asking_job', 0.5);
    const from = proxy.bodies.length;
    const r = await c.request({ method: 'tasks/result', params: { taskId: task.taskId } }, Anything, { timeout: 30_000 });
    assert.match(r.content?.[0]?.text ?? '', /asking_job went on: ok=true/, JSON.stringify(r));
    assert.equal(questions.length, 1);
    assert.equal(questions[0].message, 'Go on with the job?');
    const update = proxy.bodies.slice(from).find((m) => m.method === 'tasks/update');
    assert.deepEqual(update?.params?.inputResponses, { confirm: { action: 'accept', content: { ok: true } } }, JSON.stringify(update));
  } finally {
    await c.close().catch(() => {});
  }
});

test('a stateless 2026-07-28 client gets a strict upstream\'s failed task\'s error inline, and answers a task\'s questions with tasks/update', { timeout: 60_000 }, async () => {
  // A client that declares the tasks extension (SEP-2663: only it gets tasks and uses tasks/*).
  const as = { headers: { Authorization: `Bearer ${TOKEN}` }, capabilities: TASKS_CAPS };
  const create = async (name, seconds) => {
    const r = await sdkStateless(gateway.url, 'tools/call', { name, arguments: { seconds }, task: { ttl: 60_000 } }, as);
    assert.equal(r.result?.resultType, 'task', JSON.stringify(r));
    return r.result.taskId;
  };
  const get = async (id) => (await stateless(gateway.url, 'tasks/get', { taskId: id }, as)).response;
  const until = (id, status) => eventually(`task ${id} became ${status}`, async () => {
    const r = await get(id);
    return r?.result?.status === status && r.result;
  }, 10_000);
  const doomed = await create('strict_doomed_job', 0.3);
  const failed = await until(doomed, 'failed');
  assert.deepEqual(failed.error, { code: -32000, message: 'doomed_job gave up after 0.3 s' }, JSON.stringify(failed));
  const asking = await create('strict_asking_job', 0.3);
  const waiting = await until(asking, 'input_required');
  assert.equal(waiting.inputRequests?.confirm?.method, 'elicitation/create', JSON.stringify(waiting));
  const update = (await stateless(gateway.url, 'tasks/update',
    { taskId: asking, inputResponses: { confirm: { action: 'accept', content: { ok: true } } } }, as)).response;
  assert.equal(update?.error, undefined, JSON.stringify(update));
  const done = await until(asking, 'completed');
  assert.match(done.result?.content?.[0]?.text ?? '', /asking_job went on: ok=true/, JSON.stringify(done));
});
