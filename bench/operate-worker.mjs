// What a rate limit costs the Worker (issue 42 item 6; a script, not a test): `wrangler dev` on
// 127.0.0.1 serving a 1,000-tool catalog, under wrk (stateless 2026-07-28 tools/call of `echo`,
// bench/wrk-list.lua) without a limit, then with one rate limit every call counts against (never
// reached: tokens leased from the limit's Durable Object, worker/src/limiter.rs),
// alternated ROUNDS times (default 2), the one without a limit first in even rounds and second in
// odd ones. Worker logs are on in both (worker/src/log.rs writes its JSON lines whatever the
// configuration). Prints one JSON line a run (with the CPU time of wrangler dev's processes per
// request, which other work on a shared machine disturbs less than throughput), each round's
// pair (the limit against the run without it just before or after) and the best of each.
//   node bench/operate-worker.mjs [SECONDS] [CONNECTIONS]     (needs scripts/build.sh first)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startWith } from '../tests/security/helpers.mjs';

const seconds = Number(process.argv[2] ?? 10);
const conns = Number(process.argv[3] ?? 32);
const rounds = Number(process.env.ROUNDS ?? 2);
const tools = [{ name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } }];
for (let i = 0; i < 999; i++) tools.push({ name: `tool_${i}`, description: `Tool ${i} does thing ${i % 17}`, inputSchema: { type: 'object' }, groups: [`g${i % 10}`], tags: [i % 3 ? 'read-only' : 'write'] });
const plain = { tools };
const limited = { tools, limits: { rates: [{ id: 'all', per: 'principal', rate: 1000000000, perSeconds: 1 }] } };
const work = mkdtempSync(path.join(tmpdir(), 'sieve-opw-'));
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
writeFileSync(path.join(work, 'call.txt'), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' }, _meta: meta } }) + '\n');

const wrk = (url, secs) => {
  const out = execFileSync('wrk', ['-t2', `-c${conns}`, `-d${secs}s`, '-s', 'bench/wrk-list.lua', url],
    { env: { ...process.env, BODIES: path.join(work, 'call.txt') }, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
};

/** CPU seconds (user + system, at USER_HZ 100) of the processes in process group `pgid` (the server's). */
const cpu = (pgid) => {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[2]) === pgid) ticks += Number(f[11]) + Number(f[12]);
    } catch { /* gone */ }
  }
  return ticks / 100;
};

const rows = [];
try {
  for (let r = 0; r < rounds; r++) {
    const both = [['off', plain], ['limit', limited]];
    for (const [label, doc] of r % 2 ? both.reverse() : both) {
      const server = await startWith(doc);
      try {
        wrk(server.url, 3);
        const before = cpu(server.pid);
        const x = wrk(server.url, seconds);
        const cpuUs = Math.round((1e6 * (cpu(server.pid) - before)) / x.requests);
        rows.push({ label, round: r, cpuUs, ...x });
        console.log(JSON.stringify({ label, rps: x.rps, p50: x.p50, p99: x.p99, errors: x.errors, cpuUs }));
      } finally {
        await server.stop();
      }
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
for (let r = 0; r < rounds; r++) {
  const [o, l] = ['off', 'limit'].map((label) => rows.find((x) => x.label === label && x.round === r));
  console.log(`round ${r}: one limit ${(100 * l.rps / o.rps).toFixed(1)}% of the throughput, p99 x${(l.p99 / o.p99).toFixed(2)}, CPU ${l.cpuUs - o.cpuUs >= 0 ? '+' : ''}${l.cpuUs - o.cpuUs} us a request (${o.cpuUs} without)`);
}
const best = (l) => rows.filter((x) => x.label === l).sort((a, b) => b.rps - a.rps)[0];
const off = best('off');
const lim = best('limit');
console.log(`best: no limit ${Math.round(off.rps)} req/s p99 ${off.p99} ms; one limit ${Math.round(lim.rps)} req/s p99 ${lim.p99} ms: ${(100 * lim.rps / off.rps).toFixed(1)}% of the throughput, p99 x${(lim.p99 / off.p99).toFixed(2)}`);
