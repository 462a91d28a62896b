//! Code mode measured (issue 62 item 4; docs/src/code-mode.md "Measured"): what a model reads and
//! how many requests it must write for three multi-step tasks, with direct calls vs search mode vs
//! code mode, and the overhead of `run_code` over the same calls made directly.
//!
//! Tasks run against `mcp-sieve serve` on 127.0.0.1 with the official MCP SDK client (Streamable
//! HTTP): over the demo catalog (the embedded default, catalog/default.json; `/mcp`,
//! `/mcp?mode=search`, `/mcp?mode=code`) and over a gateway in front of
//! @modelcontextprotocol/server-everything (its Streamable HTTP server on loopback, prefix `ev_`).
//! Per task and mode (search and code mode: one find_tools with `detail: "compact"`, limit 5, and
//! one describe_tools of the tools the task needs, as a model would):
//!   - reads: bytes of the JSON the client hands the model — the tool list (every page), and each
//!     answer of find_tools / describe_tools / tools/call / call_tool / run_code, whole;
//!     "content only" counts the answers' `content` (what a client that drops `structuredContent`
//!     and `_meta` passes on), the list whole;
//!   - tokens: ceil(bytes / 4), the demo page's own estimate (web/app.js);
//!   - writes: bytes of the requests the model writes ({name, arguments} of each call, the program
//!     included);
//!   - round trips: requests the model must produce (one per call; a model that batches calls in
//!     one turn makes fewer turns, never fewer requests).
//! The tasks (each one's calls, program and check) are tests/common/code-tasks.mjs, which
//! tests/e2e/code-mode-tasks.test.mjs runs too. The answers are checked (each mode must reach the
//! task's one right answer) so a broken mode cannot look cheap.
//!
//! With --edge the tasks run at the edge too (`wrangler dev`, the gateway's document as its
//! MCP_SIEVE_CONFIG), to show the same bytes come out of the Worker.
//!
//! Overhead (--overhead): p50 over --n runs (after 3 untimed) of one `run_code` making k chained
//! `add` calls vs k direct `tools/call` of `add`, and of the same k calls made at once
//! (`Promise.all`), one session each, client-side wall time; natively
//! (--bin) and, with --edge, at the edge (`wrangler dev` of worker/build through
//! tests/e2e/harness.mjs's startWorker). Every server is stopped by its PID, also on failure.
//!   node bench/code-mode.mjs [--tasks] [--overhead] [--edge] [--bin FILE] [--n 30] [--k 5]
//!                            [--json FILE]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { allTools, freePort, startWorker } from '../tests/e2e/harness.mjs';
import { startEverything } from '../tests/security/helpers.mjs';
import { codeTasks } from '../tests/common/code-tasks.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (f) => argv.includes(f);
const opt = (f, d) => (argv.includes(f) ? argv[argv.indexOf(f) + 1] : d);
const BIN = opt('--bin', path.join(ROOT, 'target', 'debug', 'mcp-sieve'));
const N = Number(opt('--n', 30));
const K = Number(opt('--k', 5));
const stops = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const bytes = (v) => Buffer.byteLength(JSON.stringify(v));
const tokens = (b) => Math.ceil(b / 4);

/** `mcp-sieve serve` on a free loopback port; returns { base, stop } once it answers. */
async function serve(extraArgs = []) {
  const port = await freePort();
  const child = spawn(BIN, ['serve', '--host', '127.0.0.1', '--port', String(port), ...extraArgs], {
    cwd: ROOT, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, HF_HUB_OFFLINE: '1' },
  });
  let log = '';
  child.stderr.on('data', (c) => { log = (log + c).slice(-8000); });
  const exited = new Promise((r) => child.on('exit', r));
  const stop = async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { return; }
    const t = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
    await exited;
    clearTimeout(t);
  };
  stops.push(stop);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return { base, stop, pid: child.pid };
    } catch { await sleep(200); }
  }
  await stop();
  throw new Error(`mcp-sieve serve did not answer on ${base}:\n${log}`);
}

async function connect(url) {
  const client = new Client({ name: 'bench-code-mode', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** A tool's answer as a program sees it: structuredContent, else its content. */
const value = (r) => r.structuredContent ?? r.content;

/** One task in one mode: { reads, writes, trips, result }. */
async function measure(base, mode, task) {
  const suffix = mode === 'direct' ? '' : `?mode=${mode}`;
  const client = await connect(`${base}/mcp${suffix}`);
  let reads = 0;
  let content = 0;
  let writes = 0;
  let trips = 0;
  const ask = async (name, args) => {
    writes += bytes({ name, arguments: args });
    trips += 1;
    const r = await client.callTool({ name, arguments: args });
    reads += bytes(r);
    content += bytes(r.content ?? []);
    if (r.isError) throw new Error(`${mode} ${task.id} ${name}: ${JSON.stringify(r).slice(0, 400)}`);
    return r;
  };
  try {
    const listed = await allTools(client);
    const list = bytes(listed);
    reads += list;
    content += list;
    let result;
    if (mode === 'direct') {
      result = await task.steps(async (name, args) => value(await ask(name, args)));
    } else {
      await ask('find_tools', { query: task.query, detail: 'compact', limit: 5 });
      await ask('describe_tools', { names: task.names });
      if (mode === 'search') {
        result = await task.steps(async (name, args) => value(await ask('call_tool', { name, arguments: args })));
      } else {
        const r = await ask('run_code', { code: task.program });
        result = r.structuredContent.result;
      }
    }
    try { task.check(result); } catch (e) { throw new Error(`${mode} ${task.id}: unexpected answer ${JSON.stringify(result)}: ${e.message}`); }
    return { list, listed: listed.length, reads, tokens: tokens(reads), content, contentTokens: tokens(content), writes, trips, result };
  } finally { await client.close(); }
}

/** The three tasks in the three modes at `base` (one catalog's). */
async function taskRows(where, catalog, base, prefix) {
  const rows = [];
  for (const t of codeTasks(prefix)) {
    for (const mode of ['direct', 'search', 'code']) rows.push({ where, catalog, task: t.id, label: t.label, mode, ...(await measure(base, mode, t)) });
  }
  return rows;
}

async function runTasks() {
  const rows = [];
  const edge = flag('--edge');
  const demo = await serve();
  try { rows.push(...(await taskRows('native', 'demo', demo.base, ''))); } finally { await demo.stop(); }
  if (edge) {
    const w = await startWorker();
    stops.push(w.stop);
    try { rows.push(...(await taskRows('edge', 'demo', w.base, ''))); } finally { await w.stop(); }
  }
  const ev = await startEverything();
  stops.push(ev.stop);
  const dir = fs.mkdtempSync(path.join(ROOT, 'target', 'bench-code-mode-'));
  try {
    const doc = { upstreams: { ev: { url: ev.url, prefix: 'ev_' } } };
    fs.writeFileSync(path.join(dir, 'gateway.json'), JSON.stringify(doc));
    const gw = await serve(['--catalog', path.join(dir, 'gateway.json')]);
    try { rows.push(...(await taskRows('native', 'everything', gw.base, 'ev_'))); } finally { await gw.stop(); }
    if (edge) {
      const w = await startWorker({ extraArgs: ['--var', `MCP_SIEVE_CONFIG:${JSON.stringify(doc)}`] });
      stops.push(w.stop);
      try { rows.push(...(await taskRows('edge', 'everything', w.base, 'ev_'))); } finally { await w.stop(); }
    }
  } finally {
    await ev.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log('\n| where | catalog | task | mode | tools listed | list bytes | bytes read | ~tokens read | content only: bytes | ~tokens | bytes written | round trips |');
  console.log('|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.where} | ${r.catalog} | ${r.task}: ${r.label} | ${r.mode} | ${r.listed} | ${r.list.toLocaleString('en')} | ${r.reads.toLocaleString('en')} | ${r.tokens.toLocaleString('en')} | ${r.content.toLocaleString('en')} | ${r.contentTokens.toLocaleString('en')} | ${r.writes.toLocaleString('en')} | ${r.trips} |`);
  }
  return rows;
}

const p50 = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };

/** p50 of N timed runs of `fn` after 3 untimed. */
async function timed(fn) {
  for (let i = 0; i < 3; i++) await fn();
  const ms = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return { p50: p50(ms), min: Math.min(...ms), max: Math.max(...ms) };
}

/** run_code of k chained adds vs k direct tools/call of add, and run_code of no call, at `base`. */
async function overheadAt(where, base) {
  const direct = await connect(`${base}/mcp`);
  const code = await connect(`${base}/mcp?mode=code`);
  const program = `let t = 0; for (let i = 1; i <= ${K}; i++) t = (await tools.add({ a: t, b: i })).sum; return t;`;
  const want = (K * (K + 1)) / 2;
  try {
    const directK = await timed(async () => {
      let t = 0;
      for (let i = 1; i <= K; i++) t = (await direct.callTool({ name: 'add', arguments: { a: t, b: i } })).structuredContent.sum;
      if (t !== want) throw new Error(`direct adds gave ${t}`);
    });
    const codeK = await timed(async () => {
      const r = await code.callTool({ name: 'run_code', arguments: { code: program } });
      if (r.structuredContent?.result !== want) throw new Error(`run_code gave ${JSON.stringify(r).slice(0, 300)}`);
    });
    const all = `return (await Promise.all(Array.from({ length: ${K} }, (_, i) => tools.add({ a: i + 1, b: 0 })))).reduce((t, r) => t + r.sum, 0);`;
    const codeAll = await timed(async () => {
      const r = await code.callTool({ name: 'run_code', arguments: { code: all } });
      if (r.structuredContent?.result !== want) throw new Error(`run_code gave ${JSON.stringify(r).slice(0, 300)}`);
    });
    const code0 = await timed(async () => {
      const r = await code.callTool({ name: 'run_code', arguments: { code: 'return 1' } });
      if (r.structuredContent?.result !== 1) throw new Error(`run_code gave ${JSON.stringify(r).slice(0, 300)}`);
    });
    const direct1 = await timed(async () => { await direct.callTool({ name: 'add', arguments: { a: 1, b: 2 } }); });
    return { where, k: K, n: N, directK, codeK, codeAll, code0, direct1 };
  } finally {
    await direct.close();
    await code.close();
  }
}

async function runOverhead() {
  const out = [];
  const s = await serve();
  try { out.push(await overheadAt(`native (${path.relative(ROOT, BIN)})`, s.base)); } finally { await s.stop(); }
  if (flag('--edge')) {
    const w = await startWorker();
    stops.push(w.stop);
    try { out.push(await overheadAt('edge (wrangler dev, worker/build)', w.base)); } finally { await w.stop(); }
  }
  const f = (x) => x.toFixed(1);
  console.log(`\n| where | ${K} direct tools/call | run_code, ${K} calls | run_code overhead | run_code, ${K} calls at once | 1 direct tools/call | run_code, no call |`);
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of out) {
    console.log(`| ${r.where} | ${f(r.directK.p50)} ms | ${f(r.codeK.p50)} ms | ${f(r.codeK.p50 - r.directK.p50)} ms | ${f(r.codeAll.p50)} ms | ${f(r.direct1.p50)} ms | ${f(r.code0.p50)} ms |`);
  }
  return out;
}

async function main() {
  const report = { date: new Date().toISOString(), bin: BIN, built: fs.statSync(BIN).mtime.toISOString(), loadavg: (await import('node:os')).loadavg() };
  if (flag('--tasks') || !flag('--overhead')) report.tasks = await runTasks();
  if (flag('--overhead') || !flag('--tasks')) report.overhead = await runOverhead();
  console.log(`\n${report.date}; load average ${report.loadavg.map((x) => x.toFixed(1)).join(' ')} at the start; ${BIN} built ${report.built}`);
  if (opt('--json')) fs.writeFileSync(opt('--json'), JSON.stringify(report, null, 2));
}

const cleanup = async () => { for (const s of stops) { try { await s(); } catch { /* gone */ } } };
process.on('SIGINT', () => cleanup().then(() => process.exit(130)));
process.on('SIGTERM', () => cleanup().then(() => process.exit(143)));
main().catch(async (e) => { console.error(e); await cleanup(); process.exit(1); });
