// E2E: code mode over stdio (issue 62), `mcp-sieve stdio --code` launched as a desktop client
// launches it, by the official SDK's StdioClientTransport (v1, 2025-11-25; v2 pinned to
// 2026-07-28): the list, TypeScript declarations, a multi-step program whose calls are the
// client's own (audited via run_code with the run's id), a hidden tool unknown inside a program
// (by name, alias, computed name, and another upstream's prefix through the gateway), the
// attacks of item 5 ending inside their limits, 100 runs at once of the one client refused past
// code.maxConcurrentRuns while the server keeps answering, a run cancelled with its request, and
// mid-call questions: a 2025-11-25 client is asked (as for a direct call); a 2026-07-28 call's
// input_required is refused with a clear error. Native only (SIEVE_TARGET=native: the native lane).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { binOf } from '../security/helpers.mjs';
import { codeCatalog, runCode as run, TASK, TASK_CALLS, assertTask, PARALLEL, assertParallel, assertHiddenUnknown, assertAttacksContained, memoryUpstreams, assertOtherPrefixUnknown, assertCallsCrowd, assertAudited } from '../common/code-cases.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const native = process.env.SIEVE_TARGET === 'native';
const skip = !native && 'SIEVE_TARGET=native (the native lane)';
const OFFLINE = { ...process.env, HF_HUB_OFFLINE: '1' };
let dir;
let catalog;

before(() => {
  if (!native) return;
  dir = mkdtempSync(path.join(tmpdir(), 'sieve-code-stdio-'));
  const doc = codeCatalog({ file: 'audit.jsonl' });
  catalog = path.join(dir, 'sieve.json');
  writeFileSync(catalog, JSON.stringify(doc));
});
after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

async function v1(args, options = {}) {
  const client = new ClientV1({ name: 'code-stdio-e2e', version: '1.0.0' }, options);
  await client.connect(new StdioV1({ command: BIN, args: ['stdio', ...args], env: OFFLINE, stderr: 'pipe' }));
  return client;
}

test('stdio --code: the list, TypeScript declarations, a multi-step program audited as the client\'s calls', { skip, timeout: 60_000 }, async () => {
  const client = await v1(['--catalog', catalog, '--code', '--groups', 'utilities,email']);
  let runId;
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['find_tools', 'describe_tools', 'run_code']);
    const d = await client.callTool({ name: 'describe_tools', arguments: { names: ['add'] } });
    assert.match(d.structuredContent.typescript, /^declare const tools: \{/);
    assert.match(d.structuredContent.typescript, /\n {2}add\(args: \{\n/);
    const r = await run(client, TASK);
    assertTask(r);
    runId = r._meta['dev.mcp-sieve/run'].id;
    assertParallel(await run(client, PARALLEL));
  } finally { await client.close(); }
  const file = path.join(dir, 'audit.jsonl');
  assert.ok(existsSync(file), 'the audit file is written');
  const records = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assertAudited(records, runId, TASK_CALLS);
});

test('stdio --code: a hidden tool is unknown inside a program, by name, alias or computed name', { skip, timeout: 60_000 }, async () => {
  const client = await v1(['--catalog', catalog, '--code', '--groups', 'utilities']);
  try {
    await assertHiddenUnknown(client);
  } finally { await client.close(); }
});

test('stdio --code: attacks end inside their limits with a clear error, and the server keeps serving', { skip, timeout: 120_000 }, async () => {
  const client = await v1(['--catalog', catalog, '--code', '--groups', 'utilities']);
  try {
    await assertAttacksContained(client, { withinMs: 10_000 });
  } finally { await client.close(); }
});

test('stdio --code: 100 runs at once past code.maxConcurrentRuns are refused; the server and another client are unaffected; a cancelled run gives its place back', { skip, timeout: 120_000 }, async () => {
  const [client, other] = await Promise.all([
    v1(['--catalog', catalog, '--code', '--groups', 'utilities']),
    v1(['--catalog', catalog, '--code', '--groups', 'utilities']),
  ]);
  try {
    const busy = 'const t = Date.now(); while (Date.now() - t < 1500) {} return (await tools.add({ a: 1, b: 2 })).sum';
    const runs = Array.from({ length: 100 }, () => run(client, busy));
    await new Promise((r) => setTimeout(r, 200));
    // Meanwhile, the same client's list and another client's run answer at once.
    const started = Date.now();
    const listed = await client.listTools();
    assert.equal(listed.tools.length, 3);
    const theirs = await run(other, 'return (await tools.add({ a: 20, b: 22 })).sum');
    assert.equal(theirs.structuredContent.result, 42, JSON.stringify(theirs));
    assert.ok(Date.now() - started < 1500, `the others waited ${Date.now() - started} ms`);
    const done = await Promise.all(runs);
    const ran = done.filter((r) => !r.isError);
    const refused = done.filter((r) => r.isError);
    assert.equal(ran.length, 2, JSON.stringify(done.map((r) => r.structuredContent)));
    for (const r of ran) assert.equal(r.structuredContent.result, 3);
    assert.equal(refused.length, 98);
    for (const r of refused) assert.match(r.structuredContent.error, /too many programs at once: a caller may run 2 \(code.maxConcurrentRuns\)/);
    // A run whose request is cancelled stops at once (not at its 3 s limit), giving back its place.
    const controller = new AbortController();
    const gone = run(client, 'while (true) {}', { signal: controller.signal }).then(() => 'answered', () => 'aborted');
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    assert.equal(await gone, 'aborted');
    await new Promise((r) => setTimeout(r, 300));
    const two = await Promise.all([run(client, 'return 5'), run(client, 'return 6')]);
    assert.deepEqual(two.map((r) => r.structuredContent.result), [5, 6], JSON.stringify(two));
  } finally { await Promise.all([client.close(), other.close()]); }
});

test('stdio --code: a question asked mid-call reaches a 2025-11-25 client; a 2026-07-28 call\'s is refused with a clear error', { skip, timeout: 60_000 }, async () => {
  const conformance = path.join(ROOT, 'catalog', 'conformance.json');
  const program = "return await tools.test_elicitation({ message: 'who are you?' })";
  const asked = [];
  const legacy = await v1(['--catalog', conformance, '--code'], { capabilities: { elicitation: {} } });
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  legacy.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
  });
  try {
    const r = await run(legacy, program);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.match(JSON.stringify(r.structuredContent.result), /User response: action: accept, content: .*ada@example.com/);
    assert.deepEqual(asked, ['who are you?'], 'the client was asked once');
  } finally { await legacy.close(); }
  const modern = new ClientV2({ name: 'code-stdio-2026', version: '1.0.0' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  modern.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { username: 'x', email: 'x@example.com' } }));
  await modern.connect(new StdioV2({ command: BIN, args: ['stdio', '--catalog', conformance, '--code'], env: OFFLINE, stderr: 'pipe' }));
  try {
    const r = await modern.callTool({ name: 'run_code', arguments: { code: `try { ${program} } catch (e) { return 'refused: ' + e.message }` } });
    assert.match(String(r.structuredContent.result), /^refused: the tool asked a question mid-call \(input_required\); questions are not passed on from run_code/, JSON.stringify(r));
  } finally { await modern.close().catch(() => {}); }
});

test('stdio --code through the gateway: calls made at once reach their upstream at once, eight at most', { skip, timeout: 90_000 }, async () => {
  await assertCallsCrowd(async (doc) => {
    writeFileSync(path.join(dir, 'crowded.json'), JSON.stringify(doc));
    return { client: await v1(['--catalog', path.join(dir, 'crowded.json'), '--code']), stop: async () => {} };
  });
});

test('stdio --code through the gateway: another upstream\'s prefix is unknown inside a program', { skip, timeout: 90_000 }, async () => {
  const doc = { upstreams: memoryUpstreams(binOf('@modelcontextprotocol/server-memory'), dir) };
  const gw = path.join(dir, 'gateway.json');
  writeFileSync(gw, JSON.stringify(doc));
  const client = await v1(['--catalog', gw, '--code', '--groups', 'memory']);
  try {
    await assertOtherPrefixUnknown(client);
  } finally { await client.close(); }
});
