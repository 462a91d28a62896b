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
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startNative } from './harness.mjs';
import { statelessRequest } from '../common/mcp-raw.mjs';
import { binOf } from '../security/helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const native = process.env.SIEVE_TARGET === 'native';
let server;
let dir;

before(async () => {
  if (!native) return;
  dir = mkdtempSync(path.join(tmpdir(), 'sieve-code-'));
  const doc = JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));
  doc.views.scripted = { mode: 'code', filter: { groups: ['utilities', 'email'] } };
  doc.views.narrow = { mode: 'code', filter: { groups: ['utilities'] } };
  // A renamed tool: send_email's old name, outside the "narrow" view as send_email is.
  doc.tools.find((t) => t.name === 'send_email').aliases = ['mail_send'];
  doc.code = { timeoutSeconds: 3, memoryMb: 32, maxCalls: 30, maxAnswerBytes: 200000, maxConcurrentRuns: 2 };
  doc.audit = { file: 'audit.jsonl' };
  writeFileSync(path.join(dir, 'sieve.json'), JSON.stringify(doc));
  server = await startNative({ extraArgs: ['--catalog', path.join(dir, 'sieve.json')] });
}, { timeout: 120_000 });
after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function connect(view = 'scripted') {
  const client = new Client({ name: 'code-mode-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/${view}`)));
  return client;
}

const run = (client, code) => client.callTool({ name: 'run_code', arguments: { code } });

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
    const r = await run(client, `
      const numbers = [3, 9, 27, 81];
      let total = 0;
      for (const n of numbers) {
        const s = await tools.add({ a: total, b: n });
        total = Number(s.sum ?? s.result ?? s[0]?.text);
      }
      const stats = await tools.call('text_stats', { text: 'one two three four' });
      const messages = await tools.list_messages({});
      console.log('added', numbers.length, 'numbers');
      return { total, stats, messages: Array.isArray(messages) ? 'content' : typeof messages };`);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const { result, logs } = r.structuredContent;
    assert.equal(result.total, 120);
    assert.ok(result.stats, JSON.stringify(result));
    assert.deepEqual(logs, ['added 4 numbers']);
    assert.equal(r._meta['dev.mcp-sieve/run'].calls, 6);
    assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  } finally { await client.close(); }
});

test('a hidden tool is unknown inside a program, by name, alias, prefix or computed name', { skip: !native, timeout: 60_000 }, async () => {
  const client = await connect('narrow');
  try {
    // Outside: a direct call_tool of send_email is unknown in this view.
    const r = await run(client, `
      const tried = {};
      for (const name of ['send_email', 'mail_send', 'email.send_email', 'scripted/send_email', ['send', 'email'].join('_'), 'run_code', 'call_tool']) {
        try { await tools.call(name, { to: 'a@b.c', subject: 's', body: 'b' }); tried[name] = 'called'; }
        catch (e) { tried[name] = e.message; }
      }
      return tried;`);
    const tried = r.structuredContent.result;
    for (const [name, outcome] of Object.entries(tried)) {
      assert.notEqual(outcome, 'called', `${name} was called`);
    }
    assert.match(tried.send_email, /Unknown tool/);
    assert.match(tried.mail_send, /Unknown tool/);
    assert.match(tried.send_email, /Unknown tool/);
    // A visible tool is called as directly.
    const ok = await run(client, 'return await tools.echo({ message: "hi" })');
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
  } finally { await client.close(); }
});

test('attacks end inside their limits with a clear error, and the server keeps serving', { skip: !native, timeout: 120_000 }, async () => {
  const client = await connect();
  try {
    const cases = [
      ['while (true) {}', /time limit of 3 s/],
      ['const a = []; while (true) a.push(new Array(100000).fill(1));', /memory limit of 32 MB/],
      ["return 'x'.repeat((1 << 30) - 1).length", /memory limit of 32 MB/],
      ['const f = (n) => f(n + 1) + 1; return f(0)', /stack/],
      ['await new Promise(() => {})', /never settles/],
      ['for (let i = 0; i < 100; i++) await tools.echo({ message: String(i) }); return 1', /too many tool calls: a run may make 30/],
      ["return 'y'.repeat(300000)", /more than 200000 \(code.maxAnswerBytes\)/],
      ['tools = null; return 1', /TypeError|^$/],
      ["return await import('os')", /Error/],
    ];
    for (const [code, want] of cases) {
      const started = Date.now();
      const r = await run(client, code);
      if (r.isError) {
        assert.match(r.structuredContent.error, want, code);
      } else {
        assert.equal(String(want), String(/TypeError|^$/), `${code} should have failed: ${JSON.stringify(r)}`);
      }
      assert.ok(Date.now() - started < 10_000, `${code} took ${Date.now() - started} ms`);
    }
    // Prototype pollution and a replaced JSON stay in the program's world.
    const polluted = await run(client, `Object.prototype.isError = true; JSON.parse = () => ({});
      const r = await tools.add({ a: 2, b: 3 }); return r;`);
    assert.equal(polluted.isError, undefined, JSON.stringify(polluted));
    // Replacing `tools` fails or changes nothing: the bridge still reaches the tools.
    const replaced = await run(client, `try { tools = { add: () => ({ sum: 'mine' }) } } catch (e) {}
      try { globalThis.tools = null } catch (e) {}
      try { Object.defineProperty(globalThis, 'tools', { value: {} }) } catch (e) {}
      Object.prototype.sum = 99;
      return (await tools.add({ a: 2, b: 3 })).sum;`);
    assert.equal(replaced.structuredContent.result, 5, JSON.stringify(replaced));
    // Control characters come back as data: the JSON and the stream stay whole.
    const ctl = await run(client, "console.log('a\\u0000b\\r\\n\\r\\ndata: {}'); return 'c\\u0001\\u001b[31m\\n\\nevent: x'");
    assert.equal(ctl.structuredContent.result, 'c\u0001\u001b[31m\n\nevent: x');
    assert.deepEqual(ctl.structuredContent.logs, ['a\u0000b\r\n\r\ndata: {}']);
    // A program that is not a string is a clear invalid-params error.
    await assert.rejects(client.callTool({ name: 'run_code', arguments: { code: 5 } }), /params.arguments.code must be a string/);
    // Still serving.
    const after = await run(client, 'return (await tools.add({ a: 1, b: 1 }))');
    assert.equal(after.isError, undefined, JSON.stringify(after));
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
  const memory = binOf('@modelcontextprotocol/server-memory');
  const doc = {
    upstreams: {
      memory: { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: path.join(dir, 'a.jsonl') }, prefix: 'mem_' },
      other: { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: path.join(dir, 'b.jsonl') }, prefix: 'other_' },
    },
    views: { coded: { mode: 'code', filter: { groups: ['memory'] } } },
  };
  writeFileSync(path.join(dir, 'gateway.json'), JSON.stringify(doc));
  const gw = await startNative({ extraArgs: ['--catalog', path.join(dir, 'gateway.json')] });
  const client = new Client({ name: 'code-mode-gateway', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/coded`)));
    await assert.rejects(client.callTool({ name: 'call_tool', arguments: { name: 'other_read_graph', arguments: {} } }), /Unknown tool/);
    const r = await run(client, `
      const mine = await tools.mem_read_graph({});
      const tried = {};
      for (const name of ['other_read_graph', ['other', 'read', 'graph'].join('_'), 'read_graph', 'other.read_graph']) {
        try { await tools.call(name, {}); tried[name] = 'called'; } catch (e) { tried[name] = e.message; }
      }
      return { mine, tried };`);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.ok(r.structuredContent.result.mine, JSON.stringify(r));
    for (const [name, outcome] of Object.entries(r.structuredContent.result.tried)) {
      assert.match(outcome, /Unknown tool/, `${name}: ${outcome}`);
    }
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
  const mine = records.filter((x) => x.run === runId);
  assert.deepEqual(mine.map((x) => x.item).sort(), ['add', 'echo']);
  for (const x of mine) {
    assert.equal(x.via, 'run_code');
    assert.equal(x.decision, 'allowed');
    assert.match(x.view, /scripted/);
  }
  assert.ok(records.some((x) => x.item === 'run_code' && !x.via), 'the run itself is a use too');
});
