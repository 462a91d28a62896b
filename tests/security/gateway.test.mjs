// Issue 13, items 1 and 2: the gateway in front of a REAL upstream (npm
// @modelcontextprotocol/server-everything, Streamable HTTP, whose task store is per upstream
// session). Two downstream legacy (2025-11-25) clients through the gateway:
//  1. each has its own upstream session, and a task created by one is invisible to the other
//     ("Unknown task", -32602, nothing forwarded); a stateless request shares nobody's session;
//  2. policy applies to every forwarded use: an unlisted URI matching a policy-hidden template,
//     or matching no template, is "Unknown" without contacting the upstream, and
//     completion/complete on a hidden template's ref/resource is refused likewise.
// "Nothing forwarded" is observed in the upstream's own log (one "Received MCP POST request" line
// per POST it gets).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, openSession, stateless } from '../common/mcp-raw.mjs';
import { sleep, startEverything, startWith } from './helpers.mjs';

const TASK_TOOL = 'simulate-research-query'; // execution.taskSupport "required" in server-everything
const HIDDEN_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';
const HIDDEN_TEMPLATE_NAME = 'Dynamic Text Resource';
const VISIBLE_TEMPLATE_URI = 'demo://resource/dynamic/blob/1';
const HIDDEN_RESOURCE = 'demo://resource/static/document/architecture.md';

let upstream;
let gw;

before(async () => {
  upstream = await startEverything();
  const doc = {
    upstream: { url: upstream.url, refreshSeconds: 3600 },
    policy: {
      rules: [
        { hide: { namePatterns: ['architecture.md'] }, kinds: ['resources'] },
        { hide: { namePatterns: [HIDDEN_TEMPLATE_NAME] }, kinds: ['resourceTemplates'] },
      ],
    },
  };
  gw = await startWith(doc);
}, { timeout: 120_000 });

after(async () => {
  await gw?.stop();
  await upstream?.stop();
});

const result = (r) => {
  assert.equal(r.status, 200, r.text.slice(0, 500));
  assert.ok(r.response?.result, `expected a result: ${r.text.slice(0, 500)}`);
  return r.response.result;
};

/** Asserts "Unknown ..." (-32602, or -32002 for resources) and that the upstream got no POST for it. */
async function refusedLocally(r, postsBefore, what) {
  assert.equal(r.status, 200, r.text.slice(0, 300));
  const err = r.response?.error;
  assert.ok(err, `${what}: must be refused, got ${r.text.slice(0, 300)}`);
  assert.ok([-32602, -32002].includes(err.code), `${what}: ${r.text.slice(0, 300)}`);
  assert.match(err.message, /Unknown/, what);
  await sleep(200); // the upstream logs a POST as it arrives
  assert.equal(upstream.posts(), postsBefore, `${what}: nothing may be forwarded to the upstream`);
}

const taskIds = (r) => result(r).tasks.map((t) => t.taskId);

test('1. gateway isolation: a task created by client A is invisible to client B', { timeout: 90_000 }, async (t) => {
  const a = (await openSession(gw.url)).sessionId;
  const b = (await openSession(gw.url)).sessionId;
  const tools = result(await call(gw.url, a, 'tools/list')).tools;
  const tool = tools.find((x) => x.name === TASK_TOOL);
  assert.equal(tool?.execution?.taskSupport, 'required', 'server-everything lists a task tool');

  const created = result(await call(gw.url, a, 'tools/call', {
    name: TASK_TOOL, arguments: { topic: 'isolation' }, task: { ttl: 60_000 },
  }));
  const taskA = created.task?.taskId;
  assert.ok(taskA, `A's tools/call created a task: ${JSON.stringify(created)}`);
  assert.ok(taskIds(await call(gw.url, a, 'tasks/list')).includes(taskA), 'A lists its own task');
  // B uses the upstream once (a forwarded call may open B's own upstream session).
  result(await call(gw.url, b, 'tools/call', { name: 'echo', arguments: { message: 'b' } }));

  const foreign = (method) => t.test(`B's ${method} of A's task id is "Unknown task" and is not forwarded`, async () => {
    const posts = upstream.posts();
    const r = await call(gw.url, b, method, { taskId: taskA });
    assert.equal(r.response?.error?.code, -32602, `B's ${method} of A's task must be "Unknown task": ${r.text.slice(0, 300)}`);
    assert.match(r.response.error.message, /Unknown task/, `${method}: ${r.text.slice(0, 300)}`);
    await sleep(200);
    assert.equal(upstream.posts(), posts, `B's ${method} of A's task id is not forwarded`);
  });
  // Before the task finishes (about 4 s): B's cancel would cancel it on a shared upstream session.
  await foreign('tasks/get');
  await foreign('tasks/cancel');
  await t.test("B's tasks/cancel did not cancel A's task", async () => {
    const stillA = result(await call(gw.url, a, 'tasks/get', { taskId: taskA }));
    assert.notEqual(stillA.status, 'cancelled', "B's tasks/cancel must not cancel A's task");
  });
  await foreign('tasks/result');
  await t.test("B's tasks/list does not contain A's task", async () => {
    assert.ok(!taskIds(await call(gw.url, b, 'tasks/list')).includes(taskA), "B's tasks/list must not contain A's task");
  });
});

test('1. each downstream session has its own upstream session; stateless requests share none', { timeout: 60_000 }, async () => {
  const a = (await openSession(gw.url)).sessionId;
  const b = (await openSession(gw.url)).sessionId;
  const make = async (sid, topic) => result(await call(gw.url, sid, 'tools/call', {
    name: TASK_TOOL, arguments: { topic }, task: { ttl: 60_000 },
  })).task.taskId;
  const taskA = await make(a, 'a');
  const taskB = await make(b, 'b');
  // server-everything keeps tasks per upstream session: a shared upstream session lists both.
  const listA = taskIds(await call(gw.url, a, 'tasks/list'));
  const listB = taskIds(await call(gw.url, b, 'tasks/list'));
  assert.ok(listA.includes(taskA) && listB.includes(taskB), 'each lists its own task');
  assert.ok(!listA.includes(taskB), `A's upstream session must not hold B's task: ${listA}`);
  assert.ok(!listB.includes(taskA), `B's upstream session must not hold A's task: ${listB}`);

  // A stateless 2026-07-28 tools/call as a task: whatever it answers, its task is nobody's.
  const s = await stateless(gw.url, 'tools/call', { name: TASK_TOOL, arguments: { topic: 's' }, task: { ttl: 60_000 } });
  const taskS = s.response?.result?.task?.taskId;
  if (taskS) {
    for (const [who, sid] of [['A', a], ['B', b]]) {
      assert.ok(!taskIds(await call(gw.url, sid, 'tasks/list')).includes(taskS),
        `a stateless request's task must not appear in ${who}'s session`);
    }
  }
});

test('2. policy on every forwarded use: resources/read of an unlisted URI of a hidden template is Unknown, not forwarded', { timeout: 60_000 }, async (t) => {
  const a = (await openSession(gw.url)).sessionId;
  const listed = result(await call(gw.url, a, 'resources/list')).resources.map((r) => r.uri);
  assert.ok(!listed.includes(HIDDEN_RESOURCE), 'policy hides the resource from the list');
  const templates = result(await call(gw.url, a, 'resources/templates/list')).resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(!templates.includes(HIDDEN_TEMPLATE), 'policy hides the template from the list');

  // Control: an unlisted URI of a visible template is forwarded and answered by the upstream.
  const visible = result(await call(gw.url, a, 'resources/read', { uri: VISIBLE_TEMPLATE_URI }));
  assert.ok(visible.contents?.length > 0, 'a visible template still reads through the gateway');

  const refused = (what, uri) => t.test(what, async () => {
    const posts = upstream.posts();
    await refusedLocally(await call(gw.url, a, 'resources/read', { uri }), posts, what);
  });
  await refused('a listed resource hidden by policy is Unknown (passes today)', HIDDEN_RESOURCE);
  await refused('an unlisted URI that exists upstream through a hidden template is Unknown, not forwarded', 'demo://resource/dynamic/text/1');
  await refused('an unlisted URI matching no upstream template is Unknown, not forwarded', 'demo://resource/static/document/not-listed.md');
});

test('2. completion/complete on a ref/resource of a hidden template is refused, not forwarded', { timeout: 60_000 }, async () => {
  const a = (await openSession(gw.url)).sessionId;
  const posts = upstream.posts();
  const r = await call(gw.url, a, 'completion/complete', {
    ref: { type: 'ref/resource', uri: HIDDEN_TEMPLATE },
    argument: { name: 'resourceId', value: '1' },
  });
  await refusedLocally(r, posts, 'completion of a hidden template');
});
