//! Prints the results of scripts/bench-load.sh (and scripts/bench-gateway.sh) as a markdown
//! table, with each target's share of its floor, its p50 and work above that floor, and the
//! ratios between mcp-sieve and its peers.
//!   node bench/wrk-table.mjs RESULTS.jsonl CORES
//! Each line of RESULTS.jsonl is one run of a target: { key, label, round (1, 2, ...), floor
//! (the key of its floor; null for a floor itself; "none" for a target no floor applies to, such
//! as a Node server), cpu (seconds of CPU its server's processes used during the measured run),
//! busy (share of the machine's CPU busy during the run, 0..1), wrk (bench/wrk-list.lua's
//! summary: requests, rps, mean, p50, p99 in ms, errors, bytes per response) }.
import fs from 'node:fs';

const [file, coresArg] = process.argv.slice(2);
const CORES = Number(coresArg);
const runs = fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)).map((l) => ({ ...l.wrk, ...l }));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
// One row per target over its rounds: medians of rates and latencies, sums of requests, errors
// and CPU; `shares` is its share of its floor in each round (the floor run in the same round).
const rows = [...new Set(runs.map((r) => r.key))].map((key) => {
  const own = runs.filter((r) => r.key === key);
  const m = (f) => median(own.map(f));
  const sum = (f) => own.reduce((a, r) => a + f(r), 0);
  const floorOf = (r) => runs.find((x) => x.key === r.floor && x.round === r.round);
  const shares = own.map((r) => (floorOf(r) ? r.rps / floorOf(r).rps : NaN));
  const p50s = own.map((r) => (floorOf(r) ? r.p50 - floorOf(r).p50 : NaN));
  return {
    ...own[0], rps: m((r) => r.rps), p50: m((r) => r.p50), p99: m((r) => r.p99), mean: m((r) => r.mean),
    busy: m((r) => r.busy), requests: sum((r) => r.requests), errors: sum((r) => r.errors), cpu: sum((r) => r.cpu),
    rounds: own.length, shares, p50Above: median(p50s),
  };
});
const byKey = new Map(rows.map((r) => [r.key, r]));
const cpuPerReq = (r) => (r.cpu * 1000) / r.requests; // ms of server CPU per request
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');

console.log('| target | req/s | p50 ms | p99 ms | mean ms | KB/resp | errors | CPU busy | % of floor | p50 above floor, ms | server CPU ms/req | work above floor: CPU ms/req | (1/rps − 1/floor rps) × cores, ms | mean latency above floor, ms |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const isFloor = r.floor === null;
  const f = isFloor ? r : byKey.get(r.floor); // undefined: no floor applies, or it was not run
  const pct = f ? `${fmt(100 * median(r.shares), 0)}%${r.rounds > 1 ? ` (${r.shares.map((x) => fmt(100 * x, 0)).join(', ')})` : ''}` : '–';
  const work = f ? cpuPerReq(r) - cpuPerReq(f) : NaN;
  const model = f ? (1000 / r.rps - 1000 / f.rps) * CORES : NaN;
  const added = f ? r.mean - f.mean : NaN;
  console.log(`| ${r.label} | ${int(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.mean)} | ${fmt(r.bytes / 1024, 1)} | ${r.errors} | ${fmt(100 * r.busy, 0)}% | ${isFloor ? 'floor' : pct} | ${isFloor || !f ? '–' : fmt(r.p50Above, 3)} | ${fmt(cpuPerReq(r), 3)} | ${fmt(work, 3)} | ${fmt(model, 3)} | ${fmt(added)} |`);
}
const floorText = (r) => byKey.get(r.floor)?.label ?? `${r.floor} (not run)`;
const measured = rows.filter((r) => r.floor !== null && r.floor !== 'none').map((r) => `"${r.label}" against "${floorText(r)}"`);
const unfloored = rows.filter((r) => r.floor === 'none').map((r) => `"${r.label}"`);
const floors = `Floors: ${measured.join('; ') || 'none'}${unfloored.length ? `; no floor applies to ${unfloored.join(', ')}` : ''}. "p50 above floor" is the median over the rounds of the p50 minus the floor's p50 in the same round.`;
console.log(`
Each figure is the median over ${rows[0]?.rounds ?? 0} round(s) (every target once per round, in turn); a share of the floor is the median of the shares within each round (in brackets); requests, errors and CPU are summed over the rounds.
${floors}
Work above the floor, three ways (ms per request): "CPU ms/req" is the CPU time the server's own processes (its process groups: wrangler dev's with workerd and wrangler's proxy, node's, or mcp-sieve's; in the gateway benchmark a gateway's upstream too) used during the run divided by the requests served, minus the same for the floor: measured, and valid under saturation. "(1/rps − 1/floor rps) × cores" assumes the ${CORES} cores are saturated and shared alike with wrk (a model). "mean latency above floor" is the client-side mean latency minus the floor's (with 32 connections always busy it is 32 × (1/rps − 1/floor rps): queueing included, not work).`);

let said = false;
const ratio = (a, b, what) => {
  const x = byKey.get(a);
  const y = byKey.get(b);
  if (!x || !y) return;
  const fx = x.floor === null ? x : byKey.get(x.floor);
  const fy = y.floor === null ? y : byKey.get(y.floor);
  const work = fx && fy ? `; work above floor ${fmt(cpuPerReq(x) - cpuPerReq(fx), 3)} vs ${fmt(cpuPerReq(y) - cpuPerReq(fy), 3)} CPU ms/req` : '';
  if (!said) console.log('\nRatios:');
  said = true;
  console.log(`- ${what}: ${fmt(x.rps / y.rps)}× the requests/s (${int(x.rps)} vs ${int(y.rps)}), p99 ${fmt(x.p99)} vs ${fmt(y.p99)} ms (${fmt(x.p99 / y.p99)}×), p50 ${fmt(x.p50)} vs ${fmt(y.p50)} ms${work}`);
};
ratio('worker-stateless', 'handler', 'Worker (2026-07-28) vs SDK v2 + createMcpHandler (stateless)');
ratio('worker-session', 'mcpagent', 'Worker (sessions) vs McpAgent (sessions)');
ratio('worker-session4', 'mcpagent4', 'Worker (4 sessions, 32 connections) vs McpAgent (the same)');
ratio('worker-stateless', 'base-stateless', 'this build vs BASE (stateless)');
ratio('worker-session', 'base-session', 'this build vs BASE (32 sessions)');
ratio('worker-session4', 'base-session4', 'this build vs BASE (4 sessions)');
ratio('worker-session', 'node-ref', 'Worker (sessions) vs the official SDK in Node (sessions)');
ratio('worker-stateless', 'node-ref', 'Worker (2026-07-28) vs the official SDK in Node (sessions)');
// Shares against another floor than a target's own, within each round: the run command's way of
// serving (wrangler's default log level) against the quiet one.
const against = (a, f, what) => {
  const own = runs.filter((r) => r.key === a);
  const shares = own.map((r) => r.rps / (runs.find((x) => x.key === f && x.round === r.round)?.rps ?? NaN)).filter(Number.isFinite);
  if (!shares.length) return;
  if (!said) console.log('\nRatios:');
  said = true;
  console.log(`- ${what}: ${fmt(100 * median(shares), 0)}% (${shares.map((x) => fmt(100 * x, 0)).join(', ')}) of "${byKey.get(f).label}" in the same round`);
};
against('worker-run', 'floor-assets', 'Worker as run.sh serves it (default log level) against the quiet floor with assets');
against('floor-run', 'floor-assets', 'floor at the default log level against the same floor quiet');
against('worker-run', 'worker-assets', 'Worker as run.sh serves it against the Worker as shipped, quiet');
for (const r of rows) {
  if (r.errors > 0) console.log(`! ${r.label}: ${r.errors} errors (socket errors, timeouts or HTTP statuses >= 400) out of ${r.requests} requests`);
}
