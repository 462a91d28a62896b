// E2E (the Worker, or the native server with SIEVE_TARGET=native): a 2026-07-28 upstream that
// asks its client mid-call the way that revision does — it answers the call `resultType:
// "input_required"` with `inputRequests`, and expects the call again with `inputResponses` —
// behind the gateway. The upstream is a chained native mcp-sieve serving
// catalog/conformance.json (its fixture tools ask for sampling or elicitation that way), behind
// a recording proxy; the official SDK v2 client (@modelcontextprotocol/client) is in front, in
// both eras. A 2025-11-25 session's client is asked on the call's SSE stream and sees one
// ordinary call, while the upstream gets the call twice (the second time with the answer under
// its own key); a 2026-07-28 client gets the gateway's own input_required (the key namespaced by
// the upstream, a requestState of the gateway's, signed), which the SDK's multi-round-trip
// driver answers; raw retries with a forged or altered requestState, or with the state given for
// another tool, are refused and never reach the upstream; a client without the capability gets a
// clear error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startNative } from './harness.mjs';
import { startWith, recordingProxy, ROOT } from '../security/helpers.mjs';
import { MODERN, post } from '../common/mcp-raw.mjs';

let upstream, proxy, gateway;

before(async () => {
  upstream = await startNative({ extraArgs: ['--catalog', path.join(ROOT, 'catalog', 'conformance.json')] });
  proxy = await recordingProxy(upstream.url);
  gateway = await startWith({ upstreams: { conf: { url: proxy.url } } });
}, { timeout: 120_000 });

after(async () => {
  await gateway?.stop();
  await proxy?.stop();
  await upstream?.stop();
});

/** An SDK v2 client (`mode`) with `capabilities`; what it was asked is in `asked`. */
async function connect(mode, capabilities = { sampling: {}, elicitation: {} }) {
  const client = new Client({ name: 'mrtr-e2e', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  client.asked = [];
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', async (req) => {
      client.asked.push(req.params.messages[0].content.text);
      return { role: 'assistant', content: { type: 'text', text: 'four, said the model' }, model: 'm', stopReason: 'endTurn' };
    });
  }
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', async (req) => {
      client.asked.push(req.params.message);
      return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  return client;
}

const text = (r) => r.content.map((c) => c.text ?? '').join('\n');

/** The tools/call bodies the upstream received for `tool` since `from`. */
const calls = (tool, from) => proxy.bodies.slice(from).filter((b) => b.method === 'tools/call' && b.params?.name === tool);

for (const [era, mode] of [['2025-11-25 session', 'legacy'], ['2026-07-28', { pin: MODERN }]]) {
  test(`a ${era} client answers the upstream's questions, and the upstream gets them under its own keys`, { timeout: 60_000 }, async () => {
    const client = await connect(mode);
    try {
      const from = proxy.bodies.length;
      const sampled = await client.callTool({ name: 'conf_test_sampling', arguments: { prompt: 'two plus two?' } });
      assert.equal(text(sampled), 'LLM response: four, said the model');
      const elicited = await client.callTool({ name: 'conf_test_elicitation', arguments: { message: 'who are you?' } });
      assert.match(text(elicited), /User response: action: accept, content: .*"username":"ada"/);
      assert.deepEqual(client.asked, ['two plus two?', 'who are you?']);
      // Each call reached the upstream twice: the question, then the answer under its key.
      const s = calls('test_sampling', from);
      assert.equal(s.length, 2, JSON.stringify(s));
      assert.equal(s[0].params.inputResponses, undefined);
      assert.deepEqual(Object.keys(s[1].params.inputResponses), ['ask']);
      assert.equal(s[1].params.inputResponses.ask.content.text, 'four, said the model');
      assert.equal(s[1].params.requestState, undefined, 'the upstream gave no state: none goes back');
      assert.equal(calls('test_elicitation', from)[1].params.inputResponses.ask.content.username, 'ada');
    } finally {
      await client.close().catch(() => {});
    }
  });
}

test('a client without the capability gets a clear error in either era', { timeout: 60_000 }, async () => {
  for (const mode of ['legacy', { pin: MODERN }]) {
    const client = await connect(mode, { elicitation: {} });
    try {
      const r = await client.callTool({ name: 'conf_test_sampling', arguments: { prompt: 'hi' } }).catch((e) => e);
      assert.match(r instanceof Error ? r.message : JSON.stringify(r), /sampling capability/, JSON.stringify(mode));
    } finally {
      await client.close().catch(() => {});
    }
  }
});

let nextId = 1;
/** A raw 2026-07-28 tools/call of `name` at the gateway with `params`. */
function modernCall(name, params) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  };
  return post(gateway.url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, ...params, _meta: meta } }, {
    headers: { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': name },
  });
}

/** `state` with its signature's last hex digit changed to another value (a fixed replacement
 * would, now and then, be the digit that was there: the test failed one run in 256). */
const altered = (state) => `${state.slice(0, -1)}${state.endsWith('0') ? '1' : '0'}`;

test('a 2026-07-28 client sees namespaced keys and a signed requestState; forged ones are refused', { timeout: 60_000 }, async () => {
  const args = { arguments: { message: 'raw?' } };
  const first = (await modernCall('conf_test_elicitation', args)).response.result;
  assert.equal(first.resultType, 'input_required');
  assert.deepEqual(Object.keys(first.inputRequests), ['conf/ask']);
  assert.equal(first.inputRequests['conf/ask'].method, 'elicitation/create');
  assert.equal(typeof first.requestState, 'string');
  const answer = { 'conf/ask': { action: 'accept', content: { username: 'raw', email: 'r@example.com' } } };
  const from = proxy.bodies.length;
  const refusedWith = async (name, params, re) => {
    const r = (await modernCall(name, { ...args, ...params })).response;
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.match(r.error.message, re);
  };
  await refusedWith('conf_test_elicitation', { inputResponses: answer, requestState: altered(first.requestState) }, /not issued by this gateway/);
  await refusedWith('conf_test_elicitation', { inputResponses: answer, requestState: first.requestState.replace('"conf"', '"evil"') }, /not issued by this gateway/);
  await refusedWith('conf_test_elicitation', { inputResponses: answer }, /without params.requestState/);
  await refusedWith('conf_test_elicitation_sep1034_defaults', { inputResponses: answer, requestState: first.requestState }, /another call/);
  assert.equal(calls('test_elicitation', from).length + calls('test_elicitation_sep1034_defaults', from).length, 0, 'nothing refused reached the upstream');
  const done = (await modernCall('conf_test_elicitation', { ...args, inputResponses: answer, requestState: first.requestState })).response.result;
  assert.equal(done.resultType, 'complete');
  assert.match(text(done), /"username":"raw"/);
});
