// E2E: code mode's three multi-step tasks (issue 62 item 4, "Done when"), completed by the
// official MCP SDK client, unmodified, through `run_code` alone — against the native server
// (SIEVE_TARGET=native: `mcp-sieve serve`) and the Worker (`wrangler dev` of worker/build), each
// over the demo catalog (the embedded default) and over a gateway in front of
// @modelcontextprotocol/server-everything (prefix `ev_`), as bench/code-mode.mjs measures them.
// The tasks (program, calls, right answer) are tests/common/code-tasks.mjs, shared with the
// benchmark: read twenty records and return the three that match; fetch a page and a summary of
// it; create an item from another's fields. Per task the client does what a model in code mode
// does: reads the tool list (find_tools, describe_tools, run_code), asks describe_tools for the
// TypeScript of the tools it needs, sends the program, and gets the task's right answer back,
// having made the task's number of calls.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWith, startEverything } from '../security/helpers.mjs';
import { codeTasks } from '../common/code-tasks.mjs';

const where = process.env.SIEVE_TARGET === 'native' ? 'the native server' : 'the Worker';
let everything;

before(async () => { everything = await startEverything(); }, { timeout: 60_000 });
after(async () => { await everything?.stop(); });

/** The three tasks of `prefix` in code mode at the server `s` (started by startWith). */
async function completes(s, prefix) {
  const client = new Client({ name: 'code-mode-tasks-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}?mode=code`)));
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['find_tools', 'describe_tools', 'run_code']);
    for (const task of codeTasks(prefix)) {
      const d = await client.callTool({ name: 'describe_tools', arguments: { names: task.names } });
      for (const name of task.names) assert.ok(d.structuredContent.typescript.includes(name), `${task.id}: ${name} is declared:\n${d.structuredContent.typescript}`);
      const r = await client.callTool({ name: 'run_code', arguments: { code: task.program } });
      assert.equal(r.isError, undefined, `${task.id}: ${JSON.stringify(r)}`);
      task.check(r.structuredContent.result);
      assert.equal(r._meta['dev.mcp-sieve/run'].calls, task.calls, `${task.id}: the program's calls`);
    }
  } finally { await client.close(); }
}

test(`code mode over the demo catalog: the three tasks through run_code, on ${where}`, { timeout: 180_000 }, async () => {
  const s = await startWith(null);
  try { await completes(s, ''); } finally { await s.stop(); }
});

test(`code mode through a gateway in front of server-everything: the three tasks through run_code, on ${where}`, { timeout: 180_000 }, async () => {
  const s = await startWith({ upstreams: { ev: { url: everything.url, prefix: 'ev_' } } });
  try { await completes(s, 'ev_'); } finally { await s.stop(); }
});
