// Issue 38 (reliability and security IV: an upstream is untrusted input), the native shell only
// (stdio upstreams and the native HTTP driver; skipped unless SIEVE_TARGET=native). Real
// processes: target/debug/mcp-sieve (`serve`, `tools`), the hand-written stdio upstream
// tests/fixtures/raw-stdio-upstream.mjs, and hostile HTTP upstreams written here with node:http
// on 127.0.0.1.
// - item 5: a stdio upstream sees only the official SDK's default variables (HOME, PATH, …) and
//   its own `env`, never the gateway's secrets (MCP_SIEVE_TOKENS, MCP_SIEVE_SESSION_SECRET, the
//   other upstreams' header secrets).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { call, openSession } from '../common/mcp-raw.mjs';
import { native, startWith, ROOT } from './helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const RAW = path.join(ROOT, 'tests', 'fixtures', 'raw-stdio-upstream.mjs');
const skip = !native() && 'native only (stdio upstreams and the native drivers)';
const PRINCIPALS = { alice: 'token-alice-38', bravo: 'token-bravo-38' };
const auth = (who) => ({ Authorization: `Bearer ${PRINCIPALS[who]}` });
/** The gateway's secrets, none of which a stdio upstream may see. */
const SECRETS = {
  MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS),
  MCP_SIEVE_SESSION_SECRET: 'session-secret-38-0123456789abcdef',
  OTHER_UPSTREAM_KEY: 'other-upstream-key-38',
  UNRELATED_SECRET_38: 'unrelated-38',
};

const cleanup = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** `mcp-sieve serve` with `doc` and `env`, stopped after the file's tests. */
async function serve(doc, env = {}) {
  const s = await startWith(doc, env);
  cleanup.push(() => s.stop());
  return s;
}

/** A session of `who` (a principal of PRINCIPALS) that can be asked (elicitation). */
const sessionOf = (url, who) => openSession(url, { headers: auth(who) });
const capsSession = async (url, who) => {
  const { initialize } = await import('../common/mcp-raw.mjs');
  return initialize(url, { headers: auth(who), capabilities: { elicitation: {} }, clientInfo: { name: who, version: '1' } });
};

/** The text of a tools/call answer's first content item. */
const textOf = (a) => a.response?.result?.content?.[0]?.text;

test('item 5: a stdio upstream without env sees PATH and HOME and its own env, none of the gateway\'s secrets (serve and tools)', { skip, timeout: 60_000 }, async () => {
  const doc = { upstreams: {
    raw: { command: process.execPath, args: [RAW], env: { RAW_OWN_FLAG: 'mine', RAW_OWN_KEY: '${UNRELATED_SECRET_38}' } },
    other: { url: 'http://127.0.0.1:9/mcp', headers: { 'X-Key': '${OTHER_UPSTREAM_KEY}' } },
  } };
  const gw = await serve(doc, SECRETS);
  const { sessionId } = await sessionOf(gw.url, 'alice');
  const a = await call(gw.url, sessionId, 'tools/call', { name: 'raw_env', arguments: {} }, { headers: auth('alice') });
  const seen = JSON.parse(textOf(a) ?? 'null');
  assert.ok(seen, `the env tool answered: ${a.body.slice(0, 300)}`);
  for (const name of Object.keys(SECRETS)) assert.ok(!(name in seen), `the stdio upstream sees ${name}: ${Object.keys(seen).join(' ')}`);
  for (const name of ['PATH', 'HOME']) assert.ok(name in seen, `the stdio upstream sees ${name}: ${Object.keys(seen).join(' ')}`);
  assert.equal(seen.RAW_OWN_FLAG, 'mine', 'its own env');
  // Its own secret reference, resolved (the answer's copy of the value is redacted on the way out).
  assert.ok('RAW_OWN_KEY' in seen);
  assert.deepEqual(Object.keys(seen).filter((k) => !['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'RAW_OWN_FLAG', 'RAW_OWN_KEY'].includes(k)), [],
    'nothing but the default list and its own env');

  // `tools` starts the same process, which records its environment.
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-38-'));
  cleanup.push(() => rmSync(tmp, { recursive: true, force: true }));
  const log = path.join(tmp, 'record.jsonl');
  const raw = { ...doc.upstreams.raw, env: { ...doc.upstreams.raw.env, RAW_UPSTREAM_RECORD: log } };
  writeFileSync(path.join(tmp, 'catalog.json'), JSON.stringify({ upstreams: { raw } }));
  const out = spawnSync(BIN, ['tools', '--catalog', path.join(tmp, 'catalog.json')], {
    env: { ...process.env, ...SECRETS }, encoding: 'utf8', timeout: 30_000,
  });
  assert.match(out.stdout, /raw_env/, `tools lists the upstream's tools: ${out.stdout}${out.stderr}`);
  const started = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).find((r) => r.env);
  for (const name of Object.keys(SECRETS)) assert.ok(!started.env.includes(name), `tools: the stdio upstream sees ${name}`);
  assert.ok(started.env.includes('PATH') && started.env.includes('RAW_OWN_FLAG'), started.env.join(' '));
});
