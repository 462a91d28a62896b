// E2E: a stateless 2026-07-28 client's task at a session-era upstream that asks a question during
// the task. @modelcontextprotocol/server-everything (official SDK v1, 2025-11-25 sessions) runs
// `simulate-research-query` with `ambiguous: true` as a task: it says `input_required` on
// tasks/get and sends its elicitation only on that task's tasks/result stream, once. Through the
// gateway under test (the Worker, or the native server with SIEVE_TARGET=native), a client that
// declares the tasks extension (SEP-2663) and elicitation, over the official SDK v2 client's
// transport, sees the question inline in tasks/get (`inputRequests`), answers it with
// tasks/update (`inputResponses`), and then sees the task completed with a result that names
// its answer. Another principal neither sees the task nor answers its question; a key the task
// did not ask is -32602. A client that did not declare elicitation is never asked: the upstream
// hears a refusal and its task goes on with its default.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sdkStateless } from './harness.mjs';
import { TASKS_CAPS } from '../common/mcp-raw.mjs';
import { SNAKE, theQuestion, answeredSnake, untilTask } from '../common/task-asks.mjs';
import { startEverything, startWith, sleep } from '../security/helpers.mjs';

const PRINCIPALS = { alice: 'task-asks-alice-token', bob: 'task-asks-bob-token' };
const TOOL = 'everything_simulate-research-query';

let everything, gateway;

before(async () => {
  everything = await startEverything();
  gateway = await startWith({ upstreams: { everything: { url: everything.url } } },
    { MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) });
}, { timeout: 120_000 });

after(async () => {
  await gateway?.stop();
  await everything?.stop();
});

/** A request of `who`, a client that declares the tasks extension and elicitation. */
const as = (who) => ({
  headers: { Authorization: `Bearer ${PRINCIPALS[who]}` },
  capabilities: { ...TASKS_CAPS, elicitation: {} },
});
const rpc = (who, method, params) => sdkStateless(gateway.url, method, params, as(who));

/** tasks/get of `id` by `who` until `done(task)` holds (at most `ms`): the last task seen. */
const until = (who, id, done, ms = 30_000) => untilTask(async () => {
  const r = await rpc(who, 'tasks/get', { taskId: id });
  assert.equal(r.error, undefined, JSON.stringify(r));
  return r.result;
}, done, { ms });

test('a question a session-era upstream asks during a stateless client\'s task shows in tasks/get and is answered with tasks/update', { timeout: 90_000 }, async () => {
  const created = await rpc('alice', 'tools/call', { name: TOOL, arguments: { topic: 'python', ambiguous: true } });
  assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
  const id = created.result.taskId;

  const waiting = await until('alice', id, (t) => t.status === 'input_required' && t.inputRequests);
  const key = theQuestion(waiting);
  // Polled again, the same question under the same key (the upstream handed it out once).
  const again = await rpc('alice', 'tasks/get', { taskId: id });
  assert.deepEqual(again.result?.inputRequests, waiting.inputRequests, JSON.stringify(again));

  // Another principal neither sees the task nor answers its question.
  const seen = await rpc('bob', 'tasks/get', { taskId: id });
  assert.equal(seen.error?.code, -32602, JSON.stringify(seen));
  assert.match(seen.error.message, /Unknown task/);
  const answer = { [key]: SNAKE };
  const stolen = await rpc('bob', 'tasks/update', { taskId: id, inputResponses: answer });
  assert.equal(stolen.error?.code, -32602, JSON.stringify(stolen));
  // A key the task did not ask is refused, naming it.
  const forged = await rpc('alice', 'tasks/update', { taskId: id, inputResponses: { 'relay-forged-1': answer[key] } });
  assert.equal(forged.error?.code, -32602, JSON.stringify(forged));
  assert.match(forged.error.message, /params\.inputResponses\.relay-forged-1/);
  const still = await rpc('alice', 'tasks/get', { taskId: id });
  assert.equal(still.result?.status, 'input_required', 'nothing answered it yet');

  const ack = await rpc('alice', 'tasks/update', { taskId: id, inputResponses: answer });
  assert.deepEqual(ack.result, { resultType: 'complete' }, JSON.stringify(ack));

  answeredSnake(await until('alice', id, (t) => ['completed', 'failed', 'cancelled'].includes(t.status)));
});

test('a client that did not declare elicitation is not asked: the upstream hears a refusal and the task goes on without the answer', { timeout: 90_000 }, async () => {
  const plain = (method, params) => sdkStateless(gateway.url, method, params,
    { headers: as('alice').headers, capabilities: TASKS_CAPS });
  const created = await plain('tools/call', { name: TOOL, arguments: { topic: 'python', ambiguous: true } });
  assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
  const id = created.result.taskId;
  const deadline = Date.now() + 30_000;
  let task;
  for (;;) {
    task = (await plain('tasks/get', { taskId: id })).result;
    assert.equal(task?.inputRequests, undefined, `never asked: ${JSON.stringify(task)}`);
    if (['completed', 'failed', 'cancelled'].includes(task?.status) || Date.now() > deadline) break;
    await sleep(250);
  }
  assert.equal(task.status, 'completed', JSON.stringify(task).slice(0, 400));
  assert.match(task.result?.content?.[0]?.text ?? '', /elicitation unavailable/,
    `server-everything went on with its default: ${JSON.stringify(task).slice(0, 400)}`);
});
