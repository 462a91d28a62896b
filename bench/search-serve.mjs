//! Search mode measured from outside (issue 61 item 6): `mcp-sieve serve` on 127.0.0.1, driven by
//! the official MCP SDK's client (@modelcontextprotocol/sdk, Streamable HTTP, `/mcp?mode=search`),
//! with the default sentence encoder (sentence-transformers/all-MiniLM-L6-v2 from a Hugging Face
//! cache that `mcp-sieve search-model fetch` filled through the loopback hub stand-in of
//! tests/e2e/hub-stand-in.mjs; the servers then run with HF_HUB_OFFLINE=1), without it
//! (`--search-model none`) and, for quality, plain BM25 (scripts/search_quality.py's).
//!
//!   --quality  the labelled queries of tests/search/{public,saas}-servers.json (written before any
//!              ranking ran; every third held out): top-1, top-5, MRR@5 per part, and the held-out
//!              paraphrases ("hard": no word shared with the tool's name) apart.
//!   --speed    find_tools p50 client-side (HTTP, JSON and the query's encoding included) at 362
//!              (catalog/public-servers.json) and --sizes tools (default 5000,50000: the public
//!              tools repeated with numbered names, as benches/search.rs), the bench's 3-, 4- and
//!              21-word queries, --calls calls each after 3 untimed; the server's CPU per call from
//!              /proc; and the first start: spawn to ready vectors with an empty vector cache at
//!              --first tools (362,5000; the model in the HF cache), then a restart from that cache.
//!              `none` for --sizes or --first leaves that part out.
//! Vectors of the p50 runs are kept in target/bench-search/vectors, so only the first run encodes
//! the 50,000 tools (about 7 minutes on one core; --ready-timeout bounds every wait for vectors).
//! Every server is stopped by its PID, also on failure or Ctrl-C. Run by scripts/bench-search.sh.
//!   node bench/search-serve.mjs [--quality] [--speed] [--bin FILE] [--sizes N,N] [--first N,N]
//!                               [--calls N] [--ready-timeout S] [--json FILE]
import { spawn, execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHub } from '../tests/e2e/hub-stand-in.mjs';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(ROOT);
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const option = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : fallback;
};
const BIN = path.resolve(option('--bin', 'target/release/mcp-sieve'));
const sizes = (name, fallback) => (option(name, fallback) === 'none' ? [] : option(name, fallback).split(',').map(Number));
const SIZES = sizes('--sizes', '5000,50000');
const FIRST = sizes('--first', '362,5000');
const CALLS = Number(option('--calls', '50'));
const READY_TIMEOUT = Number(option('--ready-timeout', '1800')) * 1000;
const JSON_OUT = option('--json', null);
const MODEL_FOLDER = 'target/models/all-minilm-l6-v2';
const MODEL = 'sentence-transformers/all-MiniLM-L6-v2';
const WORK = path.resolve('target/bench-search');
const HF_HOME = path.join(WORK, 'hf');
const META = 'dev.mcp-sieve/search';
const READY = /search vectors ready for (\d+) tools \((\d+) from the cache, (\d+) encoded\) in ([\d.]+) s/;
const SPEED_QUERIES = ['create a branch', 'delete the synthetic item',
  'show me the logs of the failed CI job on the main branch so I can see why the build broke'];
const QUALITY_FILES = ['tests/search/public-servers.json', 'tests/search/saas-servers.json'];
const DEPTH = 10;

if (!flag('--quality') && !flag('--speed')) {
  console.error('usage: node bench/search-serve.mjs [--quality] [--speed] [--bin FILE] [--sizes N,N] [--first N,N] [--calls N] [--ready-timeout S] [--json FILE]');
  process.exit(2);
}
if (!fs.existsSync(BIN)) throw new Error(`no ${BIN}: cargo build --release -p mcp-sieve-server`);
fs.mkdirSync(WORK, { recursive: true });
const temps = [];
const tempDir = (name) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `bench-search-${name}-`));
  temps.push(d);
  return d;
};
const children = new Set();
const cleanUp = () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
};
process.on('exit', cleanUp);
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(130));

const say = (s) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** Our environment without any HF_* or cache variable, plus `env`. */
function environment(env) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^HF_|^HUGGINGFACE_|^XDG_CACHE_HOME$|^MCP_SIEVE_/.test(k)));
  return { ...base, ...env };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The HF cache of the default model, filled once by `mcp-sieve search-model fetch` through the stand-in. */
async function warmHub() {
  const env = environment({ HF_HOME });
  try {
    const dir = execFileSync(BIN, ['search-model', 'fetch'], { env: { ...env, HF_HUB_OFFLINE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] }).toString().trim();
    return dir;
  } catch {
    // not in the cache yet
  }
  if (!fs.existsSync(path.join(MODEL_FOLDER, 'model.safetensors'))) throw new Error(`no ${MODEL_FOLDER}: scripts/bootstrap.sh unpacks it`);
  const hub = await startHub({ dir: MODEL_FOLDER });
  try {
    // not execFileSync: the stand-in answers from this process's event loop
    const { stdout } = await promisify(execFile)(BIN, ['search-model', 'fetch'], { env: { ...env, HF_ENDPOINT: hub.endpoint }, timeout: 300_000 });
    const dir = stdout.trim();
    say(`${MODEL} fetched through the hub stand-in into ${HF_HOME}`);
    return dir;
  } finally {
    await hub.close();
  }
}

/** `mcp-sieve serve --catalog FILE ARGS` on a free loopback port; resolves once it accepts connections. */
async function serve(catalog, { args = [], cache }) {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(BIN, ['serve', '--catalog', catalog, '--host', '127.0.0.1', '--port', String(port), '--metrics', 'off', ...args], {
    env: environment({ HF_HOME, HF_HUB_OFFLINE: '1', XDG_CACHE_HOME: cache }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  let ready = null;
  child.stderr.on('data', (d) => {
    stderr += d;
    if (!ready) {
      const m = stderr.match(READY);
      if (m) ready = { at: performance.now(), tools: +m[1], cached: +m[2], encoded: +m[3], seconds: +m[4] };
    }
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => { children.delete(child); resolve({ code, signal }); }));
  let gone = false;
  exited.then(() => { gone = true; });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (gone) throw new Error(`mcp-sieve serve --catalog ${catalog} exited:\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`mcp-sieve serve --catalog ${catalog} did not listen in 120 s:\n${stderr}`);
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) break;
    await sleep(20);
  }
  const listening = performance.now() - began;
  return {
    url: `http://127.0.0.1:${port}/mcp?mode=search`,
    pid: child.pid,
    began,
    listening,
    stderr: () => stderr,
    ready: () => ready,
    /** The server's user + system CPU time in ms (from /proc). */
    cpu() {
      const f = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((+f[11] + +f[12]) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
    },
    rss() {
      const m = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
      return m ? +m[1] * 1024 : null;
    },
    async stop() {
      process.kill(child.pid, 'SIGTERM');
      const t = setTimeout(() => { if (!gone) process.kill(child.pid, 'SIGKILL'); }, 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function connect(server) {
  const client = new Client({ name: 'bench-search', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  return client;
}

/** find_tools' answer: the ranked names and the ranking it says it used. */
async function find(client, query, limit = DEPTH) {
  const r = await client.callTool({ name: 'find_tools', arguments: { query, limit } });
  if (r.isError) throw new Error(`find_tools "${query}": ${JSON.stringify(r.content)}`);
  return { names: r.structuredContent.tools.map((t) => t.name), ranking: r._meta?.[META]?.ranking ?? 'lexical', reason: r._meta?.[META]?.reason };
}

/** Waits until find_tools answers by words and meaning (the tools' vectors are in). */
async function hybrid(server, client, timeout = READY_TIMEOUT) {
  const end = Date.now() + timeout;
  for (;;) {
    const r = await find(client, 'warm up', 1);
    if (r.ranking === 'hybrid') return;
    if (Date.now() > end) throw new Error(`find_tools still lexical after ${timeout / 1000} s (${r.reason}):\n${server.stderr().slice(-2000)}`);
    await sleep(server.ready() ? 20 : 250);
  }
}

/** Ranks of the expected tool (1-based, null past DEPTH) → top-1, top-5, MRR@5. */
function score(rows) {
  const n = rows.length;
  const rank = rows.map(({ ranked, expect }) => {
    const i = ranked.slice(0, DEPTH).findIndex((name) => expect.includes(name));
    return i < 0 ? null : i + 1;
  });
  return {
    n,
    top1: rank.filter((r) => r === 1).length / n,
    top5: rank.filter((r) => r && r <= 5).length / n,
    mrr5: rank.reduce((s, r) => s + (r && r <= 5 ? 1 / r : 0), 0) / n,
  };
}

/** scripts/search_quality.py's plain BM25 (name + description), on `queries` over `catalog`'s tools. */
function plainBm25(catalog, queries) {
  const code = 'import json,sys; sys.path.insert(0,"scripts"); import search_quality as s; a=json.load(sys.stdin); ' +
    'print(json.dumps(s.plain_bm25(json.load(open(a["catalog"]))["tools"], a["queries"])))';
  const out = execFileSync('.venv/bin/python', ['-c', code], { input: JSON.stringify({ catalog, queries }) });
  return JSON.parse(out);
}

async function quality() {
  const sets = QUALITY_FILES.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
  const rankers = {
    default: { label: `default (${MODEL}, HF cache)`, args: [] },
    none: { label: 'without it (--search-model none)', args: ['--search-model', 'none'] },
  };
  const ranked = { default: {}, none: {}, bm25: {} };
  for (const set of sets) {
    const queries = set.queries.map((q) => q.query);
    ranked.bm25[set.catalog] = plainBm25(set.catalog, queries);
    for (const [key, r] of Object.entries(rankers)) {
      const server = await serve(set.catalog, { args: r.args, cache: path.join(WORK, 'vectors') });
      try {
        const client = await connect(server);
        if (key === 'default') await hybrid(server, client);
        const out = {};
        for (const q of queries) {
          const a = await find(client, q);
          if (a.ranking !== (key === 'default' ? 'hybrid' : 'lexical')) throw new Error(`"${q}" ranked ${a.ranking} with ${key}`);
          out[q] = a.names;
        }
        ranked[key][set.catalog] = out;
        await client.close();
      } finally {
        await server.stop();
      }
      say(`${set.catalog}: ${queries.length} queries with ${key}`);
    }
  }
  const parts = {
    'held out': (q) => q.part === 'heldOut',
    'held out, hard (paraphrases)': (q) => q.part === 'heldOut' && q.kind === 'paraphrase',
    'tuning part': (q) => q.part === 'tune',
  };
  const table = {};
  for (const key of ['default', 'none', 'bm25']) {
    table[key] = {};
    for (const [part, keep] of Object.entries(parts)) {
      const rows = sets.flatMap((s) => s.queries.filter(keep).map((q) => ({ ranked: ranked[key][s.catalog][q.query], expect: q.expect })));
      table[key][part] = score(rows);
      for (const s of sets) {
        const one = s.queries.filter(keep).map((q) => ({ ranked: ranked[key][s.catalog][q.query], expect: q.expect }));
        table[key][`${part}: ${s.catalog}`] = score(one);
      }
    }
  }
  const f = (x) => x.toFixed(3);
  const name = { default: rankers.default.label, none: rankers.none.label, bm25: 'plain BM25 (name + description)' };
  console.log('\n| ranker | held out: top-1 | top-5 | MRR@5 | hard top-5 | tuning part: top-1 | top-5 |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const key of ['default', 'none', 'bm25']) {
    const t = table[key];
    console.log(`| ${name[key]} | ${f(t['held out'].top1)} | ${f(t['held out'].top5)} | ${f(t['held out'].mrr5)} | ${f(t['held out, hard (paraphrases)'].top5)} | ${f(t['tuning part'].top1)} | ${f(t['tuning part'].top5)} |`);
  }
  const h = table.default['held out'];
  console.log(`(held out: ${h.n} queries, ${table.default['held out, hard (paraphrases)'].n} hard; tuning part ${table.default['tuning part'].n})`);
  for (const key of ['default', 'none', 'bm25']) {
    for (const s of sets) {
      const t = table[key][`held out: ${s.catalog}`];
      console.log(`  ${key} held out on ${s.catalog} (${t.n}): ${f(t.top1)} / ${f(t.top5)} / MRR@5 ${f(t.mrr5)}`);
    }
  }
  return { table, ranked };
}

/** The public catalog's tools repeated with numbered names up to n, as a document (as benches/search.rs). */
function publicCatalog(n) {
  const doc = JSON.parse(fs.readFileSync('catalog/public-servers.json', 'utf8'));
  if (n === doc.tools.length) return 'catalog/public-servers.json';
  const base = doc.tools;
  doc.tools = Array.from({ length: n }, (_, i) => (i < base.length ? base[i] : { ...base[i % base.length], name: `${base[i % base.length].name}_${Math.floor(i / base.length)}` }));
  delete doc.views;
  const file = path.join(WORK, `public-${n}.json`);
  fs.writeFileSync(file, JSON.stringify(doc));
  return file;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

/** Spawn to ready vectors with an empty vector cache, then a restart from the cache it wrote. */
async function firstStart(n) {
  const catalog = publicCatalog(n);
  const cache = tempDir(`first-${n}`);
  const out = {};
  for (const run of ['empty vector cache', 'restart from the cache']) {
    const loadBefore = load();
    const server = await serve(catalog, { cache });
    try {
      // serve makes vectors once a request is in search mode: the SDK client's initialize is one.
      const client = await connect(server);
      const asked = performance.now() - server.began;
      const end = Date.now() + READY_TIMEOUT;
      while (!server.ready()) {
        if (Date.now() > end) throw new Error(`no ready vectors at ${n} tools in ${READY_TIMEOUT / 1000} s:\n${server.stderr().slice(-2000)}`);
        await sleep(20);
      }
      const r = server.ready();
      const cpu = server.cpu() / 1000; // the process's CPU until its vectors were ready (and a little after)
      await hybrid(server, client);
      out[run] = {
        server_cpu_s: cpu,
        listening_s: server.listening / 1000,
        first_request_s: asked / 1000,
        ready_s: (r.at - server.began) / 1000,
        vectors_thread_s: r.seconds,
        cached: r.cached,
        encoded: r.encoded,
        rss_mb: server.rss() / 1e6,
        load: `${loadBefore} → ${load()}`,
      };
      await client.close();
    } finally {
      await server.stop();
    }
    const o = out[run];
    say(`first start at ${n} tools, ${run}: listening ${o.listening_s.toFixed(2)} s, ready vectors ${o.ready_s.toFixed(1)} s after spawn (server CPU ${o.server_cpu_s.toFixed(1)} s; ${o.encoded} encoded, ${o.cached} from the cache; the thread's own ${o.vectors_thread_s} s), load ${o.load}`);
  }
  return out;
}

/** find_tools p50 client-side at `n` tools, with the default encoder and without it. */
async function p50(n) {
  const catalog = publicCatalog(n);
  const out = {};
  for (const [key, args] of [['default', []], ['none', ['--search-model', 'none']]]) {
    const server = await serve(catalog, { args, cache: path.join(WORK, 'vectors') });
    try {
      const client = await connect(server);
      if (key === 'default') {
        say(`${n} tools: waiting for vectors (${server.ready() ? 'ready' : 'making them'}; bounded by ${READY_TIMEOUT / 1000} s)`);
        await hybrid(server, client);
        const r = server.ready();
        say(`${n} tools: vectors ready ${((r.at - server.began) / 1000).toFixed(1)} s after spawn (${r.encoded} encoded, ${r.cached} from the cache)`);
      } else {
        await find(client, 'warm up', 1); // the index is built off the load's path; the first search waits for it
      }
      out[key] = { load_before: load(), queries: {} };
      for (const q of SPEED_QUERIES) {
        for (let i = 0; i < 3; i++) await find(client, q, 5);
        const times = [];
        const cpu0 = server.cpu();
        for (let i = 0; i < CALLS; i++) {
          const t = performance.now();
          const a = await find(client, q, 5);
          times.push(performance.now() - t);
          if (a.ranking !== (key === 'default' ? 'hybrid' : 'lexical')) throw new Error(`"${q}" ranked ${a.ranking} with ${key}`);
        }
        const cpu = (server.cpu() - cpu0) / CALLS;
        out[key].queries[q] = { p50_ms: median(times), p95_ms: pct(times, 0.95), server_cpu_ms: cpu, calls: CALLS };
      }
      out[key].load_after = load();
      out[key].rss_mb = server.rss() / 1e6;
      await client.close();
    } finally {
      await server.stop();
    }
    const qs = Object.values(out[key].queries);
    say(`${n} tools, ${key}: find_tools p50 ${qs.map((q) => q.p50_ms.toFixed(2)).join(' / ')} ms (p95 ${qs.map((q) => q.p95_ms.toFixed(1)).join(' / ')}; server CPU a call ${qs.map((q) => q.server_cpu_ms.toFixed(1)).join(' / ')} ms), RSS ${out[key].rss_mb.toFixed(0)} MB, load ${out[key].load_before} → ${out[key].load_after}`);
  }
  return out;
}

const result = { date: new Date().toISOString(), bin: BIN, cpu: os.cpus()[0]?.model, cores: os.cpus().length, load_at_start: load() };
say(`${BIN}; ${result.cores} × ${result.cpu}; load ${result.load_at_start}`);
result.model = await warmHub();
if (flag('--quality')) result.quality = await quality();
if (flag('--speed')) {
  result.first_start = {};
  for (const n of FIRST) result.first_start[n] = await firstStart(n);
  result.find_tools = {};
  for (const n of [362, ...SIZES]) result.find_tools[n] = await p50(n);
}
result.load_at_end = load();
if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(result, null, 1));
say(`done; load ${result.load_at_end}`);
