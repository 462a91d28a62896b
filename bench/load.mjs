//! Bounded loopback load of `tools/list` with random filters: every target gets the same filter
//! sequence, for a fixed time per concurrency level, over keep-alive connections on 127.0.0.1.
//! Checks first that mcp-sieve and the reference return the same tools for the same filters.
//!   node bench/load.mjs --target name=URL:era ... --seconds 10 --concurrency 1,32 --catalog FILE
//! `era` is `modern` (2026-07-28, stateless: version in _meta, Mcp-Method header), `legacy`
//! (initialize once, then Mcp-Session-Id on every request) or `floor` (sent like `modern`, left
//! out of the same-results check: a server that does no MCP work, to show the transport's cost).
import http from 'node:http';
import { parseArgs } from 'node:util';
import { randomFilters } from './filters.mjs';
import { call, initialize, stateless } from '../tests/common/mcp-raw.mjs';

const { values } = parseArgs({
  options: {
    target: { type: 'string', multiple: true },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '1,32' },
    check: { type: 'string', default: '' },
    json: { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const WARMUP = Number(values.warmup);
const LEVELS = values.concurrency.split(',').map(Number);
const FILTERS = randomFilters(1904, 4096);
const BENCH = { name: 'bench', version: '1' };

/** A client of one target: `request(filter)` sends one tools/list over `agent`. */
async function client(spec, agent) {
  const [name, rest] = spec.split(/=(.*)/s);
  const era = rest.match(/:(modern|legacy|floor)$/)?.[1] ?? 'legacy';
  const url = rest.replace(/:(modern|legacy|floor)$/, '');
  if (era !== 'legacy') {
    return { name, era, url, request: (filter) => stateless(url, 'tools/list', { filter }, { agent, clientInfo: BENCH }) };
  }
  const { sessionId } = await initialize(url, { agent, clientInfo: BENCH }).catch((e) => {
    throw new Error(`${name}: ${e.message}`);
  });
  return { name, era, url, request: (filter) => call(url, sessionId, 'tools/list', { filter }, { agent }) };
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Runs `c` loops against `cl` for `seconds`; returns requests/s and latency percentiles (ms). */
async function measure(cl, c, seconds) {
  const lat = [];
  let errors = 0;
  let next = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: c }, async () => {
    while (performance.now() < end) {
      const f = FILTERS[next++ % FILTERS.length];
      const s = performance.now();
      try {
        const r = await cl.request(f);
        if (r.status !== 200 || !r.body.includes('"tools"')) errors++;
      } catch { errors++; }
      lat.push(performance.now() - s);
    }
  }));
  const elapsed = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  return { requests: lat.length, errors, rps: lat.length / elapsed, p50: pct(lat, 50), p99: pct(lat, 99) };
}

/** Same filters → same tool names on the first page, on every target. */
async function checkSame(clients, n) {
  let compared = 0;
  for (const f of FILTERS.slice(0, n)) {
    const pages = await Promise.all(clients.map(async (cl) => {
      const r = await cl.request(f);
      const m = r.response ?? { error: r.body.slice(0, 300) };
      if (!m.result) throw new Error(`${cl.name}: ${JSON.stringify(m.error ?? m).slice(0, 300)} for filter ${JSON.stringify(f)}`);
      return { names: m.result.tools.map((t) => t.name).join(','), more: Boolean(m.result.nextCursor) };
    }));
    for (const p of pages.slice(1)) {
      if (p.names !== pages[0].names || p.more !== pages[0].more) {
        throw new Error(`targets disagree for filter ${JSON.stringify(f)}:\n${clients.map((c, i) => `${c.name}: ${pages[i].names.slice(0, 200)} more=${pages[i].more}`).join('\n')}`);
      }
    }
    compared++;
  }
  return compared;
}

const results = [];
const agents = [];
const clients = [];
for (const spec of values.target ?? []) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(...LEVELS) });
  agents.push(agent);
  clients.push(await client(spec, agent));
}
const serving = clients.filter((c) => c.era !== 'floor');
const checked = await checkSame(serving, Number(values.check || 200));
console.log(`checked: ${checked} random filters give the same first page on ${serving.map((c) => c.name).join(', ')}`);
for (const c of SECONDS > 0 ? LEVELS : []) {
  for (const cl of clients) {
    await measure(cl, c, WARMUP);
    const r = { target: cl.name, era: cl.era, concurrency: c, ...(await measure(cl, c, SECONDS)) };
    results.push(r);
    console.log(`${r.target.padEnd(22)} c=${String(c).padEnd(3)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (${r.requests} requests, ${r.errors} errors)`);
  }
}
for (const a of agents) a.destroy();
if (values.json) (await import('node:fs')).writeFileSync(values.json, JSON.stringify({ checked, results }, null, 2));
