// What idle 2025-11-25 sessions holding their GET stream open cost the Worker in gateway mode (a
// script, not a test): the Worker under `wrangler dev` fronting @modelcontextprotocol/server-
// everything; SESSIONS (default 10) SDK v2 clients each open a session, make one call (their
// upstream session and its GET stream open) and then sit idle with their own GET stream open.
// The CPU time of the Worker's process group (workerd and wrangler, from /proc, in clock ticks)
// is read over SECONDS (default 10) with no session, then over as long with the idle sessions.
//   node bench/idle-streams.mjs [SESSIONS] [SECONDS]      (needs scripts/build.sh first)
import { readFileSync, readdirSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startEverything, startWith, sleep } from '../tests/security/helpers.mjs';

const sessions = Number(process.argv[2] ?? 10);
const seconds = Number(process.argv[3] ?? 10);
const TICK_MS = 10; // CLK_TCK 100

/** CPU ticks (user + system) of every process in group `pgid`. */
function groupTicks(pgid) {
  let ticks = 0;
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let stat;
    try { stat = readFileSync(`/proc/${p}/stat`, 'utf8'); } catch { continue; }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(f[2]) === pgid) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks;
}

async function cpuMs(pgid) {
  const before = groupTicks(pgid);
  await sleep(seconds * 1000);
  return (groupTicks(pgid) - before) * TICK_MS;
}

const everything = await startEverything();
const server = await startWith({ upstream: { url: everything.url } });
const clients = [];
try {
  await sleep(2000);
  const idle = await cpuMs(server.pid);
  for (let i = 0; i < sessions; i++) {
    const c = new Client({ name: 'idle-streams', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    await c.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    await c.callTool({ name: 'echo', arguments: { message: `session ${i}` } });
    clients.push(c);
  }
  await sleep(2000);
  const open = await cpuMs(server.pid);
  const per = (open - idle) / sessions / seconds;
  console.log(`Worker process group CPU over ${seconds} s: ${idle} ms with no session, ${open} ms with ${sessions} idle sessions holding their GET stream`);
  console.log(`per idle session: ${per.toFixed(2)} ms of CPU per second (${(per / 10).toFixed(3)}% of a core)`);
} finally {
  for (const c of clients) await c.close().catch(() => {});
  await server.stop();
  await everything.stop();
}
