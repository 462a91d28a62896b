// What operating costs the Worker (issue 42 item 6; a script, not a test): `wrangler dev` on
// 127.0.0.1 serving a 1,000-tool catalog, under wrk (stateless 2026-07-28 requests,
// bench/wrk-list.lua, 32 connections): `tools/call` of `echo` (a use: what the audit, the metrics
// and the limit act on) and a filtered `tools/list` (no use: none of them runs), each with
//   off    no audit, no rate limit, and the Analytics Engine dataset unbound (worker/wrangler.toml
//          without its [[analytics_engine_datasets]] block): the log lines of worker/src/telemetry/log.rs
//          alone, written on failures only;
//   limit  one rate limit every call counts against (never reached: tokens leased from the
//          limit's Durable Object, worker/src/operate/limiter.rs), nothing else;
//   audit  the audit alone (dataset unbound); metrics: the dataset bound alone;
//   four   item 6's four parts as the native server's benchmark has them (scripts/bench-operate.sh
//          "all four"): logs at info (worker/src/telemetry/log.rs's lines, on failures and events: none per
//          request), metrics (the dataset bound: a data point per use, miniflare's local
//          Analytics Engine), traces sampled at 10% (the platform's in a Worker, `[observability]
//          head_sampling_rate = 0.1`, outside the isolate and not run by `wrangler dev`: no code
//          on the request path) and the limit;
//   all    the four and the audit at info (`"audit": {}`: one JSON line per use on the console,
//          what Workers Logs indexes).
// Run in ROUNDS (default 2) rounds, the order of the labels turned each round. Prints one JSON
// line a run (with the CPU time of wrangler dev's processes per request, which other work on a
// shared machine disturbs less than throughput) and a table: each label against off in its
// round (throughput, p99, CPU).
//   node bench/operate-worker.mjs [SECONDS] [CONNECTIONS]     (needs scripts/build.sh first;
//   LABELS="off all", WHAT="call list": subsets)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from '../tests/security/helpers.mjs';
import { startWorker } from '../tests/e2e/harness.mjs';

const seconds = Number(process.argv[2] ?? 10);
const conns = Number(process.argv[3] ?? 32);
const rounds = Number(process.env.ROUNDS ?? 2);
const tools = [{ name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } }];
for (let i = 0; i < 999; i++) tools.push({ name: `tool_${i}`, description: `Tool ${i} does thing ${i % 17}`, inputSchema: { type: 'object' }, groups: [`g${i % 10}`], tags: [i % 3 ? 'read-only' : 'write'] });
const limit = { rates: [{ id: 'all', per: 'principal', rate: 1000000000, perSeconds: 1 }] };
const docs = {
  off: { tools }, limit: { tools, limits: limit }, audit: { tools, audit: {} }, metrics: { tools },
  four: { tools, limits: limit }, all: { tools, limits: limit, audit: {} },
};
const labels = (process.env.LABELS ?? 'off limit all').split(' ');
const whats = (process.env.WHAT ?? 'call list').split(' ');
const work = mkdtempSync(path.join(tmpdir(), 'sieve-opw-'));
// The shipped configuration without its static assets; `off` also without the dataset.
const shipped = readFileSync(path.join(ROOT, 'worker', 'wrangler.toml'), 'utf8')
  .replace(/^\[assets\][^[]*/m, '')
  .replace(/^main = .*$/m, `main = "${path.join(ROOT, 'worker', 'entry.mjs')}"`);
const unbound = shipped.replace(/^\[\[analytics_engine_datasets\]\][^[]*/m, '');
if (unbound === shipped || shipped.includes('[assets]')) throw new Error('worker/wrangler.toml is not the shape this script edits');
writeFileSync(path.join(work, 'bound.toml'), shipped);
writeFileSync(path.join(work, 'unbound.toml'), unbound);
const start = (label) => startWorker({
  extraArgs: ['--config', path.join(work, ['off', 'audit'].includes(label) ? 'unbound.toml' : 'bound.toml'),
    '--var', `MCP_SIEVE_CONFIG:${JSON.stringify(docs[label])}`],
});
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
writeFileSync(path.join(work, 'call.txt'), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' }, _meta: meta } }) + '\n');
writeFileSync(path.join(work, 'list.txt'), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { filter: { groups: ['g3'] }, _meta: meta } }) + '\n');

const wrk = (url, secs, what) => {
  const out = execFileSync('wrk', ['-t2', `-c${conns}`, `-d${secs}s`, '--latency', '-s', 'bench/wrk-list.lua', url],
    { env: { ...process.env, BODIES: path.join(work, `${what}.txt`) }, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
};

/**
 * CPU seconds (user + system, at USER_HZ 100) of the processes in process group `pgid` (the
 * server's: wrangler's Node process, which also prints the isolate's console lines, and workerd),
 * and of its workerd alone (the runtime, where a deployed Worker's CPU is spent).
 */
const cpu = (pgid) => {
  let ticks = 0;
  let runtime = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.split(') ')[1].split(' ');
      if (Number(f[2]) !== pgid) continue;
      const t = Number(f[11]) + Number(f[12]);
      ticks += t;
      if (stat.includes('(workerd)')) runtime += t;
    } catch { /* gone */ }
  }
  return { all: ticks / 100, workerd: runtime / 100 };
};

const signed = (n) => `${n >= 0 ? '+' : ''}${n}`;
const rows = [];
try {
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...labels].reverse() : labels;
    for (const label of order) {
      const server = await start(label);
      try {
        for (const what of whats) {
          wrk(server.url, 3, what);
          const before = cpu(server.pid);
          const x = wrk(server.url, seconds, what);
          const after = cpu(server.pid);
          const cpuUs = Math.round((1e6 * (after.all - before.all)) / x.requests);
          const workerdUs = Math.round((1e6 * (after.workerd - before.workerd)) / x.requests);
          rows.push({ label, what, round: r, cpuUs, workerdUs, ...x });
          console.log(JSON.stringify({ round: r, label, what, rps: x.rps, p50: x.p50, p99: x.p99, errors: x.errors, cpuUs, workerdUs }));
        }
      } finally {
        await server.stop();
      }
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log('\n| request | round | parts | req/s | p99 ms | CPU µs/request (workerd) | throughput vs off | p99 vs off | CPU vs off (workerd) |');
console.log('|---|---:|---|---:|---:|---:|---:|---:|---:|');
for (const what of whats) {
  for (let r = 0; r < rounds; r++) {
    const off = rows.find((x) => x.label === 'off' && x.what === what && x.round === r);
    for (const x of rows.filter((y) => y.what === what && y.round === r)) {
      const vs = off && x !== off;
      console.log(`| ${what === 'call' ? 'tools/call echo' : 'tools/list (filtered)'} | ${r} | ${x.label} | ${Math.round(x.rps)} | ${x.p99} | ${x.cpuUs} (${x.workerdUs}) | ${vs ? `${(100 * x.rps / off.rps).toFixed(1)}%` : '–'} | ${vs ? `×${(x.p99 / off.p99).toFixed(2)}` : '–'} | ${vs ? `${signed(x.cpuUs - off.cpuUs)} (${signed(x.workerdUs - off.workerdUs)}) µs` : '–'} |`);
    }
  }
}
