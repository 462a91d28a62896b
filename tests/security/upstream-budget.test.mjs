// Issue 38, item 3: one upstream's lists are budgeted (limits.maxItems, default 10,000 per list),
// so it cannot exhaust the gateway's memory and take the other upstreams down with the process.
// A hostile upstream offers 400,000 tools in 200 pages (about 24 MB of JSON) beside an honest
// one: the gateway refuses it at the budget, names the limit in the status, keeps serving the
// honest one, and its peak RSS stays bounded (the native server's /proc; the Worker has its own
// isolate limits and runs the same core budget, checked in tests/upstream_space.rs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { call, openSession } from '../common/mcp-raw.mjs';
import { native, startWith } from './helpers.mjs';

const TOKEN = 'budget-token-1';
const PAGES = 200;
const PER_PAGE = 2000;
/** Peak RSS the gateway may reach, kB (a debug build; 2.4 GB before the budget). */
const MAX_PEAK_KB = 250_000;
const servers = [];
let gw;
let pagesServed = 0;

async function upstream(pages, perPage, name) {
  const s = http.createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    const msg = raw ? JSON.parse(raw) : {};
    if (msg.id === undefined) { res.writeHead(202).end(); return; }
    const ok = (result) => { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })); };
    if (msg.method === 'initialize') return ok({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name, version: '1' } });
    if (msg.method === 'tools/list') {
      const n = Number(msg.params?.cursor ?? 0);
      if (name === 'big') pagesServed += 1;
      const tools = Array.from({ length: perPage }, (_, k) => ({ name: `tool_${n * perPage + k}`, description: 'x', inputSchema: { type: 'object' } }));
      return ok({ tools, nextCursor: n + 1 < pages ? String(n + 1) : undefined });
    }
    if (msg.method === 'tools/call') return ok({ content: [{ type: 'text', text: `${name}:${msg.params.name}` }] });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } }));
  });
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  servers.push(s);
  return `http://127.0.0.1:${s.address().port}/mcp`;
}

before(async () => {
  const big = await upstream(PAGES, PER_PAGE, 'big');
  const ok = await upstream(1, 2, 'ok');
  gw = await startWith({ upstreams: { big: { url: big, refreshSeconds: 3600 }, ok: { url: ok } } }, { MCP_SIEVE_TOKEN: TOKEN });
}, { timeout: 180_000 });

after(async () => {
  await gw?.stop();
  for (const s of servers) { s.closeAllConnections?.(); await new Promise((r) => s.close(r)); }
});

const auth = { Authorization: `Bearer ${TOKEN}` };

test('400,000 offered tools are refused at the budget; the other upstream serves', async () => {
  const url = `${gw.base}/mcp`;
  const { sessionId } = await openSession(url, { headers: auth });
  const names = (await call(url, sessionId, 'tools/list', {}, { headers: auth })).response.result.tools.map((t) => t.name);
  assert.deepEqual(names.filter((n) => n.startsWith('ok_')), ['ok_tool_0', 'ok_tool_1']);
  assert.ok(!names.some((n) => n.startsWith('big_')), 'none of the hostile upstream\'s tools');
  const r = await call(url, sessionId, 'tools/call', { name: 'ok_tool_1', arguments: {} }, { headers: auth });
  assert.equal(r.response.result.content[0].text, 'ok:tool_1');
  const status = await (await fetch(`${gw.base}/mcp-sieve/upstreams`, { headers: auth })).json();
  const big = status.upstreams.find((u) => u.name === 'big');
  assert.equal(big.state, 'down');
  assert.match(big.error, /more than 10000 items \(limits\.maxItems\)/);
  assert.ok(pagesServed <= 2 * 6, `the gateway stopped reading at the budget (${pagesServed} pages read)`);
});

test('the gateway\'s peak memory stays bounded (native)', { skip: !native() && 'native only: /proc of the server process' }, () => {
  const statusFile = readFileSync(`/proc/${gw.pid}/status`, 'utf8');
  const peak = Number(/VmHWM:\s+(\d+) kB/.exec(statusFile)[1]);
  assert.ok(peak < MAX_PEAK_KB, `peak RSS ${peak} kB < ${MAX_PEAK_KB} kB`);
});

test('what a stdio upstream writes to stderr never repeats a secret (native)', { skip: !native() && 'native only: stdio upstreams' }, async () => {
  const SECRET = 'sk-stdio-secret-0123456789';
  const script = "console.error('my token is ' + process.env.API_TOKEN + ' and ' + process.env.MCP_SIEVE_TOKEN)";
  const s = await startWith({ upstreams: { leaky: { command: process.execPath, args: ['-e', script], env: { API_TOKEN: '${LEAKY_TOKEN}' } } } },
    { MCP_SIEVE_TOKEN: TOKEN, LEAKY_TOKEN: SECRET });
  try {
    let out = '';
    for (let i = 0; i < 50 && !out.includes('my token is'); i++) { await new Promise((r) => setTimeout(r, 100)); out = s.output(); }
    assert.match(out, /my token is \[redacted:LEAKY_TOKEN\] and undefined/);
    assert.ok(!out.includes(SECRET), out);
  } finally {
    await s.stop();
  }
});
