// E2E: a tool that asks the client mid-call (sampling/createMessage, elicitation/create), with the
// official SDK v2 client (@modelcontextprotocol/client) against the Worker — or the native server
// with SIEVE_TARGET=native — serving catalog/conformance.json. Legacy mode (2025-11-25): the
// question arrives on the call's SSE stream and the client's answer is POSTed to the session.
// Pinned 2026-07-28: the call answers `input_required` and the client calls again with
// `inputResponses` (the SDK does both on its own).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startWorker, startNative } from './harness.mjs';

const CATALOG = readFileSync(new URL('../../catalog/conformance.json', import.meta.url), 'utf8');
let server;
let tmp;

before(async () => {
  if (process.env.SIEVE_TARGET === 'native') {
    tmp = mkdtempSync(path.join(tmpdir(), 'sieve-ask-'));
    writeFileSync(path.join(tmp, 'conformance.json'), CATALOG);
    server = await startNative({ extraArgs: ['--catalog', path.join(tmp, 'conformance.json')] });
  } else {
    server = await startWorker({ extraArgs: ['--var', `MCP_SIEVE_CONFIG:${CATALOG}`] });
  }
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

for (const [name, mode] of [['legacy (SSE stream, answer POSTed)', 'legacy'], ['2026-07-28 (input_required)', { pin: '2026-07-28' }]]) {
  test(`a tool asks the client mid-call: ${name}`, { timeout: 60_000 }, async () => {
    const client = new Client(
      { name: 'ask-e2e', version: '1.0.0' },
      { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode } },
    );
    const asked = [];
    client.setRequestHandler('sampling/createMessage', async (req) => {
      asked.push(req.params.messages[0].content.text);
      return { role: 'assistant', content: { type: 'text', text: 'four' }, model: 'test-model', stopReason: 'endTurn' };
    });
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'two plus two?' } });
      assert.equal(sampled.content[0].text, 'LLM response: four');
      const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who are you?' } });
      assert.match(elicited.content[0].text, /^User response: action: accept, content: .*ada@example.com/);
      assert.deepEqual(asked, ['two plus two?', 'who are you?'], 'the client was asked each question once');
    } finally {
      await client.close().catch(() => {});
    }
  });
}
