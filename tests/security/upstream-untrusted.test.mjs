// Issue 38 (reliability and security IV: an upstream is untrusted input), the native shell only
// (stdio upstreams and the native HTTP driver; skipped unless SIEVE_TARGET=native). Real
// processes: target/debug/mcp-sieve (`serve`, `tools`), the hand-written stdio upstream
// tests/fixtures/raw-stdio-upstream.mjs, and hostile HTTP upstreams written here with node:http
// on 127.0.0.1.
// - item 5: a stdio upstream sees only the official SDK's default variables (HOME, PATH, …) and
//   its own `env`, never the gateway's secrets (MCP_SIEVE_TOKENS, MCP_SIEVE_SESSION_SECRET, the
//   other upstreams' header secrets).
// - item 4: a forwarded call has one deadline, the upstream's `limits.callTimeoutSeconds`, from
//   its start: an HTTP upstream that answers `200 application/json` and then one space every
//   500 ms, or an SSE stream of `: keep-alive` comments, or a stdio upstream that only sends
//   progress and log messages, fails the call naming the upstream; and a client that goes away
//   takes its upstream request with it.
// - item 7: a stdio upstream's late question (elicitation after the call it belongs to returned)
//   reaches no other client: alice's call in flight is not asked bravo's question; the upstream
//   gets an error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { call, initialize, openSession, post, sessionHeaders } from '../common/mcp-raw.mjs';
import { native, startWith, sleep, ROOT } from './helpers.mjs';

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
const capsSession = (url, who) => initialize(url, { headers: auth(who), capabilities: { elicitation: {} }, clientInfo: { name: who, version: '1' } });

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

/**
 * An HTTP MCP upstream on 127.0.0.1 whose tools/call never ends: `trickle` answers 200
 * application/json and then one space every 500 ms; `keepalive` answers an SSE stream of
 * `: keep-alive` comments every 500 ms. `calls` records each call: { name, opened, closed }
 * (ms timestamps; closed when its connection closed).
 */
async function tricklingUpstream() {
  const calls = [];
  const tools = ['trickle', 'keepalive'].map((name) => ({ name, description: `Never ends (${name})`, inputSchema: { type: 'object' } }));
  const srv = http.createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    const msg = raw ? JSON.parse(raw) : {};
    const reply = (result) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': 'trickle-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    };
    if (msg.id === undefined) { res.writeHead(202).end(); return; }
    if (msg.method === 'initialize') {
      reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'trickle', version: '1' } });
    } else if (msg.method === 'tools/list') {
      reply({ tools });
    } else if (msg.method === 'tools/call') {
      const call = { name: msg.params?.name, opened: Date.now(), closed: null };
      calls.push(call);
      const sse = call.name === 'keepalive';
      res.writeHead(200, { 'Content-Type': sse ? 'text/event-stream' : 'application/json' });
      const t = setInterval(() => res.write(sse ? ': keep-alive\n\n' : ' '), 500);
      res.on('close', () => { clearInterval(t); call.closed = Date.now(); });
      res.on('error', () => {});
    } else {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } }));
    }
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  cleanup.push(async () => { srv.closeAllConnections?.(); await new Promise((r) => srv.close(r)); });
  return { url: `http://127.0.0.1:${srv.address().port}/mcp`, calls };
}

/** POSTs `message` to `url` with `headers` and closes the connection `ms` later, whatever came. */
function abandonedCall(url, headers, message, ms) {
  return new Promise((resolve) => {
    const body = JSON.stringify(message);
    const req = http.request(url, { method: 'POST', headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Content-Length': Buffer.byteLength(body), ...headers,
    } }, (res) => res.resume());
    req.on('error', () => {});
    req.end(body);
    setTimeout(() => { req.destroy(); resolve(); }, ms);
  });
}

/** Calls `tool` in a new session of alice; resolves { ms, answer }. */
async function timedCall(url, tool, args = {}, opts = {}) {
  const { sessionId } = await sessionOf(url, 'alice');
  const started = Date.now();
  const answer = await call(url, sessionId, 'tools/call', { name: tool, arguments: args, ...opts }, { headers: auth('alice') });
  return { ms: Date.now() - started, answer };
}

test('item 4: a trickling HTTP upstream (spaces after 200 application/json, or SSE keep-alive comments) fails the call at limits.callTimeoutSeconds, naming it', { skip, timeout: 60_000 }, async () => {
  const up = await tricklingUpstream();
  const gw = await serve({ upstreams: { slow: { url: up.url, limits: { callTimeoutSeconds: 2 } } } }, { MCP_SIEVE_TOKENS: SECRETS.MCP_SIEVE_TOKENS });
  for (const tool of ['slow_trickle', 'slow_keepalive']) {
    const { ms, answer } = await timedCall(gw.url, tool);
    const err = answer.response?.error;
    assert.ok(err, `${tool}: an error: ${answer.body.slice(0, 300)}`);
    assert.match(err.message, /upstream "slow"/, err.message);
    assert.match(err.message, /2 s/, err.message);
    assert.match(err.message, /callTimeoutSeconds/, err.message);
    assert.ok(ms >= 1_800 && ms <= 4_000, `${tool}: the call failed after ${ms} ms, expected about 2,000`);
    await sleep(500);
    const last = up.calls.at(-1);
    assert.ok(last.closed, `${tool}: the upstream request is still open after the deadline`);
  }
});

test('item 4: a client that goes away takes its upstream request with it (HTTP serve, JSON and SSE upstream answers)', { skip, timeout: 60_000 }, async () => {
  const up = await tricklingUpstream();
  const gw = await serve({ upstreams: { patient: { url: up.url, limits: { callTimeoutSeconds: 60 } } } }, { MCP_SIEVE_TOKENS: SECRETS.MCP_SIEVE_TOKENS });
  for (const tool of ['patient_trickle', 'patient_keepalive']) {
    const { sessionId } = await sessionOf(gw.url, 'alice');
    const before = up.calls.length;
    // The client gives up after 1 s and closes its connection.
    await abandonedCall(gw.url, { ...sessionHeaders(sessionId), ...auth('alice') }, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: {} } }, 1_000);
    const gone = Date.now();
    while (!up.calls[before]?.closed && Date.now() - gone < 5_000) await sleep(50);
    const c = up.calls[before];
    assert.ok(c, `${tool}: the call reached the upstream`);
    assert.ok(c.closed, `${tool}: the upstream request is still open 5 s after the client went away`);
    const ms = c.closed - gone;
    assert.ok(ms <= 2_000, `${tool}: the upstream request closed ${ms} ms after the client went away`);
  }
});

test('item 4: a client\'s notifications/cancelled drops its forwarded call and the upstream request (HTTP serve; not another session\'s)', { skip, timeout: 60_000 }, async () => {
  const up = await tricklingUpstream();
  const gw = await serve({ upstreams: { patient: { url: up.url, limits: { callTimeoutSeconds: 60 } } } }, { MCP_SIEVE_TOKENS: SECRETS.MCP_SIEVE_TOKENS });
  const { sessionId } = await sessionOf(gw.url, 'alice');
  const other = await sessionOf(gw.url, 'alice');
  const headers = { ...sessionHeaders(sessionId), ...auth('alice') };
  const before = up.calls.length;
  // The call stays open (its connection too) while the client cancels it on another POST.
  const pending = post(gw.url, { jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'patient_trickle', arguments: {} } }, { headers }).catch((e) => e);
  while (!up.calls[before]) await sleep(20);
  const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 41, reason: 'user' } };
  // Another session's cancel of the same id changes nothing.
  assert.equal((await post(gw.url, cancel, { headers: { ...sessionHeaders(other.sessionId), ...auth('alice') } })).status, 202);
  await sleep(700);
  assert.equal(up.calls[before].closed, null, 'another session cannot cancel it');
  const sent = Date.now();
  assert.equal((await post(gw.url, cancel, { headers })).status, 202);
  while (!up.calls[before].closed && Date.now() - sent < 5_000) await sleep(20);
  const ms = up.calls[before].closed - sent;
  assert.ok(up.calls[before].closed && ms <= 2_000, `the upstream request closed ${ms} ms after the cancel`);
  await pending;
});

test('item 4: over mcp-sieve stdio, the client\'s notifications/cancelled drops its call and the upstream request', { skip, timeout: 60_000 }, async () => {
  const up = await tricklingUpstream();
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-cancel-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  const doc = path.join(dir, 'catalog.json');
  writeFileSync(doc, JSON.stringify({ upstreams: { patient: { url: up.url, limits: { callTimeoutSeconds: 60 } } } }));
  const { spawn } = await import('node:child_process');
  const child = spawn(BIN, ['stdio', '--catalog', doc], { stdio: ['pipe', 'pipe', 'pipe'] });
  cleanup.push(async () => { child.kill('SIGKILL'); });
  let out = '';
  child.stdout.on('data', (c) => { out += c; });
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } });
  while (!out.includes('"id":1')) await sleep(20);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const before = up.calls.length;
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'patient_trickle', arguments: {} } });
  const opened = Date.now();
  while (!up.calls[before] && Date.now() - opened < 10_000) await sleep(20);
  assert.ok(up.calls[before], 'the call reached the upstream');
  const sent = Date.now();
  send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
  while (!up.calls[before].closed && Date.now() - sent < 5_000) await sleep(20);
  const ms = up.calls[before].closed - sent;
  assert.ok(up.calls[before].closed && ms <= 2_000, `the upstream request closed ${ms} ms after the cancel`);
  send({ jsonrpc: '2.0', id: 3, method: 'ping' });
  while (!out.includes('"id":3')) await sleep(20);
  assert.ok(!out.includes('"id":2'), 'a cancelled call is not answered');
});

test('item 4: a stdio upstream that only sends progress and log messages fails the call at limits.callTimeoutSeconds', { skip, timeout: 60_000 }, async () => {
  const gw = await serve({ upstreams: { chatty: { command: process.execPath, args: [RAW], limits: { callTimeoutSeconds: 2 } } } }, { MCP_SIEVE_TOKENS: SECRETS.MCP_SIEVE_TOKENS });
  const { ms, answer } = await timedCall(gw.url, 'chatty_silent', {}, { _meta: { progressToken: 'p-1' } });
  const err = answer.response?.error;
  assert.ok(err, `an error: ${answer.body.slice(0, 500)}`);
  assert.match(err.message, /upstream "chatty".*2 s/, err.message);
  assert.ok(answer.notifications.some((n) => n.method === 'notifications/progress'), 'its progress was relayed meanwhile');
  assert.ok(ms >= 1_800 && ms <= 4_000, `the call failed after ${ms} ms, expected about 2,000`);
});

/**
 * A tools/call of `who` in `session` whose SSE stream is read as it comes: a question the
 * upstream asks (elicitation/create) is answered (accept, {ok: true}) by POSTing to the session,
 * as a client does. Resolves { messages, asked } (the questions it saw).
 */
function answeringCall(url, who, session, id, params) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params });
    const headers = { ...sessionHeaders(session), ...auth(who) };
    const asked = [];
    const req = http.request(url, { method: 'POST', headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Content-Length': Buffer.byteLength(body), ...headers,
    } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
        for (const m of text.matchAll(/^data: (.*)$/gm)) {
          const msg = JSON.parse(m[1]);
          if (msg.method === 'elicitation/create' && !asked.some((a) => a.id === msg.id)) {
            asked.push(msg);
            post(url, { jsonrpc: '2.0', id: msg.id, result: { action: 'accept', content: { ok: true } } }, { headers }).catch(() => {});
          }
        }
      });
      res.on('end', () => resolve({ text, asked }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test("item 7: a stdio upstream's late question for bravo is not put to alice, whose call is in flight; the upstream gets an error", { skip, timeout: 60_000 }, async () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-38-late-'));
  cleanup.push(() => rmSync(tmp, { recursive: true, force: true }));
  const log = path.join(tmp, 'record.jsonl');
  const gw = await serve({ upstreams: { raw: { command: process.execPath, args: [RAW], env: { RAW_UPSTREAM_RECORD: log } } } },
    { MCP_SIEVE_TOKENS: SECRETS.MCP_SIEVE_TOKENS });
  const alice = await capsSession(gw.url, 'alice');
  const bravo = await capsSession(gw.url, 'bravo');
  // alice's call is in flight for 4 s; bravo's returns at once, and its upstream asks 1.5 s later.
  const aliceCall = answeringCall(gw.url, 'alice', alice.sessionId, 71, { name: 'raw_hold', arguments: { ms: 4000 } });
  await sleep(300);
  const bravoCall = await answeringCall(gw.url, 'bravo', bravo.sessionId, 72, { name: 'raw_late', arguments: { caller: 'bravo', afterMs: 1500 } });
  assert.match(bravoCall.text, /done for bravo/);
  const a = await aliceCall;
  assert.match(a.text, /held/, `alice's call answered: ${a.text.slice(0, 300)}`);
  assert.deepEqual(a.asked.map((q) => q.params?.message), [], 'alice was asked a question that is not hers');
  await sleep(300);
  const records = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(records.some((r) => r.asking === 'ask-1'), 'the upstream asked');
  const answer = records.find((r) => r.answer?.id === 'ask-1')?.answer;
  assert.ok(answer, `the upstream got an answer to its question: ${JSON.stringify(records)}`);
  assert.ok(answer.error && !answer.result, `the upstream got an error, not an answer: ${JSON.stringify(answer)}`);
  assert.equal(answer.error.code, -32603);
  assert.match(answer.error.message, /no client call this question belongs to/);
});
