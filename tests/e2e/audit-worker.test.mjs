// The Worker's audit trail (issue 42 item 4): with the document's `audit`, each use is one JSON
// line on the console (Workers Logs) — allowed, refused by policy (its rule's id), refused by a
// rate limit (its Durable Object), unknown — payloads PII-redacted when asked; and the counters'
// Analytics Engine binding (MCP_SIEVE_METRICS, in wrangler.toml) is written without error
// (wrangler dev accepts data points locally but keeps nothing to read back). Issue 58 item 8: a
// body the Worker refuses (a string past the body limits) is recorded as refused, payloads are
// cut at 16 KB and marked, DEL and C1 are escaped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWith, sleep } from '../security/helpers.mjs';

const TOKENS = { alice: 'token-alice-0123456789', bob: 'token-bob-0123456789' };
const DOC = {
  tools: [
    { name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } },
    { name: 'delete_repo', description: 'Delete', inputSchema: { type: 'object' }, tags: ['destructive'] },
    { name: 'gh_search', description: 'Search', inputSchema: { type: 'object' } },
  ],
  policy: { rules: [{ id: 'no-delete-bob', when: { principal: 'bob' }, hide: { tags: ['destructive'] } }] },
  limits: { rates: [{ id: 'paid-api', match: { tools: ['gh_*'] }, rate: 1, perSeconds: 60 }] },
  audit: { payloads: true },
};

let server;
before(async () => {
  server = await startWith(DOC, { MCP_SIEVE_TOKENS: JSON.stringify(TOKENS) }, { logLevel: 'log' });
});
after(async () => { await server?.stop(); });

async function call(who, name, args = {}) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS[who]}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } } } }),
  });
  return res.status;
}

test('each use is one JSON line on the console with its decision and reason', async () => {
  assert.equal(await call('alice', 'echo', { message: 'mail dave@example.net' }), 200);
  assert.equal(await call('bob', 'delete_repo'), 200);
  assert.equal(await call('alice', 'gh_search'), 200);
  assert.equal(await call('alice', 'gh_search'), 429);
  assert.equal(await call('alice', 'nope'), 200);
  let records = [];
  for (let i = 0; i < 20 && records.length < 5; i++) {
    await sleep(200);
    records = server.output().split('\n').map((l) => l.slice(l.indexOf('{"time"'))).filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l));
  }
  assert.deepEqual(records.map((r) => [r.principal, r.item, r.decision, r.reason]), [
    ['alice', 'echo', 'allowed', 'allowed'],
    ['bob', 'delete_repo', 'refused', 'policy:no-delete-bob'],
    ['alice', 'gh_search', 'allowed', 'allowed'],
    ['alice', 'gh_search', 'refused', 'rate-limit:paid-api'],
    ['alice', 'nope', 'refused', 'unknown'],
  ]);
  assert.deepEqual(records[0].arguments, { message: 'mail [EMAIL_1]' });
  assert.ok(!server.output().includes('dave@example.net'));
  assert.ok(!server.output().includes('data point could not be written'), server.output());
});

test('a body the Worker refuses is recorded as refused; payloads are cut at 16 KB and marked; DEL and C1 are escaped', async () => {
  const from = server.output().length;
  // A string past the 256 KB string limit: -32600, the call never ran.
  await call('alice', 'echo', { message: 'x'.repeat(300 * 1024) });
  // Allowed, with DEL and C1 (NEL, CSI) in an argument.
  assert.equal(await call('alice', 'echo', { message: 'a\x7fb\x85c\x9b2J' }), 200);
  let records = [];
  for (let i = 0; i < 30 && records.length < 2; i++) {
    await sleep(200);
    records = server.output().slice(from).split('\n').map((l) => l.slice(l.indexOf('{"time"'))).filter((l) => l.startsWith('{"time"'));
  }
  assert.equal(records.length, 2, server.output().slice(from, from + 2000));
  const [big, odd] = records.map((l) => JSON.parse(l));
  assert.deepEqual([big.decision, big.reason, big.errorCode], ['refused', 'invalid-request', -32600]);
  assert.equal(big.argumentsTruncated, true);
  assert.ok(big.argumentsBytes > 300 * 1024, String(big.argumentsBytes));
  assert.ok(records[0].length < 17 * 1024, `a record of ${records[0].length} bytes`);
  assert.equal(odd.arguments.message, 'a\x7fb\x85c\x9b2J');
  assert.doesNotMatch(records[1], /[\x7f-\x9f]/, 'a raw DEL or C1 in the record');
  assert.match(records[1], /a\\u007fb\\u0085c\\u009b2J/);
});
