// Sessions and tasks in Durable Objects, against the real Worker under `wrangler dev` with
// persisted local state: they survive a restart, task records expire through the object's
// alarm, and stateless 2026-07-28 requests never create a Durable Object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startWorker } from './harness.mjs';
import { sleep } from '../security/helpers.mjs';
import { call, initialize, post, sessionHeaders, stateless } from '../common/mcp-raw.mjs';

const tempDir = () => mkdtempSync(path.join(tmpdir(), 'mcp-sieve-do-'));

/** SQLite files of SessionObject instances under a persistence directory. */
function objectFiles(dir) {
  const objects = path.join(dir, 'v3', 'do', 'mcp-sieve-SessionObject');
  return existsSync(objects) ? readdirSync(objects).filter((f) => f.endsWith('.sqlite') && f !== 'metadata.sqlite') : [];
}

test('sessions, concerns and tasks survive a restart of wrangler dev (--persist-to)', async () => {
  const dir = tempDir();
  let worker = await startWorker({ persistTo: dir });
  let sessionId, taskId;
  try {
    ({ sessionId } = await initialize(worker.url, { concerns: { security: 'high' } }));
    const upd = await call(worker.url, sessionId, 'concerns/update', { concerns: { cost: 'minimal' } });
    assert.equal(upd.status, 200, upd.body);
    assert.ok(upd.response.result, upd.body);
    const created = await call(worker.url, sessionId, 'tools/call', {
      name: 'long_report', arguments: { seconds: 4 }, task: { ttl: 300_000 },
    });
    assert.equal(created.status, 200, created.body);
    taskId = created.response.result.task.taskId;
    assert.equal(created.response.result.task.status, 'working');
    // SSE: the status notification travels with the answer when the client accepts a stream.
    assert.match(created.headers.get('content-type'), /text\/event-stream/);
    assert.ok(created.notifications.some((n) => n.method === 'notifications/tasks/status' && n.params.taskId === taskId),
      created.body);
  } finally {
    await worker.stop();
  }
  worker = await startWorker({ persistTo: dir });
  try {
    const concerns = await call(worker.url, sessionId, 'concerns/list');
    assert.equal(concerns.status, 200, concerns.body);
    assert.deepEqual(concerns.response.result.configuration, { security: 'high', cost: 'minimal' });
    const got = await call(worker.url, sessionId, 'tasks/get', { taskId });
    assert.equal(got.status, 200, got.body);
    assert.equal(got.response.result.taskId, taskId);
    assert.ok(['working', 'completed'].includes(got.response.result.status), got.body);
    const result = await call(worker.url, sessionId, 'tasks/result', { taskId });
    assert.equal(result.status, 200, result.body);
    assert.match(result.response.result.content[0].text, /^report ready: ran 4 s/);
    const done = await call(worker.url, sessionId, 'tasks/get', { taskId });
    assert.equal(done.response.result.status, 'completed');
    // The filtered view still applies the persisted concerns.
    const tools = await call(worker.url, sessionId, 'tools/list');
    assert.equal(tools.status, 200);
    // Ending the session deletes it.
    const del = await post(worker.url, undefined, { method: 'DELETE', headers: sessionHeaders(sessionId) });
    assert.equal(del.status, 204);
    const after = await call(worker.url, sessionId, 'ping');
    assert.equal(after.status, 404);
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('task records expire by their TTL through the Durable Object alarm', async () => {
  const dir = tempDir();
  const worker = await startWorker({ persistTo: dir, logLevel: 'log' });
  try {
    const { sessionId } = await initialize(worker.url);
    const created = await call(worker.url, sessionId, 'tools/call', {
      name: 'long_report', arguments: { seconds: 1 }, task: { ttl: 2000 },
    });
    const taskId = created.response.result.task.taskId;
    const listed = await call(worker.url, sessionId, 'tasks/list');
    assert.deepEqual(listed.response.result.tasks.map((t) => t.taskId), [taskId]);
    // No request touches the session meanwhile: only the alarm can remove the record.
    const deadline = Date.now() + 20_000;
    while (!/alarm removed 1 expired task\(s\)/.test(worker.output()) && Date.now() < deadline) await sleep(250);
    assert.match(worker.output(), /alarm removed 1 expired task\(s\)/, `no alarm ran; output:\n${worker.output()}`);
    assert.ok(!worker.output().includes(taskId), 'logs carry no task ids');
    const gone = await call(worker.url, sessionId, 'tasks/get', { taskId });
    assert.equal(gone.response.error.code, -32602, gone.body);
    const empty = await call(worker.url, sessionId, 'tasks/list');
    assert.deepEqual(empty.response.result.tasks, []);
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('stateless 2026-07-28 requests work and touch no Durable Object', async () => {
  const dir = tempDir();
  const worker = await startWorker({ persistTo: dir });
  try {
    const discover = await stateless(worker.url, 'server/discover');
    assert.equal(discover.status, 200, discover.body);
    assert.ok(discover.response.result.capabilities, discover.body);
    const tools = await stateless(worker.url, 'tools/list', { filter: { groups: ['calendar'] } });
    assert.equal(tools.status, 200, tools.body);
    assert.ok(tools.response.result.tools.length > 0);
    assert.equal(tools.headers.get('mcp-session-id'), null);
    const add = await stateless(worker.url, 'tools/call', { name: 'add', arguments: { a: 2, b: 40 } });
    assert.equal(add.response.result.content[0].text, '42', add.body);
    assert.deepEqual(objectFiles(dir), [], 'no Durable Object was created by stateless requests');
    // Positive control: a legacy session creates exactly one.
    await initialize(worker.url);
    const deadline = Date.now() + 5000;
    while (objectFiles(dir).length === 0 && Date.now() < deadline) await sleep(100);
    assert.equal(objectFiles(dir).length, 1);
    // An unknown session id is a 404 (its object stores no session).
    const unknown = await post(worker.url, { jsonrpc: '2.0', id: 9, method: 'tools/list' },
      { headers: sessionHeaders('00000000-0000-4000-8000-000000000000') });
    assert.equal(unknown.status, 404, unknown.body);
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
