// Issue 13, item 6: initial checks on every stateless request. A catalog whose
// policy.initialChecks admits only clients named "trusted-*" and requires the "sampling"
// capability: a 2026-07-28 request (no initialize) from another client is refused before
// anything else, and every refusal names the failed check, never the allow-list.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LEGACY, MODERN, post } from '../common/mcp-raw.mjs';
import { ROOT, startWith } from './helpers.mjs';

const ALLOW = 'trusted-*';
const doc = JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));
doc.policy.initialChecks = [{ allowClients: [ALLOW] }, { requireCapability: 'sampling' }];

let server;
before(async () => { server = await startWith(doc); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

let nextId = 1;
/** A stateless request from `client` with `capabilities`. */
function statelessAs(client, capabilities, method, params = {}) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: client, version: '1' },
  };
  return post(server.url, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } }, {
    headers: { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, ...(params.name ? { 'Mcp-Name': params.name } : {}) },
  });
}

function refused(r, what) {
  const err = r.response?.error ?? r.messages[0]?.error;
  assert.ok(err, `${what} must be refused by the initial checks; got HTTP ${r.status} ${r.text.slice(0, 300)}`);
  assert.ok(!err.message.includes(ALLOW), `${what}: the refusal must not reveal the allow-list: ${err.message}`);
  return err;
}

test('6. control: an admitted client is served statelessly', async () => {
  const r = await statelessAs('trusted-host', { sampling: {} }, 'tools/list');
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.ok(r.response.result.tools.length > 0);
});

for (const [method, params] of [['tools/list', {}], ['tools/call', { name: 'echo', arguments: { message: 'hi' } }]]) {
  test(`6. a stateless ${method} from a client the checks refuse is refused, naming the failed check`, async () => {
    const r = await statelessAs('intruder', { sampling: {} }, method, params);
    const err = refused(r, method);
    assert.match(err.message, /intruder/, 'the message names what failed: this client');
    assert.match(err.message, /not allowed/);
  });
}

test('6. a stateless request lacking a required capability is refused, naming the capability', async () => {
  const r = await statelessAs('trusted-host', {}, 'tools/list');
  const err = refused(r, 'tools/list without sampling');
  assert.match(err.message, /sampling/);
});

test('6. the legacy initialize refusal names the failed check, not the allow-list', async () => {
  const r = await post(server.url, { jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: { sampling: {} }, clientInfo: { name: 'intruder', version: '1' } } });
  const err = refused(r, 'initialize');
  assert.match(err.message, /intruder/);
});
