// SSE answers with the official SDK client against the Worker (sessions in Durable Objects):
// a request whose handling produces notifications is answered as a text/event-stream carrying
// them before the response — list_changed after concerns/update, task status after a task call.
// GET opens the session's stream of list changes (tests/e2e/gateway.test.mjs sees one arrive).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWorker } from './harness.mjs';

const Anything = z.object({}).passthrough();
let worker;
let client;
let transport;
const received = [];

before(async () => {
  worker = await startWorker();
  client = new Client({ name: 'e2e-sse', version: '1' });
  client.fallbackNotificationHandler = async (n) => { received.push(n); };
  transport = new StreamableHTTPClientTransport(new URL(worker.url));
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  await worker?.stop();
});

test('concerns/update answers over SSE with the list_changed notifications it causes', async () => {
  received.length = 0;
  const res = await client.request({ method: 'concerns/update', params: { concerns: { security: 'high' } } }, Anything);
  assert.ok(res, 'the response arrives after the notifications');
  const methods = received.map((n) => n.method);
  assert.ok(methods.includes('notifications/tools/list_changed'), JSON.stringify(methods));
  // The session (in its Durable Object) now filters with the new concern.
  const filtered = (await client.listTools()).tools.length;
  await client.request({ method: 'concerns/update', params: { concerns: { security: null } } }, Anything);
  const all = (await client.listTools()).tools.length;
  assert.ok(filtered < all, `security=high narrows the list (${filtered} < ${all})`);
});

test('a task-augmented tools/call answers over SSE with a task status notification', async () => {
  received.length = 0;
  const res = await client.request({
    method: 'tools/call',
    params: { name: 'long_report', arguments: { seconds: 1 }, task: { ttl: 60_000 } },
  }, Anything);
  const taskId = res.task.taskId;
  const status = received.find((n) => n.method === 'notifications/tasks/status');
  assert.ok(status, JSON.stringify(received));
  assert.equal(status.params.taskId, taskId);
  assert.equal(status.params.status, 'working');
  const result = await client.request({ method: 'tasks/result', params: { taskId } }, Anything);
  assert.match(result.content[0].text, /^report ready/);
});

test('GET opens the session\'s SSE stream; without a session it is 400', async () => {
  const none = await fetch(worker.url, { headers: { Accept: 'text/event-stream' } });
  assert.equal(none.status, 400);
  const put = await fetch(worker.url, { method: 'PUT', headers: { Accept: 'text/event-stream' } });
  assert.equal(put.status, 405);
  assert.match(put.headers.get('allow'), /GET, POST, DELETE/);
  const sessionId = transport.sessionId;
  assert.ok(sessionId);
  const ctrl = new AbortController();
  const r = await fetch(worker.url, {
    headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': '2025-11-25' },
    signal: ctrl.signal,
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const reader = r.body.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  assert.match(first, /^: listening/);
  ctrl.abort();
});
