// E2E: `sieve/explain` in gateway mode in front of a real upstream
// (@modelcontextprotocol/server-everything on loopback, prefix "ev_") beside one that is down (a
// closed loopback port, prefix "gone_"), against the Worker — or the native server with
// SIEVE_TARGET=native — with the official SDK v2 client: a tool of the live upstream hidden by a
// policy rule names the rule; a tool of the down one names `upstream-down:gone`; a name nobody
// serves is the catalog's; and when the live upstream is stopped mid-test, its tools leave the
// list and explain names `upstream-down:ev`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { freePort } from './harness.mjs';
import { startEverything, startWith, sleep } from '../security/helpers.mjs';

let upstream;
let gw;

before(async () => {
  upstream = await startEverything();
  const closed = await freePort();
  gw = await startWith({
    upstreams: {
      ev: { url: upstream.url, prefix: 'ev_', refreshSeconds: 2 },
      gone: { url: `http://127.0.0.1:${closed}/mcp`, prefix: 'gone_', refreshSeconds: 2 },
    },
    policy: { rules: [{ id: 'no-env', hide: { namePatterns: ['ev_get-env'] } }] },
    explain: true,
  });
}, { timeout: 120_000 });

after(async () => {
  await gw?.stop();
  await upstream?.stop();
});

/** Any object with the answer's booleans and reasons (a custom method needs a result schema). */
const ANSWER = {
  '~standard': {
    version: 1,
    vendor: 'sieve-e2e',
    validate: (v) => (v && typeof v.visible === 'boolean' && Array.isArray(v.reasons)
      ? { value: v } : { issues: [{ message: `not a sieve/explain answer: ${JSON.stringify(v)}` }] }),
  },
};
const explain = (client, name) => client.request({ method: 'sieve/explain', params: { name } }, ANSWER);
const codes = (a) => a.reasons.map((r) => r.code);

test('in front of a live and a down upstream, explain names the rule, the down upstream or the catalog', { timeout: 90_000 }, async () => {
  const client = new Client({ name: 'explain-upstream', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('ev_echo') && !tools.includes('ev_get-env'), tools.join(','));
    assert.deepEqual(codes(await explain(client, 'ev_echo')), []);
    const env = await explain(client, 'ev_get-env');
    assert.deepEqual([env.exists, env.cause, codes(env)], [true, 'policy', ['policy:no-env']]);
    const gone = await explain(client, 'gone_anything');
    assert.deepEqual([gone.exists, gone.cause, codes(gone)], [false, 'upstream-down', ['upstream-down:gone']]);
    const nobody = await explain(client, 'ev_no_such_tool');
    assert.deepEqual([nobody.cause, nobody.reasons], ['catalog', []]);

    // The live upstream stops: once the gateway has noticed, its tools are out and explain says why.
    await upstream.stop();
    await client.callTool({ name: 'ev_echo', arguments: { message: 'x' } }).catch(() => {});
    let answer;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(500)) {
      answer = await explain(client, 'ev_echo');
      if (!answer.exists) break;
    }
    assert.deepEqual([answer.exists, answer.cause, codes(answer)], [false, 'upstream-down', ['upstream-down:ev']]);
    // A name in ev's prefix that ev never listed is not blamed on it.
    const never = await explain(client, 'ev_no_such_tool');
    assert.deepEqual([never.cause, never.reasons], ['catalog', []]);
    // The list agrees (after the client's cache of the last list, ttlMs, has run out).
    let listed = true;
    for (const deadline = Date.now() + 15_000; listed && Date.now() < deadline; await sleep(500)) {
      listed = (await client.listTools()).tools.some((t) => t.name === 'ev_echo');
    }
    assert.ok(!listed, 'ev_echo leaves the list');
  } finally { await client.close(); }
});
