// E2E: a code-mode run of the native server (`mcp-sieve serve`) is cancelled by its client's
// `notifications/cancelled` (issue 62), as over stdio and at the edge: the official SDK client's
// AbortSignal sends it in a POST of its own (the run_code request's stream stays open), naming
// the run_code call's id; a raw client of a session and a stateless one (its principal) send it
// by hand. After the cancel the program makes no further tool call — counted in the audit file,
// where each of a program's calls is a line marked `"via": "run_code"` — its place among the
// caller's runs at once (`maxConcurrentRuns: 1` here) is free for the next run at once, and the
// cancelled call's answer (to a client still reading it) says it was cancelled. Native only
// (SIEVE_TARGET=native): the Worker's is worker-code-mode-limits.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startNative } from './harness.mjs';
import { initialize, post, statelessRequest } from '../common/mcp-raw.mjs';
import { sleep, until } from '../security/helpers.mjs';
import { codeCatalog, runCode as run } from '../common/code-cases.mjs';

const native = process.env.SIEVE_TARGET === 'native';
const skip = !native && 'SIEVE_TARGET=native (the native lane)';
const TOKENS = { alice: 'token-alice-cancel', bob: 'token-bob-cancel', carol: 'token-carol-cancel' };
let server;
let dir;

before(async () => {
  if (!native) return;
  dir = mkdtempSync(path.join(tmpdir(), 'sieve-code-cancel-'));
  const doc = codeCatalog({ file: 'audit.jsonl', payloads: true });
  // Long enough that a run not cancelled is still calling when the checks below are done.
  doc.code = { timeoutSeconds: 30, memoryMb: 32, maxCalls: 500, maxAnswerBytes: 200000, maxConcurrentRuns: 1 };
  writeFileSync(path.join(dir, 'sieve.json'), JSON.stringify(doc));
  server = await startNative({ extraArgs: ['--catalog', path.join(dir, 'sieve.json')], env: { MCP_SIEVE_TOKENS: JSON.stringify(TOKENS) } });
}, { timeout: 120_000 });
after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A program that adds `tag` to 0..n-1, a call every 100 ms, then answers "done". */
const ticking = (tag, n = 200) => `for (let i = 0; i < ${n}; i++) {
  await tools.add({ a: ${tag}, b: i });
  const t = Date.now(); while (Date.now() - t < 100) {}
}
return 'done';`;

/** How many tool calls programs made with `tag` as their first number (the audit file's lines). */
function calls(tag) {
  const file = path.join(dir, 'audit.jsonl');
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => r.via === 'run_code' && r.arguments?.a === tag).length;
}

/** Gives a cancel 1 s to take effect, then asserts no call with `tag` is made in the next 2 s. */
async function noMoreCalls(tag) {
  await sleep(1000);
  const then = calls(tag);
  await sleep(2000);
  assert.equal(calls(tag), then, `the program made ${calls(tag) - then} more call(s) after its run was cancelled`);
  assert.ok(then < 50, `the run went on after its cancel: ${then} calls`);
}

async function connect(headers = {}) {
  const client = new Client({ name: 'code-mode-cancel', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/scripted`), { requestInit: { headers } }));
  return client;
}

test('serve: a run the SDK client cancels (notifications/cancelled) makes no further calls and gives its place back', { skip, timeout: 60_000 }, async () => {
  const client = await connect({ Authorization: `Bearer ${TOKENS.alice}` });
  try {
    const controller = new AbortController();
    // The SDK sends notifications/cancelled with the request's id when its signal aborts.
    const cancelled = run(client, ticking(1001), { signal: controller.signal, timeout: 60_000 }).then(() => 'answered', (e) => e.message);
    await until('three calls of the program', () => calls(1001) >= 3, 20_000);
    controller.abort('the user stopped it');
    assert.match(await cancelled, /stopped it/);
    await noMoreCalls(1001);
    // The session's one place (maxConcurrentRuns 1) is free: the next run is not refused.
    const next = await run(client, 'return (await tools.add({ a: 2, b: 3 })).sum');
    assert.equal(next.structuredContent?.result, 5, JSON.stringify(next));
  } finally { await client.close(); }
});

test('serve: a session\'s notifications/cancelled ends its run, whose answer says so; another session\'s does not', { skip, timeout: 60_000 }, async () => {
  const url = `${server.url}/scripted`;
  // Two sessions of one principal: a cancel is the session's.
  const auth = { headers: { authorization: `Bearer ${TOKENS.bob}` } };
  const mine = await initialize(url, auth);
  const theirs = await initialize(url, auth);
  const id = 'run-to-cancel';
  const running = post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_code', arguments: { code: ticking(1002, 30) } } }, { headers: mine.headers });
  await until('three calls of the program', () => calls(1002) >= 3, 20_000);
  const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'stop' } };
  // Another session naming the same id cancels nothing.
  assert.equal((await post(url, cancel, { headers: theirs.headers })).status, 202);
  const before = calls(1002);
  await sleep(800);
  assert.ok(calls(1002) > before, 'another session\'s cancel stopped the run');
  assert.equal((await post(url, cancel, { headers: mine.headers })).status, 202);
  const answer = (await running).response;
  assert.match(answer?.result?.structuredContent?.error ?? '', /the run was cancelled by its client \(notifications\/cancelled\)/, JSON.stringify(answer));
  await noMoreCalls(1002);
});

test('serve: a stateless principal\'s notifications/cancelled ends its run and frees its place', { skip, timeout: 60_000 }, async () => {
  const url = `${server.url}/scripted`;
  const auth = { authorization: `Bearer ${TOKENS.carol}` };
  const asCarol = (method, params, id) => {
    const { message, headers } = statelessRequest(method, params, id === undefined ? {} : { id });
    return post(url, message, { headers: { ...auth, ...headers } });
  };
  const running = asCarol('tools/call', { name: 'run_code', arguments: { code: ticking(1003, 30) } }, 'carol-run');
  await until('three calls of the program', () => calls(1003) >= 3, 20_000);
  const { message, headers } = statelessRequest('tools/call', {});
  const note = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'carol-run', reason: 'stop', _meta: message.params._meta } };
  const sent = await post(url, note, { headers: { ...auth, 'MCP-Protocol-Version': headers['MCP-Protocol-Version'] ?? headers['mcp-protocol-version'], 'Mcp-Method': 'notifications/cancelled' } });
  assert.ok(sent.status < 300, `the cancel was refused: HTTP ${sent.status} ${sent.body}`);
  const answer = (await running).response;
  assert.match(answer?.result?.structuredContent?.error ?? '', /the run was cancelled by its client \(notifications\/cancelled\)/, JSON.stringify(answer));
  await noMoreCalls(1003);
  const next = (await asCarol('tools/call', { name: 'run_code', arguments: { code: 'return 7' } })).response;
  assert.equal(next?.result?.structuredContent?.result, 7, JSON.stringify(next));
});
