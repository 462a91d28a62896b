// Issue 38, item 12 (e, b), on the Worker and the native server alike: with every upstream down at
// start the server still answers initialize and lists what it has (nothing here) instead of
// refusing with -32603, and a call of the down upstream's tool names the upstream and why instead
// of "Unknown tool". (Coming back with list_changed: tests/e2e/upstream-health.test.mjs, native.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { call, openSession } from '../common/mcp-raw.mjs';
import { startWith } from './helpers.mjs';

let gw;

before(async () => {
  // A port nothing listens on: taken, then closed.
  const probe = net.createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const port = probe.address().port;
  await new Promise((r) => probe.close(r));
  gw = await startWith({ upstreams: { dead: { url: `http://127.0.0.1:${port}/mcp` } } });
}, { timeout: 180_000 });

after(async () => { await gw?.stop(); });

test('every upstream down at start: initialize answers, the list is empty, a call names the upstream', async () => {
  const url = `${gw.base}/mcp`;
  const { sessionId } = await openSession(url);
  assert.ok(sessionId, 'a session was opened');
  const list = await call(url, sessionId, 'tools/list', {});
  assert.deepEqual(list.response.result.tools, []);
  const r = await call(url, sessionId, 'tools/call', { name: 'dead_x', arguments: {} });
  assert.equal(r.response.error?.code, -32602);
  assert.match(r.response.error.message, /upstream "dead" is down \(.+\); its tool "dead_x" is unavailable until it is back/);
  const other = await call(url, sessionId, 'tools/call', { name: 'nobody_x', arguments: {} });
  assert.match(other.response.error.message, /Unknown tool/, 'a name no upstream owns stays unknown');
});
