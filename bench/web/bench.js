// Times `Sieve.filter` (wasm, positions back to JS) and the plain-JS implementation over the same
// 10,000-tool catalog and filters, in batches (timers in the browser are coarse), and publishes
// the medians as `window.benchResult` for scripts/bench-web.sh.

import init, { Sieve } from '../../pkg/mcp_sieve.js';
import { synthCatalog } from './synth.js';
import { prepare, plainFilter } from './plain.js';

const TOOLS = 10_000;
const BATCH = 25;
const BATCHES = 120;
const FILTERS = [
  { groups: ['g1', 'g5'], tags: ['t3'], concerns: { security: 'high' } },
  { excludeTags: ['t1', 't2'], concerns: { cost: 'minimal', security: 'low' } },
  { groups: ['g0'] },
  { tags: ['t2', 't7'] },
  { namePatterns: ['list_*'], concerns: { security: 'medium' } },
  {},
];

/** Median milliseconds per call of `fn` over the filters, in batches. */
function time(fn) {
  for (let i = 0; i < 200; i++) fn(FILTERS[i % FILTERS.length]);
  const perCall = [];
  for (let b = 0; b < BATCHES; b++) {
    const t0 = performance.now();
    for (let i = 0; i < BATCH; i++) fn(FILTERS[(b * BATCH + i) % FILTERS.length]);
    perCall.push((performance.now() - t0) / BATCH);
  }
  perCall.sort((a, b) => a - b);
  return perCall[Math.floor(perCall.length / 2)];
}

async function main() {
  await init();
  const doc = synthCatalog(42, TOOLS);
  const t0 = performance.now();
  const sieve = Sieve.fromCatalog(doc);
  const loadMs = performance.now() - t0;
  const prepared = prepare(doc);
  // Same semantics: the same positions for every filter.
  const agree = FILTERS.map((f) => {
    const a = sieve.filter(f);
    const b = plainFilter(prepared, f);
    return a.count === b.count && a.indices.every((x, i) => x === b.indices[i]);
  });
  if (!agree.every(Boolean)) throw new Error(`wasm and plain JS disagree on filters ${agree.map((x, i) => (x ? '' : i)).join(' ')}`);
  const counts = FILTERS.map((f) => sieve.filter(f).count);
  const wasm = time((f) => sieve.filter(f));
  const plain = time((f) => plainFilter(prepared, f));
  const list = time((f) => sieve.list(f));
  const perFilter = FILTERS.map((f) => ({
    filter: JSON.stringify(f),
    wasmMs: time(() => sieve.filter(f)),
    plainJsMs: time(() => plainFilter(prepared, f)),
  }));
  const result = { tools: TOOLS, filters: FILTERS.length, counts, loadMs, wasmFilterMs: wasm, plainJsMs: plain, speedup: plain / wasm, wasmListMs: list, perFilter };
  window.benchResult = result;
  document.getElementById('out').textContent = JSON.stringify(result, null, 2);
}

main().catch((e) => { window.benchError = String(e?.stack ?? e); document.getElementById('out').textContent = window.benchError; });
