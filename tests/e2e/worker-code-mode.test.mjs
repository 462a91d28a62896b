// E2E: code mode (issue 62) in the Worker, with the official SDK client against `wrangler dev`
// (skipped with SIEVE_TARGET=native: tests/e2e/code-mode.test.mjs is the native server's). Each
// program runs in a Dynamic Worker loaded through the Worker Loader binding (worker/code/run.mjs),
// QuickJS in wasm inside it (worker/code/sandbox.mjs). The same view "scripted" in code mode over
// the demo catalog's utilities and email groups as natively: the client lists find_tools,
// describe_tools and run_code and runs the native test's multi-step task — over a session (its
// Durable Object) and stateless (2026-07-28, the front Worker); a hidden tool is as unknown
// inside a program as outside; programs written as an attacker would end inside their limits
// (an infinite loop by its wall time, too many calls, ...) with a clear error, and the Worker
// keeps serving; runs at once are bounded per caller; each call of a program is audited as the
// caller's, marked via run_code with the run's id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWith } from '../security/helpers.mjs';
import { stateless } from '../common/mcp-raw.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const native = process.env.SIEVE_TARGET === 'native';
const skip = native && 'the native server: tests/e2e/code-mode.test.mjs';
let server;

before(async () => {
  if (native) return;
  const doc = JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));
  doc.views.scripted = { mode: 'code', filter: { groups: ['utilities', 'email'] } };
  doc.views.narrow = { mode: 'code', filter: { groups: ['utilities'] } };
  // A renamed tool: send_email's old name, outside the "narrow" view as send_email is.
  doc.tools.find((t) => t.name === 'send_email').aliases = ['mail_send'];
  doc.code = { timeoutSeconds: 3, memoryMb: 32, maxCalls: 30, maxAnswerBytes: 200000, maxConcurrentRuns: 2 };
  doc.audit = {};
  server = await startWith(doc, {}, { logLevel: 'log' });
}, { timeout: 120_000 });
after(async () => { await server?.stop(); });

async function connect(view = 'scripted') {
  const client = new Client({ name: 'worker-code-mode-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/${view}`)));
  return client;
}

const run = (client, code) => client.callTool({ name: 'run_code', arguments: { code } });

/** The native test's multi-step task: four additions chained, a text's statistics, the messages. */
const TASK = `
  const numbers = [3, 9, 27, 81];
  let total = 0;
  for (const n of numbers) {
    const s = await tools.add({ a: total, b: n });
    total = Number(s.sum ?? s.result ?? s[0]?.text);
  }
  const stats = await tools.call('text_stats', { text: 'one two three four' });
  const messages = await tools.list_messages({});
  console.log('added', numbers.length, 'numbers');
  return { total, stats, messages: Array.isArray(messages) ? 'content' : typeof messages };`;

function assertTask(r) {
  assert.equal(r.isError, undefined, JSON.stringify(r));
  const { result, logs } = r.structuredContent;
  assert.equal(result.total, 120);
  assert.ok(result.stats, JSON.stringify(result));
  assert.deepEqual(logs, ['added 4 numbers']);
  assert.equal(r._meta['dev.mcp-sieve/run'].calls, 6);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
}

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

test('a hidden tool is unknown inside a program, by name, alias, prefix or computed name', { skip, timeout: 60_000 }, async () => {
  const client = await connect('narrow');
  try {
    const r = await run(client, `
      const tried = {};
      for (const name of ['send_email', 'mail_send', 'email.send_email', 'scripted/send_email', ['send', 'email'].join('_'), 'run_code', 'call_tool']) {
        try { await tools.call(name, { to: 'a@b.c', subject: 's', body: 'b' }); tried[name] = 'called'; }
        catch (e) { tried[name] = e.message; }
      }
      return tried;`);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const tried = r.structuredContent.result;
    for (const [name, outcome] of Object.entries(tried)) assert.notEqual(outcome, 'called', `${name} was called`);
    assert.match(tried.send_email, /Unknown tool/);
    assert.match(tried.mail_send, /Unknown tool/);
    // Outside the program too.
    const direct = await client.callTool({ name: 'call_tool', arguments: { name: 'send_email', arguments: {} } }).then((x) => JSON.stringify(x), (e) => e.message);
    assert.match(direct, /Unknown tool/);
    const ok = await run(client, 'return await tools.echo({ message: "hi" })');
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
  } finally { await client.close(); }
});

test('attacks end inside their limits with a clear error, and the Worker keeps serving', { skip, timeout: 120_000 }, async () => {
  const client = await connect();
  try {
    const cases = [
      ['while (true) {}', /time limit of 3 s/],
      ['while (true) { try { for (;;) {} } catch (e) {} }', /time limit of 3 s/],
      ['const a = []; while (true) a.push(new Array(100000).fill(1));', /memory limit of 32 MB/],
      ["return 'x'.repeat((1 << 30) - 1).length", /memory limit of 32 MB|string too long/],
      ['const f = (n) => f(n + 1) + 1; return f(0)', /stack/],
      ['await new Promise(() => {})', /never settles/],
      ['for (let i = 0; i < 100; i++) await tools.echo({ message: String(i) }); return 1', /too many tool calls: a run may make 30/],
      ["return 'y'.repeat(300000)", /more than 200000 \(code.maxAnswerBytes\)/],
      ["return await import('os')", /Error/],
      ["return await fetch('http://127.0.0.1:1/')", /fetch is not defined|ReferenceError/],
      ["return eval('globalThis.fetch === undefined && typeof tools')", /^$/],
    ];
    for (const [code, want] of cases) {
      const started = Date.now();
      const r = await run(client, code);
      if (String(want) === String(/^$/)) {
        assert.equal(r.isError, undefined, `${code}: ${JSON.stringify(r)}`);
      } else {
        assert.equal(r.isError, true, `${code} should have failed: ${JSON.stringify(r)}`);
        assert.match(r.structuredContent.error, want, code);
      }
      // The engine checks its deadline between bytecodes, not inside one built-in call: the
      // memory bomb (100,000-element fills) meets its memory limit after about 8 s of QuickJS in
      // wasm on a loaded machine, not at 3 s.
      assert.ok(Date.now() - started < 20_000, `${code} took ${Date.now() - started} ms`);
    }
    // Replacing the bridge's objects, prototype pollution and a replaced JSON stay in the program's world.
    const replaced = await run(client, 'tools = null; globalThis.tools = 1; return typeof tools');
    assert.equal(replaced.structuredContent.result, 'object', JSON.stringify(replaced));
    const polluted = await run(client, `Object.prototype.isError = true; JSON.parse = () => ({});
      const r = await tools.add({ a: 2, b: 3 }); return r;`);
    assert.equal(polluted.isError, undefined, JSON.stringify(polluted));
    // Control characters come back as data.
    const ctl = await run(client, "console.log('a\\u0000b\\r\\n\\r\\ndata: {}'); return 'c\\u0001\\u001b[31m\\n\\nevent: x'");
    assert.equal(ctl.structuredContent.result, 'c\u0001\u001b[31m\n\nevent: x');
    assert.deepEqual(ctl.structuredContent.logs, ['a\u0000b\r\n\r\ndata: {}']);
    // A program that is not a string is a clear invalid-params error.
    await assert.rejects(client.callTool({ name: 'run_code', arguments: { code: 5 } }), /params.arguments.code must be a string/);
    // Still serving: a program, and a direct call.
    const after = await run(client, 'return (await tools.add({ a: 1, b: 1 }))');
    assert.equal(after.isError, undefined, JSON.stringify(after));
    const found = await client.callTool({ name: 'find_tools', arguments: { query: 'add numbers' } });
    assert.equal(found.isError, undefined);
  } finally { await client.close(); }
});

test('runs at once are bounded per caller', { skip, timeout: 60_000 }, async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  try {
    // Three runs of one session that wait on their calls (a loop would hold the local runtime's
    // one thread): two fit, the third is refused; another session's run is not.
    // Under load the three may not overlap (each ended before the next began): then none is
    // refused, rightly; the round is tried again, up to five times, until they do.
    const busy = 'for (let i = 0; i < 25; i++) await tools.echo({ message: String(i) }); return "done"';
    let refusedOnce = false;
    for (let round = 0; round < 5 && !refusedOnce; round++) {
      const three = await Promise.all([run(a, busy), run(a, busy), run(a, busy), run(b, 'return 2')]);
      const refused = three.slice(0, 3).filter((r) => r.isError);
      assert.ok(refused.length <= 1, JSON.stringify(three));
      for (const r of refused) assert.match(r.structuredContent.error, /too many programs at once: a caller may run 2/);
      assert.equal(three[3].structuredContent.result, 2);
      refusedOnce = refused.length === 1;
    }
    assert.ok(refusedOnce, 'in five rounds of three runs at once, the third was never refused');
    assert.equal((await run(a, 'return 3')).structuredContent.result, 3);
  } finally { await Promise.all([a.close(), b.close()]); }
});

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
  const mine = records.filter((x) => x.run === runId);
  assert.deepEqual(mine.map((x) => x.item).sort(), ['add', 'echo']);
  for (const x of mine) {
    assert.equal(x.via, 'run_code');
    assert.equal(x.decision, 'allowed');
    assert.match(x.view, /scripted/);
  }
  assert.ok(records.some((x) => x.item === 'run_code' && !x.via), 'the run itself is a use too');
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
