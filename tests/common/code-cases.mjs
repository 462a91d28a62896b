//! The code-mode cases (issue 62) the end-to-end tests of every shell run alike, written once:
//! tests/e2e/code-mode.test.mjs (the native server over Streamable HTTP), code-mode-stdio.test.mjs
//! (`mcp-sieve stdio --code`) and worker-code-mode.test.mjs (the Worker under `wrangler dev`).
//! The set-up (the demo catalog with the views "scripted" and "narrow" in code mode, an alias of
//! a hidden tool, small limits), a multi-step program, calls made at once (and through a gateway,
//! as an upstream sees them), a hidden tool tried every way from inside a program, the attacks of
//! item 5 with the error each must end in, the bridge tampered with, another upstream's prefix
//! through the gateway, and the audit of a program's calls. Each shell's
//! test starts its server and client and hands the calls to these.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Limits small enough that every attack meets one at once. */
export const LIMITS = { timeoutSeconds: 3, memoryMb: 32, maxCalls: 30, maxAnswerBytes: 200000, maxConcurrentRuns: 2 };

/**
 * The demo catalog (catalog/default.json) for the code-mode tests: the view "scripted" in code
 * mode over the utilities and email groups, "narrow" over utilities only, send_email's old name
 * `mail_send` (outside "narrow" as send_email is), LIMITS, and `audit` as the audit settings.
 */
export function codeCatalog(audit) {
  const doc = JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));
  doc.views.scripted = { mode: 'code', filter: { groups: ['utilities', 'email'] } };
  doc.views.narrow = { mode: 'code', filter: { groups: ['utilities'] } };
  doc.tools.find((t) => t.name === 'send_email').aliases = ['mail_send'];
  doc.code = { ...LIMITS };
  doc.audit = audit;
  return doc;
}

/** `run_code` of `code` by an SDK client (v1 or v2). */
export const runCode = (client, code, options) => client.callTool({ name: 'run_code', arguments: { code } }, undefined, options);

/** A multi-step task (utilities and email): four additions chained, a text's statistics, the messages. */
export const TASK = `
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

/** The tools TASK calls, sorted (as its audit records name them). */
export const TASK_CALLS = ['add', 'add', 'add', 'add', 'list_messages', 'text_stats'];

/** TASK's answer: its result, logs, count of calls, and the text content the same as the structured. */
export function assertTask(r) {
  assert.equal(r.isError, undefined, JSON.stringify(r));
  const { result, logs } = r.structuredContent;
  assert.equal(result.total, 120);
  assert.ok(result.stats, JSON.stringify(result));
  assert.deepEqual(logs, ['added 4 numbers']);
  assert.equal(r._meta['dev.mcp-sieve/run'].calls, TASK_CALLS.length);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
}

/** Twelve calls made at once (`Promise.all`; more than a run serves at once, 8) and
 * one that fails among them: each answer is its own call's, in the program's order. */
export const PARALLEL = `
  const sums = await Promise.all(Array.from({ length: 12 }, (_, i) => tools.add({ a: i, b: 100 })));
  const failed = await Promise.allSettled([tools.add({ a: 1, b: 1 }), tools.nope({}), tools.add({ a: 2, b: 2 })]);
  return { sums: sums.map((s) => Number(s.sum ?? s.result ?? s[0]?.text)), settled: failed.map((f) => f.status) };`;

/** PARALLEL's answer. */
export function assertParallel(r) {
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.deepEqual(r.structuredContent.result.sums, Array.from({ length: 12 }, (_, i) => i + 100));
  assert.deepEqual(r.structuredContent.result.settled, ['fulfilled', 'rejected', 'fulfilled']);
  assert.equal(r._meta['dev.mcp-sieve/run'].calls, 15);
}

/**
 * An official-SDK upstream (tests/fixtures/official-upstream.mjs) whose tool `crowd` (`u_crowd`
 * behind assertCallsCrowd's gateway) waits until eight of its calls are in flight (at most 1 s),
 * holds 200 ms more, and answers the most it has seen in flight at once.
 */
async function crowdedUpstream() {
  const { officialUpstream } = await import('../fixtures/official-upstream.mjs');
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  let inFlight = 0;
  let most = 0;
  return officialUpstream('crowded', (s) => {
    s.registerTool('crowd', { description: 'Answers the most calls of it seen at once' }, async () => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      for (let waited = 0; inFlight < 8 && waited < 1000; waited += 10) await sleep(10);
      await sleep(200);
      inFlight -= 1;
      return { content: [{ type: 'text', text: String(most) }] };
    });
  });
}

/**
 * Twelve calls of `u_crowd` made at once by a program, through a gateway in front of
 * crowdedUpstream (`open(document)`: the shell under test serving it, its view "coded" in code
 * mode, and an SDK client of it there: `{client, stop}`): the upstream saw eight at once — they
 * overlap, and no more than eight of a run's are served at once (the rest wait their turn).
 */
export async function assertCallsCrowd(open) {
  const up = await crowdedUpstream();
  const { client, stop } = await open({ upstreams: { u: { url: up.url } }, views: { coded: { mode: 'code' } } });
  try {
    const r = await runCode(client, `
      const seen = await Promise.all(Array.from({ length: 12 }, () => tools.u_crowd({})));
      return Math.max(...seen.map((c) => Number(c[0].text)));`);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r.structuredContent.result, 8);
  } finally {
    await client.close();
    await stop();
    await up.stop();
  }
}

/**
 * A hidden tool (send_email, outside utilities) is unknown inside a program by name, by its alias,
 * by a group's or a view's prefix, by a computed name, as a property of `tools`, and the search
 * tools are no way round; unknown outside too; a visible tool is called. `client` sees only the
 * utilities group in code mode.
 */
export async function assertHiddenUnknown(client) {
  await assert.rejects(client.callTool({ name: 'call_tool', arguments: { name: 'send_email', arguments: {} } }), /Unknown tool/);
  const r = await runCode(client, `
    const tried = {};
    for (const name of ['send_email', 'mail_send', 'email.send_email', 'scripted/send_email', ['send', 'email'].join('_'), 'run_code', 'call_tool']) {
      try { await tools.call(name, { to: 'a@b.c', subject: 's', body: 'b' }); tried[name] = 'called'; }
      catch (e) { tried[name] = e.message; }
    }
    try { await tools.mail_send({}); tried.property = 'called'; } catch (e) { tried.property = e.message; }
    return tried;`);
  assert.equal(r.isError, undefined, JSON.stringify(r));
  const tried = r.structuredContent.result;
  for (const [name, outcome] of Object.entries(tried)) assert.notEqual(outcome, 'called', `${name} was called`);
  for (const name of ['send_email', 'mail_send', 'property']) assert.match(tried[name], /Unknown tool/, name);
  const ok = await runCode(client, 'return await tools.echo({ message: "hi" })');
  assert.equal(ok.isError, undefined, JSON.stringify(ok));
}

/**
 * Programs written as an attacker would, with LIMITS, and what each ends in: `error`, the error
 * it must fail with (`worker`: the Worker's, where its engine words it otherwise), or `check`.
 */
export const ATTACKS = [
  { code: 'while (true) {}', error: /time limit of 3 s/ },
  { code: 'while (true) { try { for (;;) {} } catch (e) {} }', error: /time limit of 3 s/ },
  { code: 'const a = []; while (true) a.push(new Array(100000).fill(1));', error: /memory limit of 32 MB/ },
  { code: "return 'x'.repeat((1 << 30) - 1).length", error: /memory limit of 32 MB/, worker: /memory limit of 32 MB|string too long/ },
  { code: 'const f = (n) => f(n + 1) + 1; return f(0)', error: /stack/ },
  { code: 'await new Promise(() => {})', error: /never settles/ },
  { code: 'for (let i = 0; i < 100; i++) await tools.echo({ message: String(i) }); return 1', error: /too many tool calls: a run may make 30/ },
  { code: "return 'y'.repeat(300000)", error: /more than 200000 \(code.maxAnswerBytes\)/ },
  { code: "return await import('os')", error: /Error/ },
  { code: "return await fetch('http://127.0.0.1:1/')", error: /fetch is not defined|ReferenceError/ },
  // eval stays inside the sandbox: no fetch there either, and `tools` is the bridge.
  { code: "return eval('globalThis.fetch === undefined && typeof tools')", check: (r) => assert.equal(r.structuredContent?.result, 'object', JSON.stringify(r)) },
  // Replacing `tools` fails (a TypeError) or changes nothing.
  { code: 'tools = null; return 1', check: (r) => (r.isError ? assert.match(r.structuredContent.error, /TypeError/) : assert.equal(r.structuredContent.result, 1)) },
];

/**
 * Programs that tamper with the bridge's objects; each `check(r, worker)`s that it stayed in the
 * program's world (`worker`: the answer is the Worker's).
 */
export const TAMPERING = [
  // Prototype pollution and a replaced JSON: the call's answer is still read right.
  {
    code: `Object.prototype.isError = true; JSON.parse = () => ({});
      const r = await tools.add({ a: 2, b: 3 }); return r;`,
    check: (r) => assert.equal(r.isError, undefined, JSON.stringify(r)),
  },
  // `tools` replaced every way: the bridge still reaches the tools. In the Worker's engine
  // (worker/code/sandbox.mjs) `tools` is a configurable global: defineProperty replaces it for
  // this program, whose call then fails with a clear error (TypeError: not a function); the
  // next program has the bridge again (the checks after TAMPERING).
  {
    code: `try { tools = { add: () => ({ sum: 'mine' }) } } catch (e) {}
      try { globalThis.tools = null } catch (e) {}
      try { Object.defineProperty(globalThis, 'tools', { value: {} }) } catch (e) {}
      Object.prototype.sum = 99;
      return (await tools.add({ a: 2, b: 3 })).sum;`,
    check: (r, worker) => {
      if (worker && r.isError) assert.match(r.structuredContent.error, /^TypeError: not a function$/, JSON.stringify(r));
      else assert.equal(r.structuredContent.result, 5, JSON.stringify(r));
    },
  },
  {
    code: `try { tools = { add: () => 'mine' } } catch (e) {}
      try { globalThis.tools = null } catch (e) {}
      Object.prototype.isError = true; Object.prototype.sum = 99; JSON.parse = () => ({ sum: 1 });
      return (await tools.add({ a: 2, b: 3 })).sum;`,
    check: (r) => {
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.equal(r.structuredContent.result, 5);
    },
  },
  // Natively the assignment throws ('tools' is read-only); in the Worker it changes nothing.
  {
    code: 'tools = null; globalThis.tools = 1; return typeof tools',
    check: (r, worker) => {
      if (!worker && r.isError) assert.match(r.structuredContent.error, /^TypeError: 'tools' is read-only$/, JSON.stringify(r));
      else assert.equal(r.structuredContent.result, 'object', JSON.stringify(r));
    },
  },
  // Control characters come back as data: the JSON, the stream and the stdio lines stay whole.
  {
    code: "console.log('a\\u0000b\\r\\n\\r\\ndata: {}'); return 'c\\u0001\\u001b[31m\\n\\nevent: x'",
    check: (r) => {
      assert.equal(r.structuredContent.result, 'c\u0001\u001b[31m\n\nevent: x');
      assert.deepEqual(r.structuredContent.logs, ['a\u0000b\r\n\r\ndata: {}']);
    },
  },
];

/**
 * Runs ATTACKS and TAMPERING with `client` (in code mode over the utilities group at least), each
 * ending within `withinMs`, then a program that is not a string, then checks the server still
 * serves a program and a direct call. `worker`: the Worker's wording where it differs.
 */
export async function assertAttacksContained(client, { withinMs, worker = false }) {
  for (const c of ATTACKS) {
    const started = Date.now();
    const r = await runCode(client, c.code);
    if (c.check) {
      c.check(r);
    } else {
      assert.equal(r.isError, true, `${c.code} should have failed: ${JSON.stringify(r)}`);
      assert.match(r.structuredContent.error, (worker && c.worker) || c.error, c.code);
    }
    assert.ok(Date.now() - started < withinMs, `${c.code} took ${Date.now() - started} ms`);
  }
  for (const c of TAMPERING) c.check(await runCode(client, c.code), worker);
  await assert.rejects(client.callTool({ name: 'run_code', arguments: { code: 5 } }), /params.arguments.code must be a string/);
  const still = await runCode(client, 'return (await tools.add({ a: 1, b: 1 })).sum');
  assert.equal(still.isError, undefined, JSON.stringify(still));
  assert.equal(still.structuredContent.result, 2);
  const found = await client.callTool({ name: 'find_tools', arguments: { query: 'add numbers' } });
  assert.equal(found.isError, undefined);
}

/** Two server-memory upstreams, `mem_` and `other_`, their files in `dir`. */
export function memoryUpstreams(memoryBin, dir) {
  return {
    memory: { command: process.execPath, args: [memoryBin], env: { MEMORY_FILE_PATH: path.join(dir, 'a.jsonl') }, prefix: 'mem_' },
    other: { command: process.execPath, args: [memoryBin], env: { MEMORY_FILE_PATH: path.join(dir, 'b.jsonl') }, prefix: 'other_' },
  };
}

/**
 * Through the gateway of memoryUpstreams, `client` seeing the memory group only: the other
 * upstream's tools are unknown outside and inside a program, by prefix, computed name, bare name
 * or a dotted one; its own are called.
 */
export async function assertOtherPrefixUnknown(client) {
  await assert.rejects(client.callTool({ name: 'call_tool', arguments: { name: 'other_read_graph', arguments: {} } }), /Unknown tool/);
  const r = await runCode(client, `
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
}

/**
 * The audit `records` of run `runId`, whose program called `items` (sorted): each an ordinary
 * allowed use marked via run_code (in `view`, when given), and the run itself a use too.
 */
export function assertAudited(records, runId, items, view) {
  const mine = records.filter((x) => x.run === runId);
  assert.deepEqual(mine.map((x) => x.item).sort(), items);
  for (const x of mine) {
    assert.equal(x.via, 'run_code');
    assert.equal(x.decision, 'allowed');
    if (view) assert.match(x.view, view);
  }
  assert.ok(records.some((x) => x.item === 'run_code' && !x.via), 'the run itself is a use too');
}
