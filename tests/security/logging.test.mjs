// Issue 13, item 11: the `log` of each outcome (policy filter failures, ignored concern entries)
// reaches the platform's log: the Worker's console (wrangler dev with --log-level log, captured by
// the harness) or the native server's stderr; without conversation content.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, post } from '../common/mcp-raw.mjs';
import { sleep, startWith } from './helpers.mjs';

const MARKER = 'conversation-content-7d41e';
let server;
before(async () => { server = await startWith(null, {}, { logLevel: 'log' }); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

/** Waits up to 10 s (wrangler forwards the runtime's log with a delay) for `re` in the log. */
async function logged(re) {
  for (let i = 0; i < 100 && !re.test(server.output()); i++) await sleep(100);
  return re.test(server.output());
}

test('11. concern entries dropped from notifications/initialized are logged, without conversation content', { timeout: 30_000 }, async () => {
  const init = await post(server.url, { jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sec-log', version: '1' } } });
  const sid = init.headers.get('mcp-session-id');
  // notifications/initialized has no response: an invalid configuration can only be logged.
  const note = await post(server.url, { jsonrpc: '2.0', method: 'notifications/initialized',
    params: { concerns: { security: 'extreme' } } }, { sessionId: sid });
  assert.equal(note.status, 202);
  const echoed = await call(server.url, sid, 'tools/call', { name: 'echo', arguments: { message: MARKER } });
  assert.equal(echoed.status, 200);
  assert.ok(await logged(/concern[^\n]*(ignored|security|extreme)/i), `the dropped concern entry is logged; log tail:\n${server.output().slice(-1500)}`);
  assert.ok(!server.output().includes(MARKER), 'no conversation content in the log');
});
