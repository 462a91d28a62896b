// E2E: a question a session-era upstream asks DURING the stateless call that creates its task.
// A small official-SDK v1 upstream (tests/fixtures/asking-task-upstream.mjs, 2025-11-25 sessions)
// whose `vetted_job`, called as a task, elicits a go-ahead on the call's own stream before it
// creates the task. Through the gateway under test (the Worker, where the call runs in the
// principal's holder object `tasks:@<principal>`, or the native server with SIEVE_TARGET=native),
// a 2026-07-28 client that declares the tasks extension (SEP-2663) and elicitation, over the
// official SDK v2 client's transport, gets `input_required` with the question under a key of the
// gateway's, calls again with `inputResponses` under that key and gets `resultType: "task"`; its
// tasks/get sees the task complete with a result naming the answer. Another principal's answer
// under the key, and a key no question has, are -32602 and reach nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sdkStateless } from './harness.mjs';
import { TASKS_CAPS } from '../common/mcp-raw.mjs';
import { startWith, sleep } from '../security/helpers.mjs';
import { startAskingTaskUpstream, goAhead } from '../fixtures/asking-task-upstream.mjs';

const PRINCIPALS = { alice: 'create-asks-alice-token', bob: 'create-asks-bob-token' };

let upstream, gateway;

before(async () => {
  upstream = await startAskingTaskUpstream();
  // Room for one task in all: the call that brings the answer goes on with the call that was
  // admitted, it is no second task.
  gateway = await startWith({ upstream: { url: upstream.url }, options: { maxTasks: 1 } },
    { MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) });
}, { timeout: 120_000 });

after(async () => {
  await gateway?.stop();
  await upstream?.stop();
});

/** `method` by `who`, a 2026-07-28 client that declares the tasks extension and elicitation. */
const rpc = (who, method, params) => sdkStateless(gateway.url, method, params, {
  headers: { Authorization: `Bearer ${PRINCIPALS[who]}` },
  capabilities: { ...TASKS_CAPS, elicitation: {} },
});

test('a question asked during the call that creates a task is relayed, and the call that answers it gets the task', { timeout: 90_000 }, async () => {
  const call = { name: 'vetted_job', arguments: { job: 'deploy' } };
  const first = await rpc('alice', 'tools/call', call);
  assert.equal(first.error, undefined, JSON.stringify(first));
  assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
  const keys = Object.keys(first.result.inputRequests ?? {});
  assert.equal(keys.length, 1, JSON.stringify(first));
  const [key] = keys;
  assert.deepEqual(first.result.inputRequests[key], { method: 'elicitation/create', params: goAhead('deploy') });
  const answer = { action: 'accept', content: { approver: 'alice' } };

  // Another principal cannot answer it, nor can a key no question has; neither reaches the upstream.
  const stolen = await rpc('bob', 'tools/call', { ...call, inputResponses: { [key]: { action: 'accept', content: { approver: 'bob' } } } });
  assert.equal(stolen.error?.code, -32602, JSON.stringify(stolen));
  assert.match(stolen.error.message, /inputResponses/);
  const forged = await rpc('alice', 'tools/call', { ...call, inputResponses: { 'relay-forged-1': answer } });
  assert.equal(forged.error?.code, -32602, JSON.stringify(forged));
  assert.match(forged.error.message, /params\.inputResponses\.relay-forged-1/);
  assert.deepEqual(upstream.asked, [], 'the upstream still waits for its answer');

  const created = await rpc('alice', 'tools/call', { ...call, inputResponses: { [key]: answer } });
  assert.equal(created.error, undefined, JSON.stringify(created));
  assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
  const id = created.result.taskId;
  assert.equal(typeof id, 'string', JSON.stringify(created));
  assert.deepEqual(upstream.asked, [answer]);

  const deadline = Date.now() + 30_000;
  let task;
  for (;;) {
    const r = await rpc('alice', 'tasks/get', { taskId: id });
    assert.equal(r.error, undefined, JSON.stringify(r));
    task = r.result;
    if (['completed', 'failed', 'cancelled'].includes(task.status) || Date.now() > deadline) break;
    await sleep(200);
  }
  assert.equal(task.status, 'completed', JSON.stringify(task));
  assert.equal(task.result?.content?.[0]?.text, 'job deploy approved by alice', JSON.stringify(task));
  // The task is alice's alone.
  const seen = await rpc('bob', 'tasks/get', { taskId: id });
  assert.equal(seen.error?.code, -32602, JSON.stringify(seen));
  assert.match(seen.error.message, /Unknown task/);
});
