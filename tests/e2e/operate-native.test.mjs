// Audit trail and metrics of the native server (issue 42 items 3 and 4), always against
// target/debug/mcp-sieve: one audit record per use (two principals, a call refused by policy,
// one by a rate limit, an unknown tool) with the right fields; payloads absent by default, present
// and PII-redacted when the document opts in; rotation at maxBytes; `mcp-sieve audit --tool X
// --since 7d` lists the right records; `mcp-sieve stdio` (launched by the official SDK's
// StdioClientTransport) applies the same rate limits and audit trail; /metrics behind the token, scraped by a real Prometheus
// (Debian's `prometheus`, its own storage in a temp dir, 1 s scrapes, a rules file) whose HTTP API
// answers the expected series; and every log line about a request (human and JSON) carries its
// method, id, principal and view.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startNative, freePort } from './harness.mjs';
import { ROOT, sleep } from '../security/helpers.mjs';

const TOKENS = { alice: 'token-alice-0123456789', bob: 'token-bob-0123456789' };
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const stops = [];
after(async () => { for (const s of stops.reverse()) await s(); });

function docWith(extra) {
  return {
    tools: [
      { name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } },
      { name: 'delete_repo', description: 'Delete', inputSchema: { type: 'object' }, tags: ['destructive'] },
      { name: 'gh_search', description: 'Search', inputSchema: { type: 'object' } },
    ],
    policy: { rules: [{ id: 'no-delete-bob', when: { principal: 'bob' }, hide: { tags: ['destructive'] } }] },
    limits: { rates: [{ id: 'paid-api', match: { tools: ['gh_*'] }, rate: 2, perSeconds: 60 }] },
    ...extra,
  };
}

async function serve(doc, args = []) {
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-op-'));
  writeFileSync(path.join(dir, 'catalog.json'), JSON.stringify(doc));
  const s = await startNative({ extraArgs: ['--catalog', path.join(dir, 'catalog.json'), ...args], env: { MCP_SIEVE_TOKENS: JSON.stringify(TOKENS) } });
  stops.push(async () => { await s.stop(); rmSync(dir, { recursive: true, force: true }); });
  return { ...s, dir };
}

async function call(s, who, name, args = {}, id = 1) {
  const res = await fetch(s.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS[who]}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }),
  });
  return { status: res.status, body: await res.json() };
}

const records = (file) => readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('one audit record per use, with who, what, the decision and its reason; no payloads by default', async () => {
  const s = await serve(docWith({ audit: { file: 'audit.jsonl' } }));
  assert.equal((await call(s, 'alice', 'echo', { message: 'mail alice@example.com' })).status, 200);
  assert.equal((await call(s, 'bob', 'echo', { message: 'x' })).status, 200);
  assert.equal((await call(s, 'alice', 'delete_repo')).status, 200);
  const refused = await call(s, 'bob', 'delete_repo');
  assert.equal(refused.body.error.code, -32602);
  await call(s, 'alice', 'gh_search');
  await call(s, 'alice', 'gh_search');
  assert.equal((await call(s, 'alice', 'gh_search')).status, 429);
  await call(s, 'alice', 'nope');
  // A list is not a use: no record.
  await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${TOKENS.alice}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }, body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }) });
  const r = records(path.join(s.dir, 'audit.jsonl'));
  assert.deepEqual(r.map((x) => [x.principal, x.item, x.decision, x.reason, x.outcome]), [
    ['alice', 'echo', 'allowed', 'allowed', 'ok'],
    ['bob', 'echo', 'allowed', 'allowed', 'ok'],
    ['alice', 'delete_repo', 'allowed', 'allowed', 'ok'],
    ['bob', 'delete_repo', 'refused', 'policy:no-delete-bob', 'error'],
    ['alice', 'gh_search', 'allowed', 'allowed', 'ok'],
    ['alice', 'gh_search', 'allowed', 'allowed', 'ok'],
    ['alice', 'gh_search', 'refused', 'rate-limit:paid-api', 'error'],
    ['alice', 'nope', 'refused', 'unknown', 'error'],
  ]);
  for (const x of r) {
    assert.equal(x.method, 'tools/call');
    assert.ok(Date.parse(x.time) > Date.now() - 60_000, x.time);
    assert.ok(Number.isInteger(x.durationMs) && x.durationMs >= 0);
    assert.ok('upstream' in x && 'view' in x);
    assert.ok(!('arguments' in x) && !('result' in x), JSON.stringify(x));
  }
  assert.equal(r[3].errorCode, -32602);
  // Who called delete_repo this week.
  const out = execFileSync(BIN, ['audit', '--file', path.join(s.dir, 'audit.jsonl'), '--tool', 'delete_repo', '--since', '7d'], { encoding: 'utf8' });
  assert.deepEqual(out.trim().split('\n').map((l) => JSON.parse(l).principal), ['alice', 'bob']);
  const none = execFileSync(BIN, ['audit', '--file', path.join(s.dir, 'audit.jsonl'), '--tool', 'delete_repo', '--since', '2999-01-01'], { encoding: 'utf8' });
  assert.equal(none, '');
});

test('payloads when the document opts in, PII-redacted; the file rotates at maxBytes', async () => {
  const s = await serve(docWith({ audit: { file: 'audit.jsonl', payloads: true, maxBytes: 1024, keep: 2 } }));
  for (let i = 0; i < 12; i++) {
    assert.equal((await call(s, 'alice', 'echo', { message: `write to carol${i}@example.org` }, i)).status, 200);
  }
  const files = readdirSync(s.dir).filter((f) => f.startsWith('audit.jsonl')).sort();
  assert.deepEqual(files, ['audit.jsonl', 'audit.jsonl.1', 'audit.jsonl.2']);
  for (const f of files) assert.ok(readFileSync(path.join(s.dir, f)).length <= 1024, f);
  const last = records(path.join(s.dir, 'audit.jsonl')).at(-1);
  assert.deepEqual(last.arguments, { message: 'write to [EMAIL_1]' });
  assert.equal(last.result.content[0].text, 'write to [EMAIL_1]');
  for (const f of files) assert.ok(!readFileSync(path.join(s.dir, f), 'utf8').includes('@example.org'), f);
  // The CLI reads the rotated files too, oldest first.
  const out = execFileSync(BIN, ['audit', '--file', path.join(s.dir, 'audit.jsonl'), '--tool', 'echo'], { encoding: 'utf8' });
  const n = out.trim().split('\n').length;
  assert.ok(n >= 5 && n <= 12, `${n} records`);
});

test('audit to stdout is refused for mcp-sieve stdio, whose stdout is the protocol', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-op-'));
  writeFileSync(path.join(dir, 'c.json'), JSON.stringify(docWith({ audit: { stdout: true } })));
  let err;
  try { execFileSync(BIN, ['stdio', '--catalog', path.join(dir, 'c.json')], { input: '', encoding: 'utf8', stdio: 'pipe' }); } catch (e) { err = e; }
  rmSync(dir, { recursive: true, force: true });
  assert.ok(err, 'stdio should refuse audit.stdout');
  assert.match(err.stderr, /audit\.stdout cannot be used with `mcp-sieve stdio`/);
});

test('mcp-sieve stdio: a call over the limit gets the same JSON-RPC error, every use one record in the audit file', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-op-'));
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'c.json'), JSON.stringify(docWith({ audit: { file: 'audit.jsonl', payloads: true } })));
  const client = new Client({ name: 'stdio-operate', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', path.join(dir, 'c.json')], stderr: 'pipe' }));
  try {
    assert.equal((await client.callTool({ name: 'echo', arguments: { message: 'to erin@example.com' } })).content[0].text, 'to erin@example.com');
    await client.callTool({ name: 'gh_search', arguments: {} });
    await client.callTool({ name: 'gh_search', arguments: {} });
    await assert.rejects(client.callTool({ name: 'gh_search', arguments: {} }), (err) => {
      assert.equal(err.code, -32602, String(err));
      assert.match(err.message, /rate limit "paid-api" reached: 2 uses per 1 min for \(anonymous\); retry in \d+ s/);
      assert.equal(err.data.limit, 'paid-api');
      assert.equal(err.data.reason, 'rate-limit:paid-api');
      assert.ok(err.data.retryAfterMs > 0);
      return true;
    });
    // Still serving after the refusal; a list is not a use.
    assert.ok((await client.listTools()).tools.length > 0);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }));
  } finally {
    await client.close();
  }
  const r = records(path.join(dir, 'audit.jsonl'));
  assert.deepEqual(r.map((x) => [x.principal, x.method, x.item, x.decision, x.reason, x.outcome]), [
    [null, 'tools/call', 'echo', 'allowed', 'allowed', 'ok'],
    [null, 'tools/call', 'gh_search', 'allowed', 'allowed', 'ok'],
    [null, 'tools/call', 'gh_search', 'allowed', 'allowed', 'ok'],
    [null, 'tools/call', 'gh_search', 'refused', 'rate-limit:paid-api', 'error'],
    [null, 'tools/call', 'nope', 'refused', 'unknown', 'error'],
  ]);
  assert.deepEqual(r[0].arguments, { message: 'to [EMAIL_1]' });
  assert.equal(r[3].errorCode, -32602);
  assert.ok(!readFileSync(path.join(dir, 'audit.jsonl'), 'utf8').includes('erin@example.com'));
});

test('a body the server refuses is audited as refused; payloads are cut at 16 KB and marked; DEL and C1 are escaped (serve and stdio)', async () => {
  const s = await serve(docWith({ audit: { file: 'audit.jsonl', payloads: true } }));
  // A string past the 256 KB string limit: -32600, and the call never ran.
  const refused = await call(s, 'alice', 'echo', { message: 'x'.repeat(300 * 1024) }, 1);
  assert.equal(refused.body.error?.code, -32600, JSON.stringify(refused.body).slice(0, 200));
  // Four strings of 215 KB each: allowed (within the body limit), the record cut all the same.
  const quarter = 'y'.repeat(215 * 1024);
  assert.equal((await call(s, 'alice', 'echo', { message: quarter, b: quarter, c: quarter, d: quarter }, 2)).status, 200);
  // A name with DEL, C1 (NEL, CSI) and C0 (ESC) controls: refused.
  // (No Mcp-Name header: a header cannot carry these; the body names the tool.)
  const odd = 'e\x7fc\x85h\x9bo\x1b[2J';
  const oddRes = await fetch(s.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS.alice}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: odd, arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }),
  });
  assert.equal((await oddRes.json()).error?.code, -32020);
  const text = readFileSync(path.join(s.dir, 'audit.jsonl'), 'utf8');
  const lines = text.trim().split('\n');
  assert.equal(lines.length, 3, text.slice(0, 500));
  for (const line of lines) assert.ok(line.length < 17 * 1024 * 2, `a record of ${line.length} bytes`);
  assert.doesNotMatch(text, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/, 'a raw control character in the audit file');
  const [big, four, named] = lines.map((l) => JSON.parse(l));
  assert.deepEqual([big.decision, big.reason, big.outcome, big.errorCode], ['refused', 'invalid-request', 'error', -32600]);
  assert.equal(big.argumentsTruncated, true);
  assert.ok(big.argumentsBytes > 300 * 1024, String(big.argumentsBytes));
  assert.equal(typeof big.arguments, 'string');
  assert.ok(JSON.stringify(big.arguments).length <= 16 * 1024 + 2);
  assert.ok(big.arguments.startsWith('{"message":"xxx'), big.arguments.slice(0, 40));
  assert.deepEqual([four.decision, four.outcome, four.argumentsTruncated, four.resultTruncated], ['allowed', 'ok', true, true]);
  assert.ok(four.argumentsBytes > 4 * 215 * 1024 && four.resultBytes > 215 * 1024);
  assert.ok(JSON.stringify(four).length < 2 * 17 * 1024);
  assert.deepEqual([named.item, named.decision, named.reason], [odd, 'refused', 'header-mismatch']);
  assert.match(lines[2], /"item":"e\\u007fc\\u0085h\\u009bo\\u001b\[2J"/);

  // The same for mcp-sieve stdio.
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-op-'));
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'c.json'), JSON.stringify(docWith({ audit: { file: 'audit.jsonl', payloads: true } })));
  const client = new Client({ name: 'stdio-audit', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', path.join(dir, 'c.json')], stderr: 'pipe' }));
  try {
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'x'.repeat(300 * 1024) } }), (err) => err.code === -32600);
    await assert.rejects(client.callTool({ name: 'e\x7fc\x85ho', arguments: {} }));
  } finally {
    await client.close();
  }
  const stdioText = readFileSync(path.join(dir, 'audit.jsonl'), 'utf8');
  assert.doesNotMatch(stdioText, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/, 'a raw control character in the audit file');
  const r = records(path.join(dir, 'audit.jsonl'));
  assert.deepEqual(r.map((x) => [x.item, x.decision, x.reason, x.argumentsTruncated ?? false]), [
    ['echo', 'refused', 'invalid-request', true],
    ['e\x7fc\x85ho', 'refused', 'unknown', false],
  ]);
  assert.ok(stdioText.length < 20 * 1024, `${stdioText.length} bytes of records`);
});

test('/metrics: tools that do not exist count as tool="unknown", label values are cut at 128 bytes, and the text stays valid', async () => {
  const long = 'r'.repeat(250);
  const doc = docWith({});
  doc.policy.rules.push({ id: long, when: { principal: 'alice' }, hide: { namePatterns: ['delete_repo'] } });
  const s = await serve(doc);
  const auth = { authorization: `Bearer ${TOKENS.alice}` };
  const scrape = async () => (await fetch(`${s.base}/metrics`, { headers: auth })).text();
  await call(s, 'alice', 'echo', { message: 'x' });
  const before = (await scrape()).split('\n').length;
  for (let i = 0; i < 200; i++) await call(s, 'alice', `made_up_${i}`, {}, i);
  await call(s, 'alice', 'n'.repeat(200_007), {}, 201);
  await call(s, 'alice', 'delete_repo', {}, 202);
  const text = await scrape();
  assert.doesNotMatch(text, /made_up_/);
  assert.match(text, /^mcp_sieve_tool_calls_total\{tool="unknown",upstream="",outcome="refused"\} 201$/m);
  assert.match(text, /^mcp_sieve_refusals_total\{reason="unknown"\} 201$/m);
  // The rule's id (and so its reason code) cut at 128 bytes.
  assert.match(text, new RegExp(`^mcp_sieve_refusals_total\\{reason="policy:${'r'.repeat(121)}"\\} 1$`, 'm'));
  for (const line of text.split('\n')) {
    for (const [, value] of line.matchAll(/="((?:[^"\\]|\\.)*)"/g)) assert.ok(value.length <= 128, `a label value of ${value.length} bytes`);
  }
  assert.ok(text.length < 20_000, `${text.length} bytes scraped`);
  // A few new series (unknown, its refusal, the policy's, the requests' outcomes), not one a name.
  assert.ok(text.split('\n').length - before < 40, `${text.split('\n').length - before} new lines`);
  // Prometheus's own parser takes the text (promtool, from Debian's prometheus, when installed).
  let promtool;
  try { promtool = execFileSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).trim(); } catch { /* absent */ }
  if (promtool) {
    try {
      execFileSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      // Lint findings (exit 3) are not errors of the format; a text Prometheus cannot parse is.
      assert.equal(e.status, 3, `promtool: ${e.stderr || e.stdout}`);
      assert.doesNotMatch(`${e.stdout}${e.stderr}`, /error while linting|parse|invalid/i);
    }
  }
});

test('/metrics behind the token, scraped by Prometheus, whose queries answer the expected series', async (t) => {
  let prom;
  try { prom = execFileSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).trim(); } catch { /* absent */ }
  const s = await serve(docWith({ views: { ro: { filter: { namePatterns: ['echo'] } } } }), []);
  const token = 'metrics-token-0123456789';
  // The gate: no token, no metrics.
  const anon = await fetch(`${s.base}/metrics`);
  assert.equal(anon.status, 401);
  const auth = { authorization: `Bearer ${TOKENS.alice}` };
  for (let i = 0; i < 3; i++) await call(s, 'alice', 'echo', { message: 'x' }, i);
  await call(s, 'bob', 'delete_repo');
  for (let i = 0; i < 3; i++) await call(s, 'bob', 'gh_search', {}, i);
  // A view's tools/list saves tokens.
  await fetch(`${s.base}/mcp/ro`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }, body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }) });
  // Methods a client invents add no series: each is counted as `other`.
  for (const method of ['made/up-1', 'made/up-2']) {
    const r = await fetch(`${s.base}/mcp`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method }, body: JSON.stringify({ jsonrpc: '2.0', id: 6, method, params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }) });
    assert.equal((await r.json()).error?.code, -32601, `${method} is not a method`);
  }
  const text = await (await fetch(`${s.base}/metrics`, { headers: auth })).text();
  assert.match(text, /^mcp_sieve_requests_total\{method="other",outcome="[a-z]+"\} 2$/m);
  assert.doesNotMatch(text, /made\/up/);
  assert.match(text, /^mcp_sieve_tool_calls_total\{tool="echo",upstream="",outcome="ok"\} 3$/m);
  assert.match(text, /^mcp_sieve_refusals_total\{reason="policy:no-delete-bob"\} 1$/m);
  assert.match(text, /^mcp_sieve_refusals_total\{reason="rate-limit:paid-api"\} 1$/m);
  assert.match(text, /^mcp_sieve_requests_total\{method="tools\/call",outcome="ok"\} 5$/m);
  assert.match(text, /^mcp_sieve_request_duration_seconds_count\{method="tools\/call"\} 7$/m);
  assert.match(text, /^mcp_sieve_tokens_saved_total\{how="view"\} [1-9]\d*$/m);
  assert.match(text, /^mcp_sieve_sessions 0$/m);
  if (!prom) {
    t.skip('Debian prometheus is not installed (scripts/bootstrap.sh installs it)');
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-prom-'));
  const port = await freePort();
  const target = new URL(s.base).host;
  writeFileSync(path.join(dir, 'rules.yml'), [
    'groups:',
    '  - name: mcp-sieve',
    '    interval: 1s',
    '    rules:',
    '      - record: mcp_sieve:echo_calls',
    '        expr: sum(mcp_sieve_tool_calls_total{tool="echo"})',
    '      - record: mcp_sieve:rate_limited',
    '        expr: sum(mcp_sieve_refusals_total{reason="rate-limit:paid-api"})',
    '',
  ].join('\n'));
  writeFileSync(path.join(dir, 'prometheus.yml'), [
    'global: {scrape_interval: 1s, evaluation_interval: 1s}',
    'rule_files: [rules.yml]',
    'scrape_configs:',
    '  - job_name: mcp-sieve',
    '    metrics_path: /metrics',
    `    authorization: {credentials: ${TOKENS.alice}}`,
    `    static_configs: [{targets: ["${target}"]}]`,
    '',
  ].join('\n'));
  const child = spawn(prom, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stderr.on('data', (c) => { log = (log + c).slice(-4000); });
  stops.push(async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    await sleep(500);
    rmSync(dir, { recursive: true, force: true });
  });
  const query = async (q) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await res.json();
    return body.data?.result ?? [];
  };
  let echo = [], limited = [], up = [];
  for (let i = 0; i < 60; i++) {
    await sleep(500);
    try {
      up = await query('up{job="mcp-sieve"}');
      echo = await query('mcp_sieve:echo_calls');
      limited = await query('mcp_sieve:rate_limited');
      if (echo.length && limited.length) break;
    } catch { /* not up yet */ }
  }
  assert.equal(up[0]?.value?.[1], '1', `scrape target not up; prometheus log:\n${log}`);
  assert.equal(echo[0]?.value?.[1], '3', `echo calls; log:\n${log}`);
  assert.ok(Number(limited[0]?.value?.[1]) > 0, 'rate-limited refusals');
  // A latency quantile needs two scrapes of the histogram.
  let hist = [];
  for (let i = 0; i < 20 && !hist.length; i++) {
    hist = await query('histogram_quantile(0.99, sum by (le) (rate(mcp_sieve_request_duration_seconds_bucket[1m])))');
    if (!hist.length) await sleep(500);
  }
  assert.equal(hist.length, 1, 'the p99 latency query answers a series');
  const direct = await query('sum(mcp_sieve_tool_calls_total{tool="echo"})');
  assert.equal(direct[0]?.value?.[1], '3');
});

test('--metrics off serves no metrics; --metrics-port serves them on a port of their own', async () => {
  const off = await serve(docWith({}), ['--metrics', 'off']);
  assert.equal((await fetch(`${off.base}/metrics`, { headers: { authorization: `Bearer ${TOKENS.alice}` } })).status, 404);
  const mport = await freePort();
  const own = await serve(docWith({}), ['--metrics-port', String(mport)]);
  await call(own, 'alice', 'echo', { message: 'x' });
  const text = await (await fetch(`http://127.0.0.1:${mport}/metrics`)).text();
  assert.match(text, /^mcp_sieve_tool_calls_total\{tool="echo",upstream="",outcome="ok"\} 1$/m);
  assert.equal((await fetch(`${own.base}/metrics`, { headers: { authorization: `Bearer ${TOKENS.alice}` } })).status, 404);
});

test('every log line about a request carries its method, id, principal and view, in human and JSON lines', async () => {
  // An alias's call writes a line while the request is handled; at debug, `answered` one after it.
  const doc = docWith({ views: { ro: { filter: { namePatterns: ['echo'] } } } });
  doc.tools[0].aliases = ['say'];
  for (const format of ['human', 'json']) {
    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-log-'));
    writeFileSync(path.join(dir, 'catalog.json'), JSON.stringify(doc));
    const s = await startNative({ extraArgs: ['--catalog', path.join(dir, 'catalog.json'), '--log-format', format], env: { MCP_SIEVE_TOKENS: JSON.stringify(TOKENS), MCP_SIEVE_LOG: 'debug,hyper=off' } });
    stops.push(async () => { await s.stop(); rmSync(dir, { recursive: true, force: true }); });
    const res = await fetch(`${s.base}/mcp/ro`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${TOKENS.alice}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'say' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'say', arguments: { message: 'x' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }),
    });
    assert.equal(res.status, 200);
    let lines = [];
    for (let i = 0; i < 50 && lines.length < 2; i++) {
      await sleep(100);
      // This request's lines (the harness's readiness pings are answered too, and a time of
      // day may hold "41"): by its id as each format writes it.
      lines = s.output().split('\n').filter((l) => /deprecated tool name|answered/.test(l) && /\bid=41\b|"jsonrpc\.request\.id":"41"/.test(l));
    }
    assert.equal(lines.length, 2, `a line in the request and one after it:\n${s.output()}`);
    for (const line of lines) {
      if (format === 'human') {
        assert.match(line, /\[method=tools\/call id=41 principal=alice view=ro\b[^\]]*\]$/, line);
      } else {
        const { span } = JSON.parse(line);
        assert.equal(span?.['mcp.method.name'], 'tools/call', line);
        assert.equal(span['jsonrpc.request.id'], '41', line);
        assert.equal(span['mcp_sieve.principal'], 'alice', line);
        assert.match(span['mcp_sieve.view'], /^ro\b/, line);
        assert.equal(span['gen_ai.tool.name'], 'say', line);
        assert.equal(span.name, 'request', line);
      }
    }
  }
});
