// E2E: identity (MCP_SIEVE_TOKENS) against the Worker — or the native server with
// SIEVE_TARGET=native. A bearer token names the principal; policy rules by principal, views
// open to principals, and sessions bound to the principal that opened them, with the official
// SDK client sending the token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWith } from '../security/helpers.mjs';
import { toolNames as names } from './harness.mjs';

let server;
before(async () => {
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.policy = { rules: [{ when: { principal: 'bot*' }, hide: { tags: ['destructive'] } }] };
  doc.views.team = { filter: { groups: ['email'] }, principals: ['alice'] };
  server = await startWith(doc, { MCP_SIEVE_TOKENS: JSON.stringify({ alice: 'token-alice', bot: 'token-bot' }) });
}, { timeout: 120_000 });
after(async () => { await server?.stop(); });

async function as(token, url = server.url) {
  const client = new Client({ name: 'identity-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport };
}

test('the token names the principal: a policy rule by principal, a view open to one principal, sessions bound to theirs', { timeout: 60_000 }, async () => {
  const none = await fetch(server.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: '{}' });
  assert.equal(none.status, 401, 'no token: 401');
  const alice = await as('token-alice');
  const bot = await as('token-bot');
  try {
    const [a, b] = [await names(alice.client), await names(bot.client)];
    assert.ok(a.includes('delete_message'), 'alice sees destructive tools');
    assert.ok(!b.includes('delete_message'), 'the rule for bot* hides them from bot');
    await assert.rejects(bot.client.callTool({ name: 'delete_message', arguments: { id: '1' } }), /Unknown tool/);
    // Alice's session id with bot's token is unknown.
    const stolen = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: 'Bearer token-bot',
        'Mcp-Session-Id': alice.transport.sessionId, 'MCP-Protocol-Version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(stolen.status, 404);
  } finally { await alice.client.close(); await bot.client.close(); }
  const team = await as('token-alice', `${server.url}/team`);
  try {
    const t = await names(team.client);
    assert.ok(t.length > 0 && t.includes('send_email') && !t.includes('echo'), t.join(', '));
  } finally { await team.client.close(); }
  await assert.rejects(as('token-bot', `${server.url}/team`), /403|not open/);
});
