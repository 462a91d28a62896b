// E2E: code mode (issue 62) with the official SDK client against the native server
// (SIEVE_TARGET=native; the Worker's is worker-code-mode.test.mjs). A view "scripted" in code
// mode over the demo catalog's utilities and email groups: the client lists find_tools,
// describe_tools and run_code, reads TypeScript declarations, and runs a multi-step program;
// then programs written as an attacker would — each ends inside its limits with a clear error,
// a hidden tool is as unknown inside a program as outside, and the server keeps serving. The
// audit file shows each program's call as an ordinary use marked via run_code with the run's id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startNative } from './harness.mjs';
import { statelessRequest } from '../common/mcp-raw.mjs';
import { binOf } from '../security/helpers.mjs';
import { codeCatalog, runCode as run, TASK, assertTask, PARALLEL, assertParallel, assertCallsCrowd, assertHiddenUnknown, assertAttacksContained, memoryUpstreams, assertOtherPrefixUnknown, assertAudited } from '../common/code-cases.mjs';

const native = process.env.SIEVE_TARGET === 'native';
let server;
let dir;

before(async () => {
  if (!native) return;
  dir = mkdtempSync(path.join(tmpdir(), 'sieve-code-'));
  const doc = codeCatalog({ file: 'audit.jsonl' });
  writeFileSync(path.join(dir, 'sieve.json'), JSON.stringify(doc));
  server = await startNative({ extraArgs: ['--catalog', path.join(dir, 'sieve.json')] });
}, { timeout: 120_000 });
after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function connectAt(url) {
  const client = new Client({ name: 'code-mode-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}
const connect = (view = 'scripted') => connectAt(`${server.url}/${view}`);

test('the list is the search tools and run_code; describe_tools answers TypeScript', { skip: !native, timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['find_tools', 'describe_tools', 'run_code']);
    const d = await client.callTool({ name: 'describe_tools', arguments: { names: ['add', 'send_email'] } });
    const ts = d.structuredContent.typescript;
    assert.match(ts, /^declare const tools: \{/);
    assert.match(ts, /\n {2}add\(args: \{\n/);
    assert.match(ts, /send_email\(args: \{/);
    assert.equal(d.content[0].text, ts);
  } finally { await client.close(); }
});

test('a multi-step task over the demo catalog in one run_code', { skip: !native, timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    assertTask(await run(client, TASK));
  } finally { await client.close(); }
});

test('calls made at once (Promise.all) each get their own answer', { skip: !native, timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    assertParallel(await run(client, PARALLEL));
  } finally { await client.close(); }
});

test('calls made at once reach their upstream at once, eight at most, through the gateway', { skip: !native, timeout: 90_000 }, async () => {
  await assertCallsCrowd(async (doc) => {
    writeFileSync(path.join(dir, 'crowded.json'), JSON.stringify(doc));
    const gw = await startNative({ extraArgs: ['--catalog', path.join(dir, 'crowded.json')] });
    return { client: await connectAt(`${gw.url}/coded`), stop: () => gw.stop() };
  });
});

test('a hidden tool is unknown inside a program, by name, alias, prefix or computed name', { skip: !native, timeout: 60_000 }, async () => {
  const client = await connect('narrow');
  try {
    await assertHiddenUnknown(client);
  } finally { await client.close(); }
});

test('attacks end inside their limits with a clear error, and the server keeps serving', { skip: !native, timeout: 120_000 }, async () => {
  const client = await connect();
  try {
    await assertAttacksContained(client, { withinMs: 10_000 });
  } finally { await client.close(); }
});

test('runs at once are bounded per caller; a run is cancelled with its client', { skip: !native, timeout: 60_000 }, async () => {
  const clients = await Promise.all([connect(), connect(), connect()]);
  try {
    // Anonymous callers run as their sessions: each its own bound. Two loops on one session, then a third.
    const [a] = clients;
    const loops = [run(a, 'while (true) {}'), run(a, 'while (true) {}')];
    await new Promise((r) => setTimeout(r, 300));
    const third = await run(a, 'return 1');
    assert.equal(third.isError, true, JSON.stringify(third));
    assert.match(third.structuredContent.error, /too many programs at once: a caller may run 2/);
    const other = await run(clients[1], 'return 2');
    assert.equal(other.structuredContent.result, 2);
    for (const r of await Promise.all(loops)) assert.match(r.structuredContent.error, /time limit/);
    assert.equal((await run(a, 'return 3')).structuredContent.result, 3);
  } finally { await Promise.all(clients.map((c) => c.close())); }
  // A client that goes away mid-run: its program stops at once (not at its 3 s limit), giving back
  // its place. Stateless anonymous callers share one owner, so two runs right after it fit only
  // if it has ended.
  const stateless = (code, signal) => {
    const { message, headers } = statelessRequest('tools/call', { name: 'run_code', arguments: { code } });
    return fetch(`${server.url}/scripted`, {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(message),
    });
  };
  const controller = new AbortController();
  const gone = stateless('while (true) {}', controller.signal).then(() => 'answered', () => 'aborted');
  await new Promise((r) => setTimeout(r, 400));
  controller.abort();
  assert.equal(await gone, 'aborted');
  await new Promise((r) => setTimeout(r, 300));
  const two = await Promise.all([stateless('return 5'), stateless('return 6')].map((p) => p.then((r) => r.json())));
  assert.deepEqual(two.map((m) => m.result?.structuredContent?.result), [5, 6], JSON.stringify(two));
  // A 2026-07-28 request's result says it is complete, as the core's own results do.
  assert.deepEqual(two.map((m) => m.result?.resultType), ['complete', 'complete']);
});

test('100 runs at once of one principal: past code.maxConcurrentRuns refused with a clear error; the server and another principal unaffected', { skip: !native, timeout: 120_000 }, async () => {
  const tokens = { alice: 'token-alice', bob: 'token-bob' };
  const own = await startNative({ extraArgs: ['--catalog', path.join(dir, 'sieve.json')], env: { MCP_SIEVE_TOKENS: JSON.stringify(tokens) } });
  const as = async (token) => {
    const client = new Client({ name: 'code-mode-principal', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${own.url}/scripted`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  };
  // Alice's runs count together whatever session they come from: ten sessions of hers.
  const alices = await Promise.all(Array.from({ length: 10 }, () => as(tokens.alice)));
  const bob = await as(tokens.bob);
  try {
    const busy = 'const t = Date.now(); while (Date.now() - t < 1500) {} return (await tools.add({ a: 1, b: 2 })).sum';
    const runs = Array.from({ length: 100 }, (_, i) => run(alices[i % alices.length], busy));
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    const listed = await alices[0].listTools();
    assert.equal(listed.tools.length, 3);
    const theirs = await run(bob, 'return (await tools.add({ a: 20, b: 22 })).sum');
    assert.equal(theirs.structuredContent.result, 42, JSON.stringify(theirs));
    assert.ok(Date.now() - started < 1500, `the others waited ${Date.now() - started} ms`);
    const done = await Promise.all(runs);
    const ran = done.filter((r) => !r.isError);
    const refused = done.filter((r) => r.isError);
    assert.equal(ran.length, 2, JSON.stringify(done.map((r) => r.structuredContent)));
    for (const r of ran) assert.equal(r.structuredContent.result, 3);
    assert.equal(refused.length, 98);
    for (const r of refused) assert.match(r.structuredContent.error, /too many programs at once: a caller may run 2 \(code.maxConcurrentRuns\)/);
    // Her places are given back.
    assert.equal((await run(alices[0], 'return 7')).structuredContent.result, 7);
  } finally {
    await Promise.all([...alices, bob].map((c) => c.close()));
    await own.stop();
  }
});

test('through the gateway, another upstream\'s prefix is unknown inside a program', { skip: !native, timeout: 90_000 }, async () => {
  const doc = {
    upstreams: memoryUpstreams(binOf('@modelcontextprotocol/server-memory'), dir),
    views: { coded: { mode: 'code', filter: { groups: ['memory'] } } },
  };
  writeFileSync(path.join(dir, 'gateway.json'), JSON.stringify(doc));
  const gw = await startNative({ extraArgs: ['--catalog', path.join(dir, 'gateway.json')] });
  const client = new Client({ name: 'code-mode-gateway', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/coded`)));
    await assertOtherPrefixUnknown(client);
  } finally {
    await client.close();
    await gw.stop();
  }
});

test('each call of a program is audited as the caller\'s, marked via run_code with the run\'s id', { skip: !native, timeout: 60_000 }, async () => {
  const client = await connect();
  let runId;
  try {
    const r = await run(client, 'await tools.echo({ message: "audited" }); return await tools.add({ a: 1, b: 2 })');
    runId = r._meta['dev.mcp-sieve/run'].id;
  } finally { await client.close(); }
  const file = path.join(dir, 'audit.jsonl');
  let records = [];
  for (let i = 0; i < 50 && records.filter((x) => x.run === runId).length < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
    if (existsSync(file)) records = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  }
  assertAudited(records, runId, ['add', 'echo'], /scripted/);
});
