// E2E: the desktop entry point (`mcp-sieve stdio`, one client over stdin/stdout, the process's
// one client as the principal) does what `mcp-sieve serve` does for a 2026-07-28 client's task at
// a session-era upstream that asks a question during the task (see task-asks.test.mjs).
// @modelcontextprotocol/server-everything (official SDK v1, 2025-11-25 sessions) runs
// `simulate-research-query` with `ambiguous: true` as a task: it says `input_required` on
// tasks/get and sends its elicitation only on that task's tasks/result stream, once. The
// official SDK v2 client (`@modelcontextprotocol/client`) launches `target/debug/mcp-sieve stdio`
// with `StdioClientTransport`, pinned to 2026-07-28 and declaring the tasks extension (SEP-2663)
// and elicitation: it sees the question inline in tasks/get (`inputRequests`), answers it with
// tasks/update (`inputResponses`), and then sees the task completed with a result that names its
// answer; a key the task did not ask is -32602. The upstream is server-everything over
// Streamable HTTP (`--catalog`) and over stdio, started by mcp-sieve (`--mcp-config`). A
// 2025-11-25 client over stdio is still asked on its session, during tasks/result. Only native
// processes: needs target/debug/mcp-sieve (scripts/build.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { statelessRequest, TASKS_CAPS } from '../common/mcp-raw.mjs';
import { SNAKE, theQuestion, answeredSnake, untilTask } from '../common/task-asks.mjs';
import { startEverything, ROOT } from '../security/helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const TOOL = 'everything_simulate-research-query';
const CAPS = { ...TASKS_CAPS, elicitation: {} };
const Anything = z.object({}).passthrough();

let everything, tmp, catalog, servers;

before(async () => {
  everything = await startEverything();
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-task-asks-stdio-'));
  // server-everything over Streamable HTTP (a catalog), and over stdio, started by mcp-sieve (the
  // desktop clients' `mcpServers` file): the same tool names either way.
  catalog = ['--catalog', path.join(tmp, 'catalog.json')];
  writeFileSync(catalog[1], JSON.stringify({ upstreams: { everything: { url: everything.url } } }));
  servers = ['--mcp-config', path.join(tmp, 'servers.json')];
  writeFileSync(servers[1], JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } }));
}, { timeout: 120_000 });

after(async () => {
  await everything?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/**
 * Runs `f(client)` with the SDK v2 client in `mode` declaring `capabilities`, over
 * `mcp-sieve stdio ARGS` it launched; closes it (and so the process) after. `client.stateless`
 * sends a 2026-07-28 request over its transport as is, `client.raw` any message: the SDK refuses
 * a `resultType: "task"` answer (and a 2025-11-25 `{task}`), so a creating call goes that way.
 */
async function over(args, f, { mode = { pin: '2026-07-28' }, capabilities = CAPS } = {}) {
  const client = new Client({ name: 'task-asks-stdio', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', ...args], stderr: 'pipe' });
  await client.connect(transport);
  const inner = transport.onmessage;
  const waiting = new Map();
  transport.onmessage = (m, extra) => {
    const done = waiting.get(m.id);
    if (done) { waiting.delete(m.id); done(m); } else inner?.(m, extra);
  };
  let n = 0;
  client.raw = async (message) => {
    message.id = `raw-${++n}`;
    const answer = new Promise((resolve) => waiting.set(message.id, resolve));
    await transport.send(message);
    return answer;
  };
  client.stateless = (method, params) => client.raw(statelessRequest(method, params, { capabilities }).message);
  try {
    await f(client);
  } finally {
    await client.close().catch(() => {});
  }
}

const get = (client, id) => client.request({ method: 'tasks/get', params: { taskId: id } }, Anything);
const finished = (t) => ['completed', 'failed', 'cancelled'].includes(t.status);

/** tasks/get of `id` until `done(task)` holds (at most `ms`), each seen checked by `each`: the last. */
const until = (client, id, done, opts) => untilTask(() => get(client, id), done, opts);

/** Creates the research task (a 2026-07-28 call declaring the tasks extension): its id. */
async function research(client) {
  const created = await client.stateless('tools/call', { name: TOOL, arguments: { topic: 'python', ambiguous: true } });
  assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
  return created.result.taskId;
}

/** The task's question asked in tasks/get, a forged key refused, the answer taken by tasks/update. */
async function askedInline(client) {
  const id = await research(client);
  const waiting = await until(client, id, (t) => t.status === 'input_required' && t.inputRequests);
  const key = theQuestion(waiting);
  // Polled again, the same question under the same key (the upstream handed it out once).
  assert.deepEqual((await get(client, id)).inputRequests, waiting.inputRequests);

  // A key the task did not ask is refused, naming it.
  const forged = await client.request({ method: 'tasks/update', params: { taskId: id, inputResponses: { 'relay-forged-1': SNAKE } } }, Anything)
    .then((r) => assert.fail(`a forged key was taken: ${JSON.stringify(r)}`), (e) => e);
  assert.equal(forged.code, -32602, String(forged));
  assert.match(forged.message, /params\.inputResponses\.relay-forged-1/);
  assert.equal((await get(client, id)).status, 'input_required', 'nothing answered it yet');

  const ack = await client.stateless('tasks/update', { taskId: id, inputResponses: { [key]: SNAKE } });
  assert.deepEqual(ack.result, { resultType: 'complete' }, JSON.stringify(ack));
  answeredSnake(await until(client, id, finished));
}

test('mcp-sieve stdio, an HTTP upstream: a question asked during a 2026-07-28 client\'s task shows in tasks/get and is answered with tasks/update', { timeout: 90_000 }, async () => {
  await over(catalog, askedInline);
});

test('mcp-sieve stdio, a stdio upstream it started (--mcp-config): the same question in tasks/get, answered with tasks/update', { timeout: 90_000 }, async () => {
  await over(servers, askedInline);
});

test('mcp-sieve stdio: a 2026-07-28 client that did not declare elicitation is not asked; the task goes on with the upstream\'s default', { timeout: 90_000 }, async () => {
  await over(catalog, async (client) => {
    const id = await research(client);
    const never = (t) => assert.equal(t.inputRequests, undefined, `never asked: ${JSON.stringify(t)}`);
    const task = await until(client, id, finished, { each: never });
    assert.equal(task.status, 'completed', JSON.stringify(task).slice(0, 400));
    assert.match(task.result?.content?.[0]?.text ?? '', /elicitation unavailable/,
      `server-everything went on with its default: ${JSON.stringify(task).slice(0, 400)}`);
  }, { capabilities: TASKS_CAPS });
});

test('mcp-sieve stdio: a 2025-11-25 client is still asked on its session, during the task\'s tasks/result', { timeout: 90_000 }, async () => {
  await over(catalog, async (client) => {
    const asked = [];
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return SNAKE;
    });
    const created = await client.raw({ jsonrpc: '2.0', method: 'tools/call',
      params: { name: TOOL, arguments: { topic: 'python', ambiguous: true }, task: { ttl: 60_000 } } });
    const id = created.result?.task?.taskId;
    assert.equal(typeof id, 'string', `a 2025-11-25 task: ${JSON.stringify(created)}`);
    const result = await client.request({ method: 'tasks/result', params: { taskId: id } }, Anything, { timeout: 60_000 });
    assert.equal(asked.length, 1, `asked once on its session: ${JSON.stringify(asked)}`);
    assert.match(asked[0], /"python" could have multiple interpretations/);
    answeredSnake({ status: 'completed', result });
  }, { mode: 'legacy', capabilities: { elicitation: {} } });
});
