// E2E: context middleware through the real Worker (wrangler dev) — or the native server with
// SIEVE_TARGET=native — with the official MCP SDK client via `client.request`: the capability
// appears only for allowed clients when the catalog enables middleware, middleware/list, and a
// pii_redaction → pii_restoration round trip that gives the original context back exactly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startTarget } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BUILTINS = ['pii_redaction', 'pii_restoration', 'content_moderation', 'timestamp_injector', 'tool_filter'];
const Anything = z.object({}).passthrough();

const doc = JSON.parse(fs.readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));
doc.middleware = { enabled: BUILTINS, allowClients: ['sieve-e2e*'], pii: { names: ['Jane Smith'] } };

let server;
let tmp;

before(async () => {
  let extraArgs;
  if (process.env.SIEVE_TARGET === 'native') {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sieve-mw-'));
    const file = path.join(tmp, 'catalog.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    extraArgs = ['--catalog', file];
  } else {
    extraArgs = ['--var', `MCP_SIEVE_CONFIG:${JSON.stringify(doc)}`];
  }
  server = await startTarget({ extraArgs });
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** An SDK client named `name`; returns { client, raw } with every raw message it received. */
async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(server.url));
  const raw = [];
  transport.onmessage = (msg) => raw.push(msg);
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return { client, raw };
}

const capabilitiesOf = (raw) => raw.find((m) => m.result?.protocolVersion)?.result.capabilities;

test('the capability and middleware/list for an allowed client', async () => {
  const { client, raw } = await connect('sieve-e2e-middleware');
  try {
    assert.deepEqual(capabilitiesOf(raw).contextMiddleware, {});
    const list = await client.request({ method: 'middleware/list', params: {} }, Anything);
    assert.deepEqual(list.middleware.map((m) => m.name), BUILTINS);
    for (const m of list.middleware) {
      assert.equal(typeof m.description, 'string');
      assert.equal(m.inputSchema.type, 'object');
    }
  } finally {
    await client.close();
  }
});

test('pii_redaction then pii_restoration gives the context back exactly', async () => {
  const { client } = await connect('sieve-e2e-middleware');
  try {
    const context = [
      { type: 'text', text: 'Please review this contract for Jane Smith (jane.smith@example.com, SSN: 987-65-4321), card 4111 1111 1111 1111.' },
      { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
      { type: 'tool_use', id: 'c1', name: 'send_email', input: { to: 'jane.smith@example.com' } },
    ];
    const red = await client.request(
      { method: 'middleware/invoke', params: { name: 'pii_redaction', arguments: {}, context } }, Anything);
    assert.equal(red.content[0].text,
      'Please review this contract for [PERSON_1] ([EMAIL_1], SSN: [SSN_1]), card [CARD_1].');
    assert.deepEqual(red.content[1], context[1]);
    assert.equal(red.content[2].input.to, '[EMAIL_1]');
    assert.deepEqual(red.metadata.redactions, {
      PERSON_1: 'Jane Smith', EMAIL_1: 'jane.smith@example.com', SSN_1: '987-65-4321', CARD_1: '4111 1111 1111 1111',
    });
    const back = await client.request({ method: 'middleware/invoke', params: {
      name: 'pii_restoration', arguments: { redactions: red.metadata.redactions }, context: red.content,
    } }, Anything);
    assert.deepEqual(back.content, context);
  } finally {
    await client.close();
  }
});

test('bad arguments are -32602 naming the path; other clients cannot use middleware', async () => {
  const { client } = await connect('sieve-e2e-middleware');
  try {
    await assert.rejects(
      client.request({ method: 'middleware/invoke', params: { name: 'pii_redaction', arguments: { aggressiveness: 'ultra' }, context: [] } }, Anything),
      (e) => e instanceof McpError && e.code === -32602 && e.message.includes('params.arguments.aggressiveness'));
  } finally {
    await client.close();
  }
  const other = await connect('outsider');
  try {
    assert.equal(capabilitiesOf(other.raw).contextMiddleware, undefined);
    await assert.rejects(
      other.client.request({ method: 'middleware/list', params: {} }, Anything),
      (e) => e instanceof McpError && e.code === -32601);
  } finally {
    await other.client.close();
  }
});
