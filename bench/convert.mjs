// Times the package's calls whose values cross the JS/wasm boundary, in Node, comparing built
// package folders in one process: `node bench/convert.mjs DIR_A [DIR_B]` (e.g. a build with JSON
// text across the boundary and one with serde-wasm-bindgen). Rounds alternate between the
// builds and the minimum is kept, so a shared, loaded machine skews both alike. Small calls run
// on a 50-tool catalog, so the conversion is most of what they cost; the big lists on 1,000 tools.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { synthCatalog } from './web/synth.js';

const dirs = process.argv.slice(2).map((d) => path.resolve(d));
if (dirs.length === 0) dirs.push(path.resolve('pkg'));
const mods = await Promise.all(dirs.map((d) => import(pathToFileURL(path.join(d, 'node.js')).href)));

const small = synthCatalog(7, 50);
const big = synthCatalog(7, 1000);
const filter = { groups: ['g1', 'g14'], excludeTags: ['t3'], concerns: { security: 'high' },
  expr: { not: { any: [{ tag: 't5' }, { name: 'delete_*' }] } } };
const tasks = Array.from({ length: 200 }, (_, i) => ({
  taskId: `task-${i}`, status: ['working', 'completed', 'failed'][i % 3],
  createdAt: new Date(Date.UTC(2025, 10, 20, 10, 0, i)).toISOString(), ttl: 60000,
}));
const query = { status: ['working'], orderBy: 'createdAt', order: 'asc', createdAfter: '2025-11-20T10:00:00Z' };

const cases = [
  ['filter(filter): small filter in', (m, s) => s.small.filter(filter)],
  ['facets(filter): facets out', (m, s) => s.small.facets(filter)],
  ['resolveConcerns: config in, result out', (m, s) => s.small.resolveConcerns({ security: 'high', cost: 'high' })],
  ['groups(): 24 groups out', (m, s) => s.small.groups()],
  ['concerns(): 2 declarations out', (m, s) => s.small.concerns()],
  ['Sieve.size(filter): size out', (m) => m.Sieve.size(filter)],
  ['filterTasks: 200 tasks + query in', (m) => m.filterTasks(tasks, query)],
  ['Sieve.fromCatalog: 1,000 tools in', (m) => m.Sieve.fromCatalog(big)],
  ['list({}): 1,000 tools out', (m, s) => s.big.list({})],
];

const state = mods.map((m) => ({ small: m.Sieve.fromCatalog(small), big: m.Sieve.fromCatalog(big) }));
const perCall = (fn, n) => {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  return ((performance.now() - t0) * 1000) / n;
};
console.log(`${'call'.padEnd(40)} ${dirs.map((d) => path.basename(d).padStart(14)).join(' ')}  (µs per call, min of rounds)`);
for (const [name, fn] of cases) {
  const calls = mods.map((m, i) => () => fn(m, state[i]));
  let n = 1; // calls per round: doubled until a round takes 20 ms
  while (perCall(calls[0], n) * n < 20_000) n *= 2;
  const best = calls.map(() => Infinity);
  for (let r = 0; r < 9; r++) calls.forEach((c, i) => { best[i] = Math.min(best[i], perCall(c, n)); });
  console.log(`${name.padEnd(40)} ${best.map((b) => b.toFixed(2).padStart(14)).join(' ')}`);
}
