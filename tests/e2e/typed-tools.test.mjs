// E2E: typed tools (issue 23, item 9) against the Worker — or the native server with
// SIEVE_TARGET=native. A tool that declares an `outputSchema` answers `structuredContent` that
// conforms to it: every such tool of the default catalog is called with the official SDK client
// (whose callTool refuses a result without structuredContent or one that does not validate) and
// its structuredContent is validated again with Ajv (the validator the SDK uses). In gateway mode
// the upstream's structured results (server-everything's typed tools) pass through untouched.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { allTools, startTarget } from './harness.mjs';
import { startEverything, startWith } from '../security/helpers.mjs';

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

/** Arguments that satisfy `schema` (an inputSchema): each required property of its type. */
function argumentsFor(schema = {}) {
  const value = (s = {}) => {
    if (s.const !== undefined) return s.const;
    if (Array.isArray(s.enum)) return s.enum[0];
    if (s.default !== undefined) return s.default;
    switch (Array.isArray(s.type) ? s.type[0] : s.type) {
      case 'integer': case 'number': return Math.max(1, s.minimum ?? 1);
      case 'boolean': return true;
      case 'array': return [];
      case 'object': return argumentsFor(s);
      default: return s.format === 'uri' ? 'https://example.com/' : 'example';
    }
  };
  return Object.fromEntries((schema.required ?? []).map((k) => [k, value(schema.properties?.[k])]));
}

async function connect(url) {
  const client = new Client({ name: 'typed-tools-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Asserts that `result.structuredContent` validates against `tool.outputSchema`. */
function assertConforms(tool, result) {
  assert.ok(!result.isError, `${tool.name} answered an error: ${JSON.stringify(result).slice(0, 300)}`);
  assert.ok(result.structuredContent && typeof result.structuredContent === 'object',
    `${tool.name} declares an outputSchema but answered no structuredContent: ${JSON.stringify(result).slice(0, 300)}`);
  const validate = ajv.compile(tool.outputSchema);
  assert.ok(validate(result.structuredContent),
    `${tool.name}: structuredContent ${JSON.stringify(result.structuredContent)} does not conform: ${ajv.errorsText(validate.errors)}`);
}

let server;
before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

test('every default-catalog tool with an outputSchema answers conforming structuredContent (official SDK client + Ajv)', { timeout: 60_000 }, async () => {
  const client = await connect(server.url);
  try {
    const typed = (await allTools(client)).filter((t) => t.outputSchema);
    assert.equal(typed.length, 10, `the default catalog has 10 typed tools: ${typed.map((t) => t.name)}`);
    for (const tool of typed) {
      // The SDK's callTool itself throws when structuredContent is missing or invalid.
      const result = await client.callTool({ name: tool.name, arguments: argumentsFor(tool.inputSchema) });
      assertConforms(tool, result);
      const text = result.content.find((c) => c.type === 'text' && c.text.trim().startsWith('{'));
      assert.deepEqual(JSON.parse(text.text), result.structuredContent, `${tool.name} also answers its structured result as JSON text`);
    }
  } finally {
    await client.close();
  }
});

test('gateway mode: an upstream\'s structured results pass through untouched (server-everything)', { timeout: 120_000 }, async () => {
  const everything = await startEverything();
  let gateway;
  try {
    gateway = await startWith({ upstream: { url: everything.url } });
    const [direct, through] = [await connect(everything.url), await connect(gateway.url)];
    try {
      const typed = (await allTools(through)).filter((t) => t.outputSchema);
      assert.ok(typed.length >= 1, 'server-everything lists at least one tool with an outputSchema');
      const upstreamTools = new Map((await allTools(direct)).map((t) => [t.name, t]));
      for (const tool of typed) {
        assert.deepEqual(tool.outputSchema, upstreamTools.get(tool.name).outputSchema, `${tool.name}: the outputSchema passes through`);
        const args = argumentsFor(tool.inputSchema);
        const [a, b] = [await direct.callTool({ name: tool.name, arguments: args }), await through.callTool({ name: tool.name, arguments: args })];
        assertConforms(tool, b);
        assert.deepEqual(b.structuredContent, a.structuredContent, `${tool.name}: structuredContent as the upstream answered it`);
        assert.deepEqual(b.content, a.content, `${tool.name}: content as the upstream answered it`);
      }
    } finally {
      await direct.close();
      await through.close();
    }
  } finally {
    await gateway?.stop();
    await everything.stop();
  }
});
