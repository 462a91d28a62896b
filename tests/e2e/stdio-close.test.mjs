// E2E: when `mcp-sieve stdio`'s one client leaves (its stdin closes), the process closes every
// upstream session it holds at an HTTP upstream with a `DELETE` naming it, before it exits: a
// 2026-07-28 client's holder's (`tasks:#`, opened for its task), the one its stateless calls
// share, the one the lists are fetched over, and a 2025-11-25 client's own. The official SDK v2
// client (`@modelcontextprotocol/client`) launches `target/debug/mcp-sieve stdio` with
// `StdioClientTransport`, as a desktop client does, and closes it: stdin ends, and the SDK waits
// 2 s before it sends SIGTERM, so the process must be done within that. The upstream is
// @modelcontextprotocol/server-everything over Streamable HTTP (2025-11-25 sessions) behind a
// recording proxy that sees each request's method and `Mcp-Session-Id`. Only native processes:
// needs target/debug/mcp-sieve (scripts/build.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { post, sessionHeaders, statelessRequest, TASKS_CAPS } from '../common/mcp-raw.mjs';
import { recordedEverything, ROOT } from '../security/helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');

let everything, proxy, catalog, recorded;

before(async () => {
  recorded = await recordedEverything('stdio-close');
  ({ everything, proxy, catalog } = recorded);
}, { timeout: 120_000 });

after(async () => {
  await recorded?.stop();
});

/**
 * Launches `mcp-sieve stdio` under the SDK v2 client in `mode` declaring `capabilities`, runs
 * `f(client)`, closes the client (its stdin ends) and hands back what reached the upstream from
 * launch to exit, and how long the close took.
 */
async function session(mode, capabilities, f) {
  const from = proxy.requests.length;
  const client = new Client({ name: 'stdio-close', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', catalog], stderr: 'pipe' });
  await client.connect(transport);
  let n = 0;
  const waiting = new Map();
  const inner = transport.onmessage;
  transport.onmessage = (m, extra) => {
    const done = waiting.get(m.id);
    if (done) { waiting.delete(m.id); done(m); } else inner?.(m, extra);
  };
  // A 2026-07-28 request sent as is (the SDK refuses a `resultType: "task"` answer), declaring
  // `caps` (the client's by default).
  client.stateless = async (method, params, caps = capabilities) => {
    const { message } = statelessRequest(method, params, { id: `raw-${++n}`, capabilities: caps });
    const answer = new Promise((resolve) => waiting.set(message.id, resolve));
    await transport.send(message);
    return answer;
  };
  try {
    await f(client);
  } catch (e) {
    await client.close().catch(() => {});
    throw e;
  }
  const started = Date.now();
  await client.close();
  return { requests: proxy.requests.slice(from), closeMs: Date.now() - started };
}

/**
 * `sessions` (upstream session ids) each got their DELETE before the process exited, which it
 * did by itself; the upstream no longer knows them.
 */
async function allClosed({ requests, closeMs }, sessions) {
  // The SDK sends SIGTERM 2 s after it ended stdin: a process still running then did not end by itself.
  assert.ok(closeMs < 2_000, `the process ended by itself once stdin closed (${closeMs} ms)`);
  const deleted = new Set(requests.filter((r) => r.method === 'DELETE').map((r) => r.session));
  assert.deepEqual(sessions.filter((s) => !deleted.has(s)), [], `each upstream session closed: ${sessions}; deleted: ${[...deleted]}`);
  for (const s of sessions) {
    const r = await post(everything.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { headers: sessionHeaders(s) });
    assert.ok([400, 404].includes(r.status), `the upstream no longer knows ${s}: ${r.status}`);
  }
}

/**
 * Each of the `processes` launched fetched the lists in one upstream session (a 2026-07-28
 * client's SDK first launches a sibling process for its `server/discover` probe and disposes of
 * it with SIGTERM as it ends its stdin, so the lists are fetched twice), and every upstream
 * session a request named got its DELETE, the sibling's too: none is left to expire.
 */
function oneListsSessionEach({ requests }, processes) {
  const lists = new Set(requests.filter((r) => r.method === 'POST' && r.body?.method === 'tools/list').map((r) => r.session));
  assert.equal(lists.size, processes, `the lists were fetched in one upstream session per process: ${[...lists]}`);
  const named = new Set(requests.filter((r) => r.session).map((r) => r.session));
  const deleted = new Set(requests.filter((r) => r.method === 'DELETE').map((r) => r.session));
  assert.deepEqual([...named].filter((s) => !deleted.has(s)), [], `every upstream session opened got its DELETE: ${[...named]}`);
}

/** The upstream session the last request matching `which` (its body) was sent in. */
const sentIn = (requests, which) => requests.findLast((r) => r.method === 'POST' && which(r.body ?? {}))?.session;
/** The upstream session the lists were last fetched over. */
const listsIn = (requests) => sentIn(requests, (b) => b.method === 'tools/list');

test('mcp-sieve stdio: a 2026-07-28 client leaving closes its holder\'s upstream session (its task\'s), the shared one and the lists\'', { timeout: 60_000 }, async () => {
  const seen = await session({ pin: '2026-07-28' }, TASKS_CAPS, async (client) => {
    const created = await client.stateless('tools/call', { name: 'everything_simulate-research-query', arguments: { topic: 'python' } });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    // Every call of a client that declares the tasks extension runs in its holder: one that
    // does not declare it is an ordinary stateless call, in the session such calls share.
    const echoed = await client.stateless('tools/call', { name: 'everything_echo', arguments: { message: 'shared' } }, {});
    assert.match(JSON.stringify(echoed.result), /shared/);
  });
  const holder = sentIn(seen.requests, (b) => b.method === 'tools/call' && b.params?.task);
  const shared = sentIn(seen.requests, (b) => b.method === 'tools/call' && b.params?.name === 'echo');
  assert.ok(holder && shared && holder !== shared, `the task ran in the holder's own upstream session (${holder}), the echo in the shared one (${shared})`);
  await allClosed(seen, [holder, shared, listsIn(seen.requests)]);
  oneListsSessionEach(seen, 2);
});

test('mcp-sieve stdio: a 2025-11-25 client leaving closes its session\'s upstream session', { timeout: 60_000 }, async () => {
  const seen = await session('legacy', {}, async (client) => {
    const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'own' } });
    assert.match(r.content[0].text, /own/);
  });
  const own = sentIn(seen.requests, (b) => b.method === 'tools/call' && b.params?.name === 'echo');
  assert.ok(own, 'the call reached the upstream in a session');
  await allClosed(seen, [own, listsIn(seen.requests)]);
  oneListsSessionEach(seen, 1);
});
