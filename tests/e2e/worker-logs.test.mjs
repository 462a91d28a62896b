// The Worker's log lines are JSON (issue 42: what Workers Logs indexes; worker/src/telemetry/log.rs): a
// line the core writes about a request (here: a tool called by its deprecated alias) is one JSON
// object with its level, its message, and the request's id, method, principal and view — the
// view as the request's audit record names it; a line about no request (here: the session secret
// not set) has only level and message. Worker only (the native server logs through `tracing`,
// tested in otel.test.mjs and the security tests).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWith, native, sleep } from '../security/helpers.mjs';

const TOKENS = { alice: 'token-alice-0123456789' };
const DOC = {
  tools: [{ name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, aliases: ['say'], tags: ['basic'] }],
  views: { basics: { description: 'The basic tools', filter: { tags: ['basic'] } } },
  audit: {},
};
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' } };

let server;
before(async () => {
  if (native()) return;
  // No MCP_SIEVE_SESSION_SECRET: the Worker says so in a line about no request.
  server = await startWith(DOC, { MCP_SIEVE_TOKENS: JSON.stringify(TOKENS), MCP_SIEVE_SESSION_SECRET: '' }, { logLevel: 'log' });
});
after(async () => { await server?.stop(); });

/** The JSON lines of the Worker's output (wrangler dev colours a warning's and an error's). */
function jsonLines() {
  return server.output().split('\n')
    .map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''))
    .map((l) => l.slice(Math.max(0, l.indexOf('{"'))))
    .filter((l) => l.startsWith('{"'))
    .map((l) => { try { return JSON.parse(l); } catch { return null; } })
    .filter(Boolean);
}

/** The log lines (audit records have no `level`). */
const logLines = () => jsonLines().filter((o) => typeof o.level === 'string');

test('a line about a request is JSON with its id, method, principal and view', { skip: native() && 'the Worker\'s log (SIEVE_TARGET=native)' }, async () => {
  const res = await fetch(`${server.base}/mcp/basics`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS.alice}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'say' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'call-7', method: 'tools/call', params: { name: 'say', arguments: { message: 'hi' }, _meta: META } }),
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).result.content[0].text, 'hi');
  // The audit record is written after the answer, and may reach the output after the line.
  let line, record;
  for (let i = 0; i < 50 && !(line && record); i++) {
    line = logLines().find((o) => /deprecated tool name "say"/.test(o.message));
    record = jsonLines().find((o) => o.decision && o.item === 'say');
    if (!(line && record)) await sleep(100);
  }
  assert.ok(line, `no JSON line about the alias; output:\n${server.output().slice(-3000)}`);
  assert.deepEqual(
    { level: line.level, requestId: line.requestId, method: line.method, principal: line.principal },
    { level: 'info', requestId: 'call-7', method: 'tools/call', principal: 'alice' },
  );
  // The view by its label (`basics?…`, the endpoint's view and what shaped it), as the audit says.
  assert.match(line.view, /^basics\?/);
  assert.ok(record, `no audit record; output:\n${server.output().slice(-3000)}`);
  assert.deepEqual([record.principal, record.view, record.method], [line.principal, line.view, line.method]);
  // No log line of the Worker is left in the old plain form.
  assert.doesNotMatch(server.output(), /^\s*mcp-sieve: /m);
});

test('a line about no request has only its level and message', { skip: native() && 'the Worker\'s log (SIEVE_TARGET=native)' }, async () => {
  const line = logLines().find((o) => /MCP_SIEVE_SESSION_SECRET is not set/.test(o.message));
  assert.ok(line, `no JSON line about the secret; output:\n${server.output().slice(-3000)}`);
  assert.deepEqual(Object.keys(line).sort(), ['level', 'message']);
  assert.equal(line.level, 'warn');
});
