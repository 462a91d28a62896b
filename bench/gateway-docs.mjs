//! Documents and request bodies of the gateway benchmark (scripts/bench-gateway.sh), from one
//! synthetic catalog document (`synth_catalog`):
//!   node bench/gateway-docs.mjs split CATALOG PARTS OUTDIR
//!     writes OUTDIR/part-1.json … part-PARTS.json: the catalog's tools cut in PARTS runs in order,
//!     each a document an upstream serves (the declarations of groups, tags and concerns kept);
//!   node bench/gateway-docs.mjs gateway CATALOG URL...
//!     prints a gateway document fronting the upstreams at URL... (named u1, u2, …, prefix "" so
//!     names stay as in the catalog, lists refreshed hourly: not during the run) with the catalog's
//!     groups, tags, concerns, concern mapping and options: served whole, it lists what the
//!     catalog lists, so the same random filters give the same pages;
//!   node bench/gateway-docs.mjs calls CATALOG COUNT OUT_MODERN OUT_LEGACY
//!     writes COUNT `tools/call` bodies, one per line, calling the catalog's first COUNT tools in
//!     turn with a small valid argument: stateless 2026-07-28 ones (version, client info and
//!     capabilities in `_meta`) to OUT_MODERN, and the same for a 2025-11-25 session to OUT_LEGACY;
//!   node bench/gateway-docs.mjs sessions URL COUNT OUT
//!     opens COUNT 2025-11-25 sessions at URL (initialize + notifications/initialized) and writes
//!     their ids, comma-separated, to OUT (as bench/wrk-list.lua's $SESSIONS wants them);
//!   node bench/gateway-docs.mjs check CALLS KEY=URL...
//!     sends the first 20 bodies of CALLS to every target and stops (exit 1) unless each answers
//!     HTTP 200 with a result equal to the first target's (the upstream called directly).
import fs from 'node:fs';
import path from 'node:path';
import { initialize, post } from '../tests/common/mcp-raw.mjs';

const [mode, file, ...rest] = process.argv.slice(2);
const doc = mode === 'check' || mode === 'sessions' ? null : JSON.parse(fs.readFileSync(file, 'utf8'));
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const declarations = doc && { groups: doc.groups, tags: doc.tags, concerns: doc.concerns };

if (mode === 'split') {
  const [parts, out] = [Number(rest[0]), rest[1]];
  const size = Math.ceil(doc.tools.length / parts);
  for (let k = 0; k < parts; k++) {
    const part = {
      server: { name: `mcp-sieve-bench-part-${k + 1}`, version: '1' },
      options: doc.options,
      ...declarations,
      tools: doc.tools.slice(k * size, (k + 1) * size),
    };
    fs.writeFileSync(path.join(out, `part-${k + 1}.json`), JSON.stringify(part));
  }
} else if (mode === 'gateway') {
  const upstreams = Object.fromEntries(rest.map((url, i) => [`u${i + 1}`, { url, prefix: '', refreshSeconds: 3600 }]));
  const gateway = {
    server: { name: 'mcp-sieve-bench-gateway', version: '1' },
    options: doc.options,
    ...declarations,
    concernMapping: doc.concernMapping,
    upstreams,
  };
  process.stdout.write(JSON.stringify(gateway));
} else if (mode === 'calls') {
  const [count, modern, legacy] = [Number(rest[0]), rest[1], rest[2]];
  const lines = (meta) => `${doc.tools.slice(0, count).map((t, i) => JSON.stringify({
    jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: t.name, arguments: { id: `item-${i}` }, ...(meta ? { _meta: META } : {}) },
  })).join('\n')}\n`;
  fs.writeFileSync(modern, lines(true));
  fs.writeFileSync(legacy, lines(false));
} else if (mode === 'sessions') {
  const [count, out] = [Number(rest[0]), rest[1]];
  const ids = [];
  for (let i = 0; i < count; i++) ids.push((await initialize(file, { clientInfo: { name: 'bench', version: '1' } })).sessionId);
  fs.writeFileSync(out, ids.join(','));
} else if (mode === 'check') {
  const bodies = fs.readFileSync(file, 'utf8').trim().split('\n').slice(0, 20).map((l) => JSON.parse(l));
  const targets = rest.map((spec) => spec.split(/=(.*)/s));
  for (const body of bodies) {
    let want;
    for (const [key, url] of targets) {
      const headers = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': body.method, 'Mcp-Name': body.params.name };
      const r = await post(url, body, { headers });
      const result = r.response?.result;
      if (r.status !== 200 || !result || result.isError) {
        console.error(`bench set-up failed: ${key} (${url}) did not answer ${body.params.name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
        process.exit(1);
      }
      want ??= JSON.stringify(result);
      if (JSON.stringify(result) !== want) {
        console.error(`bench set-up failed: ${key} answers ${body.params.name} differently:\n  ${JSON.stringify(result).slice(0, 300)}\n  first target: ${want.slice(0, 300)}`);
        process.exit(1);
      }
    }
  }
  console.log(`checked: ${bodies.length} tools/call give the same result on ${targets.map(([k]) => k).join(', ')}`);
} else {
  console.error('usage: node bench/gateway-docs.mjs split|gateway|calls|check ...');
  process.exit(2);
}
