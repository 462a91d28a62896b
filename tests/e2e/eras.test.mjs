// E2E: both protocol eras upstream at once. The gateway under test (the Worker, or the native
// server with SIEVE_TARGET=native) fronts a chained native mcp-sieve (`target/debug/mcp-sieve
// serve`, which offers 2026-07-28) and @modelcontextprotocol/server-everything (official SDK v1:
// 2025-11-25 sessions only), each behind a recording proxy, so the test sees what reaches each
// upstream: the chained one gets stateless 2026-07-28 requests (server/discover, then lists and
// calls with the `_meta` envelope and mirrored headers; no initialize, no session), the other a
// session opened with initialize after its refusal of server/discover. The official SDK v2
// client lists and calls through both; the operator's status names each upstream's version.
// Tasks a 2025-11-25 session creates at the chained mcp-sieve (the 2026-07-28 tasks extension,
// which has no tasks/list) are in that session's merged tasks/list (asked of it by tasks/get),
// filtered and ordered with the rest, and in no other session's (official SDK v1 client); the
// session sees them in 2025-11-25's shapes (`{task}`, `ttl`, no `resultType`). A stateless
// 2026-07-28 client's tasks at either upstream are its principal's (tasks/get, tasks/result,
// tasks/cancel through the gateway, official SDK v2 client pinned to 2026-07-28), in the
// extension's shapes, and unknown to another principal. They are capped per principal, and with
// every principal's and session's in the server's options.maxTasks.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startNative, toolNames, sdkStateless } from './harness.mjs';
import { stateless, TASKS_CAPS, initialize, call, post } from '../common/mcp-raw.mjs';
import { startEverything, startTogether, startWith, recordingProxy } from '../security/helpers.mjs';

const TOKEN = 'eras-downstream-token';
const PRINCIPALS = { alice: 'eras-alice-token', bob: 'eras-bob-token' };
/** What a request as `who` carries: its bearer token, and client capabilities declaring the tasks extension. */
const as = (who) => ({ headers: { Authorization: `Bearer ${PRINCIPALS[who]}` }, capabilities: TASKS_CAPS });
/** An SDK v2 client for `who` pinned to 2026-07-28 that declares the tasks extension (connect it with as(who)). */
const tasksClient = (who) => new Client({ name: `sieve-eras-${who}`, version: '1.0.0' },
  { capabilities: TASKS_CAPS, versionNegotiation: { mode: { pin: '2026-07-28' } } });

let everything, chained, modernProxy, legacyProxy, gateway;

before(async () => {
  [everything, chained] = await startTogether([startEverything(), startNative()]);
  [modernProxy, legacyProxy] = await Promise.all([recordingProxy(chained.url), recordingProxy(everything.url)]);
  gateway = await startWith(
    { upstreams: { chain: { url: modernProxy.url, title: 'Chained mcp-sieve' }, everything: { url: legacyProxy.url } } },
    { MCP_SIEVE_TOKEN: TOKEN, MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) },
  );
}, { timeout: 120_000 });

after(async () => {
  await gateway?.stop();
  await Promise.all([modernProxy?.stop(), legacyProxy?.stop()]);
  await Promise.all([chained?.stop(), everything?.stop()]);
});

async function connect(mode) {
  const client = new Client({ name: 'sieve-eras-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  }));
  return client;
}

const text = (r) => r.content.map((c) => c.text ?? '').join('\n');

for (const mode of ['legacy', 'auto']) {
  test(`SDK v2 client (${mode}) lists and calls through a modern and a legacy upstream`, { timeout: 60_000 }, async () => {
    const client = await connect(mode);
    try {
      const names = await toolNames(client);
      for (const n of ['chain_echo', 'chain_add', 'everything_echo']) assert.ok(names.includes(n), `${n}: ${names.join(', ')}`);
      const a = await client.callTool({ name: 'chain_echo', arguments: { message: `modern ${mode}` } });
      assert.match(text(a), new RegExp(`modern ${mode}`));
      const b = await client.callTool({ name: 'everything_echo', arguments: { message: `legacy ${mode}` } });
      assert.match(text(b), new RegExp(`legacy ${mode}`));
      const prompts = await client.listPrompts();
      assert.ok(prompts.prompts.some((p) => p.name === 'chain_plan_week'), prompts.prompts.map((p) => p.name).join(', '));
    } finally {
      await client.close();
    }
  });
}

test('the chained mcp-sieve received only stateless 2026-07-28 requests', () => {
  const { bodies, seen, statuses } = modernProxy;
  assert.ok(bodies.length >= 3, `requests reached it: ${bodies.length}`);
  const methods = bodies.map((b) => b.method);
  assert.equal(methods[0], 'server/discover');
  assert.ok(!methods.includes('initialize') && !methods.includes('notifications/initialized'), methods.join(', '));
  assert.ok(methods.includes('tools/list') && methods.includes('tools/call'), methods.join(', '));
  bodies.forEach((b, i) => {
    const h = seen[i];
    assert.equal(h['mcp-session-id'], undefined, `${b.method}: no session`);
    assert.equal(h['mcp-protocol-version'], '2026-07-28', b.method);
    assert.equal(h['mcp-method'], b.method);
    const meta = b.params?._meta ?? {};
    assert.equal(meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28', b.method);
    assert.equal(meta['io.modelcontextprotocol/clientInfo']?.name, 'mcp-sieve-gateway', b.method);
    assert.equal(typeof meta['io.modelcontextprotocol/clientCapabilities'], 'object', b.method);
    if (b.method === 'tools/call') assert.equal(h['mcp-name'], b.params.name, 'Mcp-Name mirrors the name the upstream knows');
  });
  assert.ok(statuses.every((s) => s === 200), `every answer is 200: ${statuses.join(', ')}`);
  // Its own output shows no session opened (it logs refusals and failures, none here).
  assert.doesNotMatch(chained.output(), /refused|failed/i, chained.output());
});

test('server-everything got a 2025-11-25 session after refusing server/discover', () => {
  const { bodies, seen } = legacyProxy;
  const methods = bodies.map((b) => b.method);
  assert.equal(methods[0], 'server/discover');
  const init = bodies.find((b) => b.method === 'initialize');
  assert.equal(init?.params.protocolVersion, '2025-11-25');
  assert.ok(everything.sessions().length >= 1, 'it opened sessions');
  bodies.forEach((b, i) => {
    if (['tools/list', 'tools/call'].includes(b.method)) {
      assert.ok(seen[i]['mcp-session-id'], `${b.method} in a session`);
      assert.equal(seen[i]['mcp-protocol-version'], '2025-11-25');
      assert.equal(b.params?._meta?.['io.modelcontextprotocol/protocolVersion'], undefined, 'no 2026 envelope reaches it');
    }
  });
});

test('the status names each upstream\'s protocol version', async () => {
  const r = await fetch(`${gateway.base}/mcp-sieve/upstreams`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(r.status, 200);
  const { upstreams } = await r.json();
  const by = Object.fromEntries(upstreams.map((u) => [u.name, u]));
  assert.equal(by.chain.state, 'up');
  assert.equal(by.chain.protocolVersion, '2026-07-28');
  assert.equal(by.chain.stateless, true);
  assert.equal(by.everything.protocolVersion, '2025-11-25');
  assert.equal(by.everything.stateless, false);
  const refused = await fetch(`${gateway.base}/mcp-sieve/upstreams`);
  assert.equal(refused.status, 401, 'behind the same gate as /mcp');
});

test('tasks a session creates at the 2026-07-28 upstream are in its merged tasks/list, and only in its own', { timeout: 60_000 }, async () => {
  const Anything = z.object({}).passthrough();
  const Task = z.object({ taskId: z.string(), status: z.string() }).passthrough();
  const Created = z.object({ task: Task }).passthrough();
  const Listed = z.object({ tasks: z.array(Task), nextCursor: z.string().optional() }).passthrough();
  const open = async () => {
    const c = new ClientV1({ name: 'sieve-eras-tasks', version: '1.0.0' });
    await c.connect(new TransportV1(new URL(gateway.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
    return c;
  };
  const [a, b] = [await open(), await open()];
  try {
    const create = (client, seconds) => client.request({
      method: 'tools/call',
      params: { name: 'chain_long_report', arguments: { seconds }, task: { ttl: 60_000 } },
    }, Created);
    const from = modernProxy.bodies.length;
    const quick = (await create(a, 1)).task;
    const slow = (await create(a, 30)).task;
    const other = (await create(b, 30)).task;
    assert.equal(slow.status, 'working');
    assert.ok(modernProxy.bodies.slice(from).every((m) => !m.params?._meta || m.params._meta['io.modelcontextprotocol/protocolVersion'] === '2026-07-28'),
      'the tasks were created with stateless 2026-07-28 calls');
    const ids = async (client, params = {}) => (await client.request({ method: 'tasks/list', params }, Listed)).tasks.map((t) => t.taskId);
    assert.deepEqual((await ids(a)).sort(), [quick.taskId, slow.taskId].sort(), 'a lists its own two tasks');
    assert.deepEqual(await ids(b), [other.taskId], 'b lists only its own');
    // The merged list is filtered and ordered like any other.
    const result = await a.request({ method: 'tasks/result', params: { taskId: quick.taskId } }, Anything, { timeout: 30_000 });
    assert.match(result.content[0].text, /report ready: ran 1 s/);
    assert.deepEqual(await ids(a, { status: ['working'] }), [slow.taskId]);
    assert.deepEqual(await ids(a, { orderBy: 'createdAt', order: 'desc' }), [slow.taskId, quick.taskId]);
    const cancelled = await a.request({ method: 'tasks/cancel', params: { taskId: slow.taskId } }, Anything);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(await ids(a, { status: ['cancelled'] }), [slow.taskId]);
    const got = modernProxy.bodies.slice(from).filter((m) => m.method === 'tasks/get').map((m) => m.params.taskId);
    assert.ok(got.includes(quick.taskId) && got.includes(other.taskId), 'each task was asked of the upstream by tasks/get');
    assert.ok(!modernProxy.bodies.slice(from).some((m) => m.method === 'tasks/list'), 'the extension has no tasks/list: none was sent');
    await b.request({ method: 'tasks/cancel', params: { taskId: other.taskId } }, Anything);
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
  }
});

const Anything = z.object({}).passthrough();

test('a 2025-11-25 session sees its tasks at the 2026-07-28 upstream in its own era\'s shapes', { timeout: 60_000 }, async () => {
  const c = new ClientV1({ name: 'sieve-eras-shapes', version: '1.0.0' });
  await c.connect(new TransportV1(new URL(gateway.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
  try {
    const from = modernProxy.bodies.length;
    const created = await c.request({
      method: 'tools/call',
      params: { name: 'chain_long_report', arguments: { seconds: 30 }, task: { ttl: 60_000 } },
    }, Anything);
    assert.deepEqual(Object.keys(created), ['task'], `CreateTaskResult of 2025-11-25: ${JSON.stringify(created)}`);
    const { task } = created;
    assert.equal(task.status, 'working');
    // The upstream's TTL (SEP-2663: the 2026-07-28 upstream decides; params.task.ttl is gone).
    assert.equal(typeof task.ttl, 'number', '2025-11-25 names it ttl');
    assert.equal(task.ttlMs, undefined);
    const call = modernProxy.bodies.slice(from).find((m) => m.method === 'tools/call');
    assert.ok(call.params._meta['io.modelcontextprotocol/clientCapabilities'].extensions?.['io.modelcontextprotocol/tasks'],
      'the upstream was told, in 2026-07-28 terms, that the gateway takes a task');
    const got = await c.request({ method: 'tasks/get', params: { taskId: task.taskId } }, Anything);
    assert.equal(got.resultType, undefined, JSON.stringify(got));
    assert.equal(got.taskId, task.taskId);
    assert.equal(got.ttl, task.ttl);
    const cancelled = await c.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, Anything);
    assert.equal(cancelled.resultType, undefined, JSON.stringify(cancelled));
    assert.equal(cancelled.status, 'cancelled');
  } finally {
    await c.close().catch(() => {});
  }
});

test('a stateless 2026-07-28 client\'s tasks at either upstream are its principal\'s, and no other\'s', { timeout: 90_000 }, async () => {
  // Clients that declare the tasks extension (SEP-2663: only they get tasks and use tasks/*).
  const v2 = async (who) => {
    const client = tasksClient(who);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: as(who) }));
    return client;
  };
  // The creating call answers resultType "task", which the SDK v2 client refuses: sent as is over
  // its transport.
  const create = async (who, name, args) => {
    const r = await sdkStateless(gateway.url, 'tools/call', { name, arguments: args, task: { ttl: 120_000 } }, as(who));
    const created = r.result;
    assert.equal(created?.resultType, 'task', JSON.stringify(r));
    assert.equal(typeof created.taskId, 'string', 'the task\'s fields inline (the extension\'s CreateTaskResult)');
    assert.equal(typeof created.ttlMs, 'number', 'its TTL under the extension\'s name (the upstream may shorten or lengthen it)');
    assert.deepEqual(['task', 'ttl'].filter((k) => k in created), [], `SEP-2663's shape only: ${JSON.stringify(created)}`);
    return created.taskId;
  };
  const [alice, bob] = [await v2('alice'), await v2('bob')];
  try {
    const names = await toolNames(alice);
    const research = names.find((n) => n === 'everything_simulate-research-query');
    const quick = await create('alice', 'chain_long_report', { seconds: 1 });
    const slow = await create('alice', 'chain_long_report', { seconds: 30 });
    const legacy = research ? await create('alice', research, { topic: 'tasks across eras' }) : null;
    for (const id of [quick, slow, legacy].filter(Boolean)) {
      const got = await alice.request({ method: 'tasks/get', params: { taskId: id } }, Anything);
      assert.equal(got.taskId, id);
      assert.ok('ttlMs' in got, `the extension's names: ${JSON.stringify(got)}`);
      await assert.rejects(bob.request({ method: 'tasks/get', params: { taskId: id } }, Anything),
        (e) => /Unknown task/.test(e.message), `bob does not see alice's task ${id}`);
      await assert.rejects(bob.request({ method: 'tasks/cancel', params: { taskId: id } }, Anything), /Unknown task/);
    }
    // SEP-2663 (2026-07-28): "tasks/result is removed; clients calling it MUST receive -32601".
    const removed = await stateless(gateway.url, 'tasks/result', { taskId: quick }, as('alice'));
    assert.equal(removed.response?.error?.code, -32601, removed.text.slice(0, 300));
    let finished = await alice.request({ method: 'tasks/get', params: { taskId: quick } }, Anything);
    for (let i = 0; i < 20 && finished.status === 'working'; i++) {
      await new Promise((r) => setTimeout(r, 250));
      finished = await alice.request({ method: 'tasks/get', params: { taskId: quick } }, Anything);
    }
    assert.equal(finished.status, 'completed');
    assert.match(finished.result?.content?.[0]?.text ?? '', /report ready: ran 1 s/,
      `tasks/get of a finished task at the 2026-07-28 upstream carries its result: ${JSON.stringify(finished)}`);
    await alice.request({ method: 'tasks/cancel', params: { taskId: slow } }, Anything);
    assert.equal((await alice.request({ method: 'tasks/get', params: { taskId: slow } }, Anything)).status, 'cancelled');
    if (legacy) {
      // server-everything speaks 2025-11-25: the gateway asks its tasks/result once tasks/get says
      // the task finished, and alice's tasks/get carries the result inline (SEP-2663).
      let got = await alice.request({ method: 'tasks/get', params: { taskId: legacy } }, Anything);
      for (let i = 0; i < 40 && got.status === 'working'; i++) {
        await new Promise((r) => setTimeout(r, 500));
        got = await alice.request({ method: 'tasks/get', params: { taskId: legacy } }, Anything);
      }
      assert.equal(got.status, 'completed', JSON.stringify(got));
      assert.match(got.result?.content?.[0]?.text ?? '', /Research Report: tasks across eras/,
        `tasks/get of a finished task at the 2025-11-25 upstream carries its result: ${JSON.stringify(got).slice(0, 300)}`);
    }
    assert.ok(research, `server-everything lists its task tool through the gateway: ${names.join(', ')}`);
  } finally {
    await alice.close().catch(() => {});
    await bob.close().catch(() => {});
  }
});

// SEP-2663 through the gateway: a 2026-07-28 client that did not declare the tasks extension is
// never answered with a task. Its params.task is not passed on (the chained mcp-sieve runs the
// call as any other), a tool that only runs as a task (server-everything's research query, a
// 2025-11-25 upstream's taskSupport "required") is -32021, and so are its tasks/get and
// tasks/cancel — nothing of it reaches an upstream.
test('a stateless client that does not declare the tasks extension gets no task through the gateway', { timeout: 60_000 }, async () => {
  const headers = { Authorization: `Bearer ${PRINCIPALS.alice}` };
  const client = new Client({ name: 'sieve-eras-no-tasks', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: { headers } }));
  try {
    const from = modernProxy.bodies.length;
    const r = await sdkStateless(gateway.url, 'tools/call', { name: 'chain_long_report', arguments: { seconds: 1 }, task: { ttl: 60_000 } }, { headers });
    assert.notEqual(r.result?.resultType, 'task', JSON.stringify(r));
    assert.equal(r.result?.taskId, undefined, JSON.stringify(r));
    assert.match(r.result?.content?.[0]?.text ?? '', /report ready: ran 1 s/, JSON.stringify(r));
    const call = modernProxy.bodies.slice(from).find((m) => m.method === 'tools/call');
    assert.equal(call?.params?.task, undefined, `no task was asked upstream: ${JSON.stringify(call)}`);
    assert.equal(call.params._meta['io.modelcontextprotocol/clientCapabilities'].extensions?.['io.modelcontextprotocol/tasks'], undefined,
      'nor the extension declared to it');
    const names = await toolNames(client);
    const research = names.find((n) => n === 'everything_simulate-research-query');
    assert.ok(research, names.join(', '));
    const posts = legacyProxy.bodies.length;
    const required = await stateless(gateway.url, 'tools/call', { name: research, arguments: { topic: 'x' }, task: {} }, { headers });
    assert.equal(required.status, 400, required.text.slice(0, 300));
    assert.equal(required.response?.error?.code, -32021, required.text.slice(0, 300));
    assert.deepEqual(required.response.error.data, { requiredCapabilities: TASKS_CAPS });
    for (const method of ['tasks/get', 'tasks/cancel']) {
      await assert.rejects(client.request({ method, params: { taskId: 'any' } }, Anything), (e) => e.code === -32021, method);
    }
    const reached = legacyProxy.bodies.slice(posts).filter((m) => m.method === 'tools/call' || m.method?.startsWith('tasks/'));
    assert.deepEqual(reached, [], 'none of these reached server-everything');
  } finally {
    await client.close().catch(() => {});
  }
});

// A principal's tasks through the gateway are capped as this server's own 2026-07-28 tasks are
// (options.maxTasksPerPrincipal; the same -32602 naming the option): at the cap the oldest task
// the upstream said finished (here: cancelled) makes room, a working one never.
test('a principal\'s tasks through the gateway are capped by options.maxTasksPerPrincipal; a cancelled one makes room', { timeout: 90_000 }, async () => {
  const capped = await startWith({ upstreams: { chain: { url: modernProxy.url } }, options: { maxTasksPerPrincipal: 1 } },
    { MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) });
  const create = (who) => sdkStateless(capped.url, 'tools/call',
    { name: 'chain_long_report', arguments: { seconds: 30 }, task: { ttl: 60_000 } }, as(who));
  const client = tasksClient('alice');
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(capped.url), { requestInit: as('alice') }));
    const first = (await create('alice')).result?.taskId;
    assert.equal(typeof first, 'string');
    const refused = await create('alice');
    assert.equal(refused.error?.code, -32602, JSON.stringify(refused));
    assert.deepEqual(refused.error.data, { limit: 1, option: 'maxTasksPerPrincipal' });
    assert.match(refused.error.message, /options\.maxTasksPerPrincipal\b.*cancel one/, refused.error.message);
    assert.equal(typeof (await create('bob')).result?.taskId, 'string', 'bob\'s budget is his own');
    await client.request({ method: 'tasks/cancel', params: { taskId: first } }, Anything);
    const third = await create('alice');
    assert.equal(typeof third.result?.taskId, 'string', `the cancelled task made room: ${JSON.stringify(third)}`);
    await assert.rejects(client.request({ method: 'tasks/get', params: { taskId: first } }, Anything), /Unknown task/,
      'its record was evicted');
  } finally {
    await client.close().catch(() => {});
    await capped.stop();
  }
});

// The server-wide options.maxTasks counts the gateway's tasks at its upstreams, every principal's
// and every 2025-11-25 session's together (as this server's own 2026-07-28 tasks, same -32602):
// at the cap the next is refused before it reaches the upstream, until a task the upstream said
// finished (here: cancelled) makes room — its record evicted, as a finished task of its own is.
test('the server-wide options.maxTasks counts every principal\'s and session\'s gateway tasks; a cancelled one makes room', { timeout: 90_000 }, async () => {
  const capped = await startWith({ upstreams: { chain: { url: modernProxy.url } }, options: { maxTasks: 2 } },
    { MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) });
  const create = (who) => sdkStateless(capped.url, 'tools/call',
    { name: 'chain_long_report', arguments: { seconds: 30 } }, as(who));
  const refused = (r) => {
    assert.equal(r?.error?.code, -32602, JSON.stringify(r));
    assert.deepEqual(r.error.data, { limit: 2, option: 'maxTasks' });
    assert.match(r.error.message, /already holds 2 tasks.*\(options\.maxTasks\)/, r.error.message);
  };
  const calls = () => modernProxy.bodies.filter((m) => m.method === 'tools/call').length;
  const alice = tasksClient('alice');
  try {
    await alice.connect(new StreamableHTTPClientTransport(new URL(capped.url), { requestInit: as('alice') }));
    const first = (await create('alice')).result?.taskId;
    assert.equal(typeof first, 'string');
    assert.equal(typeof (await create('bob')).result?.taskId, 'string');
    const sent = calls();
    refused(await create('alice'));
    refused(await create('bob'));
    const session = await initialize(capped.url, { headers: as('bob').headers });
    const inSession = await call(capped.url, session.sessionId, 'tools/call',
      { name: 'chain_long_report', arguments: { seconds: 30 }, task: { ttl: 60_000 } }, { headers: as('bob').headers });
    refused(inSession.response);
    assert.equal(calls(), sent, 'no refused call reached the upstream');
    await alice.request({ method: 'tasks/cancel', params: { taskId: first } }, Anything);
    const third = await create('bob');
    assert.equal(typeof third.result?.taskId, 'string', `alice's cancelled task made room for bob's: ${JSON.stringify(third)}`);
    await assert.rejects(alice.request({ method: 'tasks/get', params: { taskId: first } }, Anything), /Unknown task/,
      'its record was evicted');
    refused(await create('alice'));
  } finally {
    await alice.close().catch(() => {});
    await capped.stop();
  }
});

// A 2025-11-25 session that ends (its client's DELETE) makes room in options.maxTasks with the
// gateway tasks it kept, still working upstream: nobody can reach them any more (their records
// go with the session, its upstream session is closed), so they no longer count as working.
test('a session that ends makes room in options.maxTasks with the gateway tasks it kept', { timeout: 90_000 }, async () => {
  const capped = await startWith({ upstreams: { chain: { url: modernProxy.url } }, options: { maxTasks: 1 } },
    { MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) });
  const create = () => sdkStateless(capped.url, 'tools/call',
    { name: 'chain_long_report', arguments: { seconds: 30 } }, as('alice'));
  try {
    const { sessionId, headers } = await initialize(capped.url, { headers: as('bob').headers });
    const made = await call(capped.url, sessionId, 'tools/call',
      { name: 'chain_long_report', arguments: { seconds: 30 }, task: { ttl: 60_000 } }, { headers: as('bob').headers });
    assert.equal(typeof made.response.result?.task?.taskId, 'string', JSON.stringify(made.response));
    const full = await create();
    assert.equal(full.error?.code, -32602, JSON.stringify(full));
    assert.deepEqual(full.error.data, { limit: 1, option: 'maxTasks' });
    const ended = await post(capped.url, undefined, { method: 'DELETE', headers });
    assert.equal(ended.status, 204, ended.body);
    const after = await create();
    assert.equal(typeof after.result?.taskId, 'string', `the ended session's task made room: ${JSON.stringify(after)}`);
  } finally {
    await capped.stop();
  }
});
