// The Worker's stateless fast path (worker/src/serve/fast.rs, worker/entry.mjs) answers exactly as the
// full path does, with the embedded catalog and in gateway mode (in front of the real
// @modelcontextprotocol/server-everything). A stateless POST with a Content-Length takes the fast
// path; the same request sent chunked (no Content-Length) takes the full path. With
// MCP_SIEVE_DIAGNOSTICS set, an answer of the fast path carries `X-Sieve-Path: fast`, so each pair
// is checked to have taken both paths.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWorker } from './harness.mjs';
import { outcome, post, postChunked, postMarked, statelessRequest } from '../common/mcp-raw.mjs';
import { startEverything, startWith } from '../security/helpers.mjs';

let worker;
let upstream;
let gateway;
before(async () => {
  worker = await startWorker({ extraArgs: ['--var', 'MCP_SIEVE_DIAGNOSTICS:1'] });
  upstream = await startEverything();
  gateway = await startWith({ upstream: { url: upstream.url, refreshSeconds: 3600 } }, { MCP_SIEVE_DIAGNOSTICS: '1' });
}, { timeout: 180_000 });
after(async () => {
  await worker?.stop();
  await gateway?.stop();
  await upstream?.stop();
});


/** [name, path (with query), body, extra headers, whether the fast path takes it] */
const cases = () => {
  const list = (params, opts) => statelessRequest('tools/list', params, { id: 7, ...opts });
  const c = [];
  const add = (name, { message, headers }, { path = '/mcp', extra = {}, fast = true } = {}) =>
    c.push([name, path, typeof message === 'string' ? message : JSON.stringify(message), { ...headers, ...extra }, fast]);
  add('tools/list', list());
  add('tools/list with a group filter', list({ filter: { groups: ['email'] } }));
  add('tools/list with a tag expression', list({ filter: { tags: { anyOf: ['read-only'] } } }));
  add('tools/list with a malformed filter', list({ filter: { groups: 'math' } }));
  add('tools/list with concerns', list({ _meta: { concerns: { security: 'high' } } }));
  add('tools/list through a view', list(), { path: '/mcp/email' });
  add('tools/list through a URL query', list(), { path: '/mcp?groups=email' });
  add('tools/list through an unknown view', list(), { path: '/mcp/no-such-view' });
  add('prompts/list', statelessRequest('prompts/list', {}, { id: 8 }));
  add('resources/list', statelessRequest('resources/list', {}, { id: 9 }));
  add('resources/templates/list', statelessRequest('resources/templates/list', {}, { id: 10 }));
  add('ping', statelessRequest('ping', {}, { id: 11 }));
  add('an unknown method', statelessRequest('no/such', {}, { id: 12 }));
  add('a notification', { message: { jsonrpc: '2.0', method: 'notifications/initialized', params: statelessRequest('ping').message.params }, headers: list().headers });
  add('a wrong Mcp-Method header', list(), { extra: { 'Mcp-Method': 'prompts/list' } });
  add('no protocol version', { message: { jsonrpc: '2.0', id: 13, method: 'tools/list' }, headers: {} });
  add('a wrong Content-Type', list(), { extra: { 'Content-Type': 'text/plain' } });
  add('a foreign Origin', list(), { extra: { Origin: 'https://evil.example' } });
  // Not taken by the fast path (the full path answers both).
  add('malformed JSON', { message: '{"jsonrpc":"2.0","id":1,"method":', headers: list().headers }, { fast: false });
  add('a batch', { message: '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', headers: list().headers }, { fast: false });
  add('tools/call', statelessRequest('tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, { id: 14 }), { fast: false });
  return c;
};

/** Sends each case chunked (the full path) and with a Content-Length, and compares the answers. */
async function bothWays(base, cases) {
  for (const [name, path, body, headers, fast] of cases) {
    const url = `${base.replace(/\/mcp$/, '')}${path}`;
    const full = await postChunked(url, body, headers);
    const quick = await postMarked(url, body, headers, fast);
    assert.equal(full.headers['x-sieve-path'], undefined, `${name}: a chunked request takes the full path`);
    assert.equal(quick.headers.get('x-sieve-path'), fast ? 'fast' : null, `${name}: ${fast ? 'takes' : 'does not take'} the fast path`);
    assert.deepEqual(
      outcome(quick.status, quick.headers.get('content-type'), quick.body),
      outcome(full.status, full.headers['content-type'], full.body),
      name,
    );
  }
}

test('every stateless request gets the same answer from the fast path and the full path', { timeout: 60_000 }, async () => {
  await bothWays(worker.url, cases());
});

test('a gateway answers lists from its cached upstream lists on the fast path, and forwards uses there too', { timeout: 90_000 }, async () => {
  const c = [];
  const add = (name, { message, headers }, fast) => c.push([name, '/mcp', JSON.stringify(message), headers, fast]);
  add('tools/list', statelessRequest('tools/list', {}, { id: 21 }), true);
  add('tools/list with a name pattern', statelessRequest('tools/list', { filter: { namePatterns: ['get*'] } }, { id: 22 }), true);
  add('resources/list', statelessRequest('resources/list', {}, { id: 23 }), true);
  add('resources/templates/list', statelessRequest('resources/templates/list', {}, { id: 24 }), true);
  add('prompts/list', statelessRequest('prompts/list', {}, { id: 25 }), true);
  add('ping', statelessRequest('ping', {}, { id: 26 }), true);
  // Forwarded: the upstream's POST sent by entry.mjs, its SSE answer read in the wasm (forward.rs).
  add('tools/call (forwarded)', statelessRequest('tools/call', { name: 'echo', arguments: { message: 'hi' } }, { id: 27 }), true);
  add('prompts/get (forwarded)', statelessRequest('prompts/get', { name: 'simple-prompt' }, { id: 28 }), true);
  add('tools/call of an unknown tool', statelessRequest('tools/call', { name: 'no-such-tool', arguments: {} }, { id: 29 }), true);
  await bothWays(gateway.url, c);
  const tools = await post(gateway.url, c[0][2], { headers: c[0][3] });
  assert.ok(tools.response.result.tools.some((t) => t.name === 'echo'), 'the upstream\'s tools are listed');
});

test("an isolate's first POST takes the fast path (its configuration loaded first): no full path compiled for it", () => {
  // The harness's ready probe (a ping) is the isolate's first request (worker/entry.mjs, `sieve_fast_prepare`).
  assert.equal(worker.first.headers.get('x-sieve-path'), 'fast');
});

test('the fast path filters: a group filter narrows the list it answers', async () => {
  const { message, headers } = statelessRequest('tools/list', { filter: { groups: ['email'] } });
  const narrowed = await postMarked(worker.url, message, headers);
  const all = statelessRequest('tools/list');
  const whole = await post(worker.url, all.message, { headers: all.headers });
  assert.equal(narrowed.headers.get('x-sieve-path'), 'fast');
  const n = narrowed.response.result.tools.length;
  assert.ok(n > 0 && n < whole.response.result.tools.length, `${n} of ${whole.response.result.tools.length}`);
});
