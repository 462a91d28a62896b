//! Profiles the Worker's request path in workerd: connects to `wrangler dev`'s inspector (V8's
//! DevTools protocol), samples the isolate's CPU while a load generator runs, and prints where
//! the time goes — self time by function (the wasm functions carry their Rust names), time inside
//! the stages of the request path, and CPU time per request (busy samples ÷ requests answered).
//! Workers' clocks do not advance during a request, so the sampling profiler is the way to see
//! inside one. A script, not a test; scripts/bench-profile.sh drives it.
//!   node --experimental-websocket bench/profile-worker.mjs INSPECTOR_PORT -- wrk ARGS...
import { spawn } from 'node:child_process';

const [port, dashdash, ...load] = process.argv.slice(2);
if (!port || dashdash !== '--' || load.length === 0) {
  console.error('usage: node --experimental-websocket bench/profile-worker.mjs INSPECTOR_PORT -- COMMAND ARGS...');
  process.exit(2);
}

const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
const target = targets.find((t) => t.webSocketDebuggerUrl);
if (!target) throw new Error(`no debuggable target at 127.0.0.1:${port}: ${JSON.stringify(targets)}`);
// wrangler's inspector proxy wants an Origin on loopback.
const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { Origin: 'http://127.0.0.1' } });
await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
let next = 1;
const pending = new Map();
ws.onmessage = (event) => {
  const m = JSON.parse(event.data);
  if (m.id && pending.has(m.id)) {
    pending.get(m.id)(m);
    pending.delete(m.id);
  }
};
const send = (method, params = {}) => new Promise((resolve, reject) => {
  const id = next++;
  pending.set(id, (m) => (m.error ? reject(new Error(`${method}: ${JSON.stringify(m.error)}`)) : resolve(m.result)));
  ws.send(JSON.stringify({ id, method, params }));
});

await send('Profiler.enable');
await send('Profiler.setSamplingInterval', { interval: 100 });
await send('Profiler.start');
const output = await new Promise((resolve, reject) => {
  const child = spawn(load[0], load.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.on('error', reject);
  child.on('exit', () => resolve(out));
});
const { profile } = await send('Profiler.stop');
const heap = await send('Runtime.getHeapUsage').catch(() => null);
// The source around each anonymous JavaScript function, to tell them apart.
await send('Debugger.enable');
const sources = new Map();
const snippet = async (f) => {
  if (!f.scriptId || f.scriptId === '0') return '';
  if (!sources.has(f.scriptId)) {
    sources.set(f.scriptId, await send('Debugger.getScriptSource', { scriptId: f.scriptId }).then((r) => r.scriptSource.split('\n'), () => []));
  }
  const line = sources.get(f.scriptId)[f.lineNumber] ?? '';
  return line.slice(Math.max(0, f.columnNumber - 70), f.columnNumber + 150).replace(/\s+/g, ' ');
};
// PROFILE_JSON=FILE keeps the raw profile (its nodes with their line ticks) and the sources of
// its JavaScript (FILE.sources.json), for a look line by line.
if (process.env.PROFILE_JSON) {
  const fs = await import('node:fs');
  fs.writeFileSync(process.env.PROFILE_JSON, JSON.stringify(profile));
  const scripts = {};
  for (const n of profile.nodes) {
    const f = n.callFrame;
    if (f.url.endsWith('.js') && !(f.url in scripts)) {
      await snippet(f);
      scripts[f.url] = sources.get(f.scriptId) ?? [];
    }
  }
  fs.writeFileSync(`${process.env.PROFILE_JSON}.sources.json`, JSON.stringify(scripts));
}
const anonymous = new Map();
for (const n of profile.nodes) {
  if (!n.callFrame.functionName && n.callFrame.url) anonymous.set(`${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber + 1}:${n.callFrame.columnNumber + 1}`, await snippet(n.callFrame));
}
// Minified names (one or two letters: the bundler's) are told apart by their source too.
const minified = new Map();
for (const n of profile.nodes) {
  const f = n.callFrame;
  if (f.url && /^[A-Za-z_$]{1,2}$/.test(f.functionName)) minified.set(`${f.functionName} ${f.url.split('/').pop()}`, await snippet(f));
}
ws.close();
process.stdout.write(output);

// Self time per node, then per function; inclusive time per function (counted once per sample).
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const nameOf = (n) => {
  const f = n.callFrame;
  const where = f.url ? ` ${f.url.split('/').pop()}${f.functionName ? '' : `:${f.lineNumber + 1}:${f.columnNumber + 1}`}` : '';
  return `${f.functionName || '(anonymous)'}${f.functionName?.startsWith('(') ? '' : where}`;
};
const self = new Map();
const inclusive = new Map();
let total = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const n = byId.get(id);
  total += us;
  if (n.callFrame.functionName === '(idle)') idle += us;
  const name = nameOf(n);
  self.set(name, (self.get(name) ?? 0) + us);
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const nm = nameOf(byId.get(cur));
    if (seen.has(nm)) continue;
    seen.add(nm);
    inclusive.set(nm, (inclusive.get(nm) ?? 0) + us);
  }
}
const busy = total - idle;
const requests = Number(/(\d+) requests in/.exec(output)?.[1] ?? NaN);
const pct = (us) => `${((100 * us) / busy).toFixed(1)}%`;
const short = (s) => (s.length > 110 ? `${s.slice(0, 107)}...` : s);
console.log(`\nprofile: ${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy (not idle)`);
if (requests) console.log(`CPU per request in the isolate: ${(busy / requests).toFixed(1)} µs (${requests} requests)`);
if (heap) console.log(`isolate JS heap: ${(heap.usedSize / 2 ** 20).toFixed(1)} MiB used of ${(heap.totalSize / 2 ** 20).toFixed(1)} MiB (wasm memory is outside it)`);
console.log('\nself time (share of busy):');
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  const where = name.startsWith('(anonymous) ') ? anonymous.get(name.slice(12)) : minified.get(name);
  console.log(`  ${pct(us).padStart(6)}  ${short(name)}${where ? `  «${where}»` : ''}`);
}
console.log('\ninclusive time of the request path\'s stages (share of busy):');
const stages = [...inclusive].filter(([name]) => /mcp_sieve|fetch|read_body|respond|guarded|Response|arrayBuffer|JSON/.test(name));
for (const [name, us] of stages.sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`  ${pct(us).padStart(6)}  ${short(name)}`);
// Who calls the three functions with the most self time (their callers three frames up, by share
// of that function's samples): a helper such as wasm-bindgen's string copy is called from many.
console.log('\ncallers of the top functions (three frames up, share of the function\'s self time):');
for (const [name, total] of [...self].filter(([n]) => !n.startsWith('(')).sort((a, b) => b[1] - a[1]).slice(0, 3)) {
  const chains = new Map();
  for (const [id, us] of selfUs) {
    if (nameOf(byId.get(id)) !== name) continue;
    const up = [];
    for (let cur = parent.get(id); cur !== undefined && up.length < 3; cur = parent.get(cur)) up.push(nameOf(byId.get(cur)));
    const key = up.map((x) => short(x).slice(0, 60)).join(' < ') || '(root)';
    chains.set(key, (chains.get(key) ?? 0) + us);
  }
  console.log(`  ${short(name)}`);
  for (const [key, us] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`    ${((100 * us) / total).toFixed(0).padStart(3)}%  < ${key}`);
}
process.exit(0); // the inspector socket would keep the process alive
