// Reads criterion's estimates under target/criterion and prints the benchmark table of docs/src/performance.md.
import { readFileSync, existsSync } from 'node:fs';

const est = (group, impl, n) => {
  const f = `target/criterion/${group}/${impl}/${n}/new/estimates.json`;
  return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')).median.point_estimate : NaN; // ns
};
const bytes = (n) => {
  const f = `target/criterion/assemble/index/${n}/new/benchmark.json`;
  return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')).throughput?.Bytes ?? NaN : NaN;
};
const t = (ns) => (ns < 1e3 ? `${ns.toFixed(0)} ns` : ns < 1e6 ? `${(ns / 1e3).toFixed(1)} µs` : `${(ns / 1e6).toFixed(1)} ms`);
const x = (a, b) => `${Math.round(b / a).toLocaleString('en-US')}×`;
const gbs = (b, ns) => `${(b / ns).toFixed(2)} GB/s`;

console.log('| tools | filter: index | filter: naive | speed-up | tools/list: index | throughput | tools/list: naive | speed-up |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const n of [100, 1000, 10000, 100000]) {
  const [fi, fn, ai, an] = [est('filter', 'index', n), est('filter', 'naive', n), est('assemble', 'index', n), est('assemble', 'naive', n)];
  console.log(`| ${n.toLocaleString('en-US')} | ${t(fi)} | ${t(fn)} | ${x(fi, fn)} | ${t(ai)} | ${gbs(bytes(n), ai)} | ${t(an)} | ${x(ai, an)} |`);
}
console.log('\nFull unfiltered list assembly (all fragments concatenated):');
for (const n of [10000, 100000]) {
  const f = `target/criterion/assemble_full/index/${n}/new/benchmark.json`;
  const b = existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')).throughput?.Bytes : NaN;
  const ai = est('assemble_full', 'index', n);
  console.log(`- ${n.toLocaleString('en-US')} tools: ${t(ai)} (${gbs(b, ai)}), naive ${t(est('assemble_full', 'naive', n))} (${x(ai, est('assemble_full', 'naive', n))})`);
}
