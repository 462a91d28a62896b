//! Set-up of the wrk load benchmark (scripts/bench-load.sh), run once the servers are up and
//! before any load:
//!   1. writes the request bodies: the bench's random filters (bench/filters.mjs, seed 1904:
//!      4,096 of `randomFilters`, or with --filters plain 256 of `plainFilters`, the shape of issue
//!      63's outside run) as `tools/list` bodies, one per line, for the 2025-11-25 era (`legacy.txt`) and for the
//!      stateless 2026-07-28 era (`modern.txt`, version, client info and capabilities in _meta);
//!   2. checks that every target gives the same first page (tool names, and whether a next page
//!      exists) as the filter semantics written plainly in JS over the catalog (filters.mjs
//!      `lister`), for the first CHECK filters; exits 1 naming the target and the filter
//!      otherwise;
//!   3. writes the floors' fixed pages: `page.json`, the answer of the target named by
//!      --page-from whose size is nearest the mean size of its answers to those filters, so a
//!      floor response is as big as a typical real one (measured, not assumed); and
//!      `page-session.json`, the same from --session-page-from's answers (a 2025-11-25 answer
//!      lacks the 2026-07-28 result's resultType/ttlMs/cacheScope), or a copy of `page.json`;
//!   4. opens SESSIONS sessions (initialize + notifications/initialized) on every target of the
//!      2025-11-25 era and writes their ids, comma-separated, to `sessions-KEY.txt`; for each
//!      --floor-sessions KEY it writes as many random ids (the no-op Durable Object floor needs
//!      no initialize).
//!   node bench/wrk-prepare.mjs --catalog FILE --out DIR --target KEY=URL:modern|legacy ...
//!        [--check 200] [--sessions 32] [--page-from KEY] [--session-page-from KEY]
//!        [--floor-sessions KEY] [--filters random|plain]
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { lister, plainFilters, randomFilters } from './filters.mjs';
import { call, initialize, stateless } from '../tests/common/mcp-raw.mjs';

const { values } = parseArgs({
  options: {
    catalog: { type: 'string' },
    out: { type: 'string' },
    target: { type: 'string', multiple: true, default: [] },
    check: { type: 'string', default: '200' },
    sessions: { type: 'string', default: '32' },
    'page-from': { type: 'string' },
    'session-page-from': { type: 'string' },
    'floor-sessions': { type: 'string', multiple: true, default: [] },
    filters: { type: 'string', default: 'random' },
  },
});
const CHECK = Number(values.check);
const SESSIONS = Number(values.sessions);
const BENCH = { name: 'bench', version: '1' };
const out = (name) => path.join(values.out, name);
const fail = (message) => {
  console.error(`bench set-up failed: ${message}`);
  process.exit(1);
};

// 1. Request bodies.
const SHAPES = { random: () => randomFilters(1904, 4096), plain: () => plainFilters(1904, 256) };
if (!SHAPES[values.filters]) fail(`--filters ${values.filters}: expected one of ${Object.keys(SHAPES).join(', ')}`);
const FILTERS = SHAPES[values.filters]();
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': BENCH,
  'io.modelcontextprotocol/clientCapabilities': {},
};
const lines = (withMeta) => `${FILTERS.map((filter, i) => JSON.stringify({
  jsonrpc: '2.0', id: i + 1, method: 'tools/list', params: withMeta ? { filter, _meta: META } : { filter },
})).join('\n')}\n`;
fs.writeFileSync(out('legacy.txt'), lines(false));
fs.writeFileSync(out('modern.txt'), lines(true));

// 2. Same first page everywhere, and the one the filter semantics give.
const doc = JSON.parse(fs.readFileSync(values.catalog, 'utf8'));
const expected = lister(doc);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const targets = [];
for (const spec of values.target) {
  const [key, rest] = spec.split(/=(.*)/s);
  const era = rest.match(/:(modern|legacy)$/)?.[1];
  if (!era) fail(`target ${spec}: expected KEY=URL:modern or KEY=URL:legacy`);
  const url = rest.slice(0, -(era.length + 1));
  const t = { key, era, url, sessions: [] };
  if (era === 'legacy') {
    for (let i = 0; i < SESSIONS; i++) {
      const { sessionId } = await initialize(url, { agent, clientInfo: BENCH }).catch((e) => fail(`${key}: opening session ${i + 1}: ${e.message}`));
      t.sessions.push(sessionId);
    }
    fs.writeFileSync(out(`sessions-${key}.txt`), t.sessions.join(','));
  }
  t.request = (filter) => (era === 'legacy'
    ? call(url, t.sessions[0], 'tools/list', { filter }, { agent })
    : stateless(url, 'tools/list', { filter }, { agent, clientInfo: BENCH }));
  targets.push(t);
}
const answers = new Map(targets.map((t) => [t.key, []]));
for (const filter of FILTERS.slice(0, CHECK)) {
  const want = expected({ filter });
  const wantNames = want.tools.map((t) => t.name).join(',');
  for (const t of targets) {
    const r = await t.request(filter).catch((e) => fail(`${t.key}: ${e.message}`));
    const result = r.response?.result;
    if (r.status !== 200 || !result?.tools) {
      fail(`${t.key} (${t.url}) did not answer tools/list for filter ${JSON.stringify(filter)}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    }
    const names = result.tools.map((x) => x.name).join(',');
    if (names !== wantNames || Boolean(result.nextCursor) !== Boolean(want.nextCursor)) {
      fail(`${t.key} answers a different first page for filter ${JSON.stringify(filter)}:\n`
        + `  expected (${want.tools.length} tools, more=${Boolean(want.nextCursor)}): ${wantNames.slice(0, 300)}\n`
        + `  ${t.key} (${result.tools.length} tools, more=${Boolean(result.nextCursor)}): ${names.slice(0, 300)}`);
    }
    answers.get(t.key).push(r.body);
  }
}
agent.destroy();
if (targets.length) {
  console.log(`checked: ${CHECK} random filters give the same first page on ${targets.map((t) => t.key).join(', ')} as the filter semantics in plain JS`);
}

// 3. The floors' pages.
const bytes = (s) => Buffer.byteLength(s);
/** KEY's answer nearest the mean size of its answers, written to FILE. */
const typicalPage = (key, file) => {
  const bodies = answers.get(key);
  if (!bodies) fail(`--page-from ${key}: not a target`);
  const mean = bodies.reduce((a, b) => a + bytes(b), 0) / bodies.length;
  const page = bodies.reduce((best, b) => (Math.abs(bytes(b) - mean) < Math.abs(bytes(best) - mean) ? b : best));
  fs.writeFileSync(out(file), page);
  console.log(`floor page ${file}: ${bytes(page)} bytes, ${JSON.parse(page).result.tools.length} tools (${key}'s answers average ${mean.toFixed(0)} bytes)`);
};
const source = values['page-from'] ?? targets[0]?.key;
if (source) {
  typicalPage(source, 'page.json');
} else {
  // No target to copy: the plain JS answer to the first filter.
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, result: expected({ filter: FILTERS[0] }) });
  fs.writeFileSync(out('page.json'), body);
}
if (values['session-page-from']) typicalPage(values['session-page-from'], 'page-session.json');
else fs.copyFileSync(out('page.json'), out('page-session.json'));

// 4. Session ids for the Durable Object floor.
for (const key of values['floor-sessions']) {
  fs.writeFileSync(out(`sessions-${key}.txt`), Array.from({ length: SESSIONS }, () => randomUUID()).join(','));
}
