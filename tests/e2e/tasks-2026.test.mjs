// E2E: tasks in the 2026-07-28 era (the `io.modelcontextprotocol/tasks` extension) against the
// Worker — each task in a Durable Object named after its id — or the native server with
// SIEVE_TARGET=native. No session: a stateless tools/call answers `resultType: "task"`, and any
// later stateless request naming the task id reaches it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stateless } from '../common/mcp-raw.mjs';
import { readFileSync } from 'node:fs';
import { startTarget } from './harness.mjs';
import { startWith } from '../security/helpers.mjs';

let server;
before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

const result = (r) => {
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.ok(r.response?.result, r.text.slice(0, 300));
  return r.response.result;
};

test('a stateless task call answers resultType "task"; tasks/get, tasks/result, tasks/cancel find it by id', { timeout: 60_000 }, async () => {
  const discover = result(await stateless(server.url, 'server/discover'));
  assert.ok(discover.capabilities.extensions['io.modelcontextprotocol/tasks'], 'discover advertises the tasks extension');
  const created = result(await stateless(server.url, 'tools/call', { name: 'long_report', arguments: { seconds: 1 }, task: { ttl: 60_000 } }));
  assert.equal(created.resultType, 'task');
  const id = created.task.taskId;
  assert.equal(created.task.status, 'working');
  assert.equal(result(await stateless(server.url, 'tasks/get', { taskId: id })).taskId, id);
  const done = result(await stateless(server.url, 'tasks/result', { taskId: id }));
  assert.match(done.content[0].text, /^report ready/, 'tasks/result waits for the task and yields its result');
  assert.equal(result(await stateless(server.url, 'tasks/get', { taskId: id })).status, 'completed');
  // Another task, cancelled while working.
  const other = result(await stateless(server.url, 'tools/call', { name: 'long_report', arguments: { seconds: 30 }, task: {} })).task.taskId;
  assert.notEqual(other, id);
  assert.equal(result(await stateless(server.url, 'tasks/cancel', { taskId: other })).status, 'cancelled');
  // Unknown ids are "Unknown task"; tasks/list is not part of this era.
  const unknown = await stateless(server.url, 'tasks/get', { taskId: `${id}-forged` });
  assert.equal(unknown.response?.error?.code, -32602);
  assert.match(unknown.response.error.message, /Unknown task/);
  const list = await stateless(server.url, 'tasks/list', {});
  assert.equal(list.response?.error?.code, -32601);
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
    const as = (name) => ({ clientInfo: { name, version: '1' } });
    const first = result(await stateless(capped.url, 'tools/call', work, as('one'))).task.taskId;
    result(await stateless(capped.url, 'tools/call', work, as('two')));
    // A third anonymous client: the same budget.
    refused(await stateless(capped.url, 'tools/call', work, as('three')), 'maxTasksPerPrincipal');
    assert.equal(result(await stateless(capped.url, 'tasks/cancel', { taskId: first })).status, 'cancelled');
    const third = result(await stateless(capped.url, 'tools/call', work, as('three'))).task.taskId;
    assert.equal(result(await stateless(capped.url, 'tasks/get', { taskId: third })).status, 'working');
    // The cancelled task was evicted to make room.
    const gone = await stateless(capped.url, 'tasks/get', { taskId: first });
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
  const by = (who) => ({ headers: { Authorization: `Bearer ${tokens[who]}` } });
  try {
    const a1 = result(await stateless(capped.url, 'tools/call', work, by('alice'))).task.taskId;
    result(await stateless(capped.url, 'tools/call', work, by('alice')));
    refused(await stateless(capped.url, 'tools/call', work, by('alice')), 'maxTasksPerPrincipal');
    // Bob's budget is his own, but the server holds at most three.
    result(await stateless(capped.url, 'tools/call', work, by('bob')));
    refused(await stateless(capped.url, 'tools/call', work, by('bob')), 'maxTasks');
    // Bob cannot cancel (or see) alice's task; alice can, and then bob's next task evicts it.
    assert.equal((await stateless(capped.url, 'tasks/cancel', { taskId: a1 }, by('bob'))).response?.error?.code, -32602);
    refused(await stateless(capped.url, 'tools/call', work, by('bob')), 'maxTasks');
    assert.equal(result(await stateless(capped.url, 'tasks/cancel', { taskId: a1 }, by('alice'))).status, 'cancelled');
    const b2 = result(await stateless(capped.url, 'tools/call', work, by('bob'))).task.taskId;
    assert.equal(result(await stateless(capped.url, 'tasks/get', { taskId: b2 }, by('bob'))).status, 'working');
    assert.equal((await stateless(capped.url, 'tasks/get', { taskId: a1 }, by('alice'))).response?.error?.code, -32602,
      'the cancelled task was evicted');
  } finally {
    await capped.stop();
  }
});
