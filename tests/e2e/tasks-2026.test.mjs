// E2E: tasks in the 2026-07-28 era (the `io.modelcontextprotocol/tasks` extension) against the
// Worker — each task in a Durable Object named after its id — or the native server with
// SIEVE_TARGET=native. No session: a stateless tools/call answers `resultType: "task"`, and any
// later stateless request naming the task id reaches it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stateless } from '../common/mcp-raw.mjs';
import { startTarget } from './harness.mjs';

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
