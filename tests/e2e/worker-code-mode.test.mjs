// E2E: code mode (issue 62) in the Worker, with the official SDK client against `wrangler dev`
// (skipped with SIEVE_TARGET=native: tests/e2e/code-mode.test.mjs is the native server's). Each
// program runs in a Dynamic Worker loaded through the Worker Loader binding (worker/code/run.mjs),
// QuickJS in wasm inside it (worker/code/sandbox.mjs). The same view "scripted" in code mode over
// the demo catalog's utilities and email groups as natively: the client lists find_tools,
// describe_tools and run_code and runs the native test's multi-step task — over a session (its
// Durable Object) and stateless (2026-07-28, the front Worker); a hidden tool is as unknown
// inside a program as outside; programs written as an attacker would end inside their limits
// (an infinite loop by its wall time, too many calls, ...) with a clear error, and the Worker
// keeps serving; runs at once are bounded per caller (two runs held inside an upstream's call,
// a Worker of its own in front of it); each call of a program is audited as the
// caller's, marked via run_code with the run's id.
import http from 'node:http';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWith, until } from '../security/helpers.mjs';
import { stateless } from '../common/mcp-raw.mjs';
import { LIMITS, codeCatalog, runCode as run, TASK, assertTask, PARALLEL, assertParallel, assertCallsCrowd, assertHiddenUnknown, assertAttacksContained, assertAudited } from '../common/code-cases.mjs';

const native = process.env.SIEVE_TARGET === 'native';
const skip = native && 'the native server: tests/e2e/code-mode.test.mjs';
let server;

before(async () => {
  if (native) return;
  const doc = codeCatalog({});
  server = await startWith(doc, {}, { logLevel: 'log' });
}, { timeout: 120_000 });
after(async () => { await server?.stop(); });

async function connectAt(url) {
  const client = new Client({ name: 'worker-code-mode-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}
const connect = (view = 'scripted') => connectAt(`${server.url}/${view}`);

test('the list is the search tools and run_code; describe_tools answers TypeScript', { skip, timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['find_tools', 'describe_tools', 'run_code']);
    const d = await client.callTool({ name: 'describe_tools', arguments: { names: ['add', 'send_email'] } });
    assert.match(d.structuredContent.typescript, /^declare const tools: \{/);
    assert.match(d.structuredContent.typescript, /send_email\(args: \{/);
  } finally { await client.close(); }
});

test('a multi-step task in one run_code, over a session and stateless', { skip, timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    assertTask(await run(client, TASK));
  } finally { await client.close(); }
  const answer = await stateless(`${server.url}/scripted`, 'tools/call', { name: 'run_code', arguments: { code: TASK } });
  const [message] = answer.messages;
  assertTask(message.result);
});

test('calls made at once (Promise.all) each get their own answer', { skip, timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    assertParallel(await run(client, PARALLEL));
  } finally { await client.close(); }
});

test('calls made at once reach their upstream at once, eight at most, through the gateway', { skip, timeout: 120_000 }, async () => {
  await assertCallsCrowd(async (doc) => {
    const gw = await startWith(doc, {}, { logLevel: 'log' });
    return { client: await connectAt(`${gw.url}/coded`), stop: () => gw.stop() };
  });
});

test('a hidden tool is unknown inside a program, by name, alias, prefix or computed name', { skip, timeout: 60_000 }, async () => {
  const client = await connect('narrow');
  try {
    await assertHiddenUnknown(client);
  } finally { await client.close(); }
});

test('attacks end inside their limits with a clear error, and the Worker keeps serving', { skip, timeout: 120_000 }, async () => {
  const client = await connect();
  try {
    // The engine checks its deadline between bytecodes, not inside one built-in call: the
    // memory bomb (100,000-element fills) meets its memory limit after about 8 s of QuickJS in
    // wasm on a loaded machine, not at 3 s.
    await assertAttacksContained(client, { withinMs: 20_000, worker: true });
  } finally { await client.close(); }
});

test('runs at once are bounded per caller', { skip, timeout: 120_000 }, async () => {
  // Two runs of one session wait in a call the upstream holds, so both surely hold their places
  // (a program of the demo tools alone would keep other requests out of local workerd's one
  // thread until it ends: tests/e2e/worker-code-mode-limits.test.mjs): a third is refused,
  // another session's run is not, and the places come back when the two end. A Worker of its own,
  // whose runs may last 20 s, so that a loaded machine cannot end them before the release.
  const upstream = await holdingUpstream();
  const gateway = await startWith({ upstreams: { held: { url: upstream.url } }, code: { ...LIMITS, timeoutSeconds: 20 } });
  const connectHeld = async () => {
    const client = new Client({ name: 'worker-code-mode-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}?mode=code`)));
    return client;
  };
  let a;
  let b;
  let held = [];
  try {
    [a, b] = await Promise.all([connectHeld(), connectHeld()]);
    held = [run(a, 'return await tools.held_hold({})'), run(a, 'return await tools.held_hold({})')];
    await until('both runs wait in the held call', () => upstream.waiting() === 2);
    const third = await run(a, 'return 3');
    assert.equal(third.isError, true, JSON.stringify(third));
    assert.match(third.structuredContent.error, /too many programs at once: a caller may run 2 \(code\.maxConcurrentRuns\)/);
    const other = await run(b, 'return 2');
    assert.equal(other.structuredContent.result, 2, JSON.stringify(other));
    upstream.release();
    for (const r of await Promise.all(held)) assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal((await run(a, 'return 3')).structuredContent.result, 3);
  } finally {
    upstream.release();
    await Promise.allSettled(held);
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all([gateway.stop(), upstream.stop()]);
  }
});

/**
 * An MCP upstream on loopback (plain JSON answers, no session) whose one tool, `hold`, answers
 * only when `release()` is called; `waiting()` counts its calls not yet answered.
 */
async function holdingUpstream() {
  const waiting = [];
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const msg = JSON.parse(raw || '{}');
    if (msg.id === undefined) return res.writeHead(202).end();
    const answer = (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    switch (msg.method) {
      case 'initialize':
        return answer({ protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'holding', version: '1.0.0' } });
      case 'tools/list':
        return answer({ tools: [{ name: 'hold', description: 'Answers when the test lets it.', inputSchema: { type: 'object' } }] });
      case 'tools/call':
        return waiting.push(() => answer({ content: [{ type: 'text', text: 'released' }] }));
      default:
        return answer({});
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    waiting: () => waiting.length,
    release: () => { for (const answer of waiting.splice(0)) answer(); },
    stop: () => { server.closeAllConnections(); return new Promise((resolve) => server.close(resolve)); },
  };
}

test("each call of a program is audited as the caller's, marked via run_code with the run's id", { skip, timeout: 60_000 }, async () => {
  const client = await connect();
  let runId;
  try {
    const r = await run(client, 'await tools.echo({ message: "audited" }); return await tools.add({ a: 1, b: 2 })');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    runId = r._meta['dev.mcp-sieve/run'].id;
  } finally { await client.close(); }
  let records = [];
  for (let i = 0; i < 50 && records.filter((x) => x.run === runId).length < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
    records = server.output().split('\n').map((l) => l.slice(l.indexOf('{"time"'))).filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l));
  }
  assertAudited(records, runId, ['add', 'echo'], /scripted/);
});

test("a client cannot mark its own calls as a program's", { skip, timeout: 60_000 }, async () => {
  const audit = () => server.output().split('\n').map((l) => l.slice(l.indexOf('{"time"'))).filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l));
  const direct = () => audit().filter((x) => x.item === 'echo' && !x.via).length;
  const before = direct();
  const forged = { 'x-mcp-sieve-run': 'forged-run', MCP_SIEVE_RUN: 'forged-run' };
  const client = new Client({ name: 'worker-code-mode-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/scripted`), { requestInit: { headers: forged } }));
  try {
    await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'not a program' } } });
  } finally { await client.close(); }
  const echo = { name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'not a program' } } };
  await stateless(`${server.url}/scripted`, 'tools/call', echo, { headers: forged });
  for (let i = 0; i < 30 && direct() < before + 2; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(direct(), before + 2, 'both calls are audited as direct calls');
  assert.ok(!audit().some((x) => x.run === 'forged-run'), JSON.stringify(audit().filter((x) => x.run === 'forged-run')));
});
