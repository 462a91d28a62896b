// What a rate limit costs the Worker (issue 42 item 6; a script, not a test): `wrangler dev` on
// 127.0.0.1 serving a 1,000-tool catalog, under wrk (stateless 2026-07-28 tools/call of `echo`,
// bench/wrk-list.lua) without a limit, then with one rate limit every call counts against (never
// reached: tokens leased from the limit's Durable Object, worker/src/limiter.rs),
// alternated ROUNDS times (default 2). Worker logs are on in both (worker/src/log.rs writes its
// JSON lines whatever the configuration). Prints one JSON line a run and the best of each.
//   node bench/operate-worker.mjs [SECONDS] [CONNECTIONS]     (needs scripts/build.sh first)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
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

const rows = [];
try {
  for (let r = 0; r < rounds; r++) {
    for (const [label, doc] of [['off', plain], ['limit', limited]]) {
      const server = await startWith(doc);
      try {
        wrk(server.url, 3);
        const x = wrk(server.url, seconds);
        rows.push({ label, ...x });
        console.log(JSON.stringify({ label, rps: x.rps, p50: x.p50, p99: x.p99, errors: x.errors }));
      } finally {
        await server.stop();
      }
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
const best = (l) => rows.filter((x) => x.label === l).sort((a, b) => b.rps - a.rps)[0];
const off = best('off');
const lim = best('limit');
console.log(`best: no limit ${Math.round(off.rps)} req/s p99 ${off.p99} ms; one limit ${Math.round(lim.rps)} req/s p99 ${lim.p99} ms: ${(100 * lim.rps / off.rps).toFixed(1)}% of the throughput, p99 x${(lim.p99 / off.p99).toFixed(2)}`);
