// E2E: your MCP configuration as it is. A Claude Desktop-style `mcpServers` file with two stdio
// servers nobody here wrote (@modelcontextprotocol/server-filesystem, server-memory), one
// Streamable HTTP server (@modelcontextprotocol/server-everything, with a header that names an
// environment variable), a server that does not start, one that speaks garbage, and an entry that
// launches mcp-sieve itself — behind `mcp-sieve stdio --mcp-config FILE`, launched by the official
// SDKs' stdio transports exactly as the book's client snippets say (docs/src/desktop.md: the Claude Desktop / Cursor /
// Claude Code and VS Code JSON entries by the TypeScript SDK, the `claude mcp add` line by the
// Python SDK's stdio_client). Lists, searches and calls
// through it; the bad servers are named on stderr and leave their tools out; closing stdin ends
// mcp-sieve and the servers it started. Also `tools` and `init` on the same file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { startEverything, binOf, ROOT, sleep } from '../security/helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');

let everything, tmp, config;
const ENV = { ...process.env, SIEVE_TEST_KEY: 'k-123', SIEVE_TEST_DIR: '', HF_HUB_OFFLINE: '1' }; // no hub: search mode's encoder from the cache only

before(async () => {
  everything = await startEverything();
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-stdio-upstreams-'));
  writeFileSync(path.join(tmp, 'hello.txt'), 'hello from the filesystem server\n');
  ENV.SIEVE_TEST_DIR = tmp;
  config = path.join(tmp, 'servers.json');
  writeFileSync(config, JSON.stringify({
    mcpServers: {
      files: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), '${env:SIEVE_TEST_DIR}'] },
      memory: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-memory')], env: { MEMORY_FILE_PATH: '${SIEVE_TEST_DIR}/memory.jsonl' } },
      everything: { type: 'http', url: everything.url, headers: { 'X-Api-Key': '${SIEVE_TEST_KEY}' }, autoApprove: [] },
      broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] },
      // Alive, reading, and answering every line with garbage: down within seconds, not at the 30 s deadline.
      garbage: { command: process.execPath, args: ['-e', "process.stdin.on('data', () => console.log('this is not JSON-RPC'))"] },
      sieve: { command: 'mcp-sieve', args: ['stdio', '--mcp-config', 'servers.json'] },
    },
  }, null, 2));
}, { timeout: 120_000 });

after(async () => {
  await everything?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The book's chapter "Use it from Claude Desktop…" (docs/src/desktop.md), whole. */
function readmeSection() {
  return readFileSync(path.join(ROOT, 'docs', 'src', 'desktop.md'), 'utf8');
}

/** The `sieve` entries of the chapter's client snippets, each with the clients it says it is for. */
function readmeSnippets() {
  const section = readmeSection();
  return [...section.matchAll(/\n\n((?:[^\n]+\n)+)\n```json\n([\s\S]*?)```/g)].map((m) => {
    const b = JSON.parse(m[2]);
    return { ...(b.mcpServers ?? b.servers).sieve, clients: m[1] };
  });
}

/** Claude Code's command line in the chapter (`claude mcp add sieve -- mcp-sieve …`): the entry it makes. */
function claudeCodeCommand() {
  const m = readmeSection().match(/`claude mcp add sieve -- (mcp-sieve [^`]+)`/);
  assert.ok(m, 'the chapter gives the claude mcp add line');
  const [command, ...args] = m[1].split(/\s+/);
  return { command, args };
}

/** A snippet's entry with our binary and our configuration file (what a user edits in). */
function launch(entry, extra = []) {
  assert.equal(entry.command, 'mcp-sieve');
  const args = entry.args.map((a, i) => (entry.args[i - 1] === '--mcp-config' ? config : a));
  return { command: BIN, args: [...args, ...extra], env: ENV, stderr: 'pipe' };
}

function collect(transport) {
  let err = '';
  transport.stderr?.on('data', (d) => { err += d; });
  return () => err;
}

async function allNames(client) {
  const out = [];
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    out.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return out;
}

const pidAlive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('the client snippets of the book (Claude Desktop/Cursor/Claude Code and VS Code) launch mcp-sieve stdio over the configuration: search finds and calls tools of every upstream', { timeout: 120_000 }, async () => {
  const entries = readmeSnippets();
  assert.equal(entries.length, 2, 'two snippets: mcpServers and VS Code servers');
  assert.match(entries[0].clients, /Claude Desktop.*Cursor.*Claude Code/);
  assert.match(entries[1].clients, /VS Code/);
  for (const entry of entries) {
    const transport = new StdioV1(launch(entry));
    const stderr = collect(transport);
    const client = new ClientV1({ name: 'desktop-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['call_tool', 'describe_tools', 'find_tools']);
      const found = await client.callTool({ name: 'find_tools', arguments: { query: 'read the contents of a text file', limit: 5 } });
      const foundNames = found.structuredContent.tools.map((t) => t.name);
      assert.ok(foundNames.includes('files_read_text_file'), foundNames.join());
      const read = await client.callTool({ name: 'call_tool', arguments: { name: 'files_read_text_file', arguments: { path: path.join(tmp, 'hello.txt') } } });
      assert.match(read.content[0].text, /hello from the filesystem server/);
      const echoed = await client.callTool({ name: 'call_tool', arguments: { name: 'everything_echo', arguments: { message: 'through the sieve' } } });
      assert.match(echoed.content[0].text, /through the sieve/);
      const made = await client.callTool({ name: 'call_tool', arguments: { name: 'memory_create_entities', arguments: { entities: [{ name: 'ada', entityType: 'person', observations: ['wrote the first program'] }] } } });
      assert.ok(!made.isError, JSON.stringify(made));
      const graph = await client.callTool({ name: 'call_tool', arguments: { name: 'memory_read_graph', arguments: {} } });
      assert.match(JSON.stringify(graph), /first program/);
      // The bad servers are named on stderr, with why; their tools are simply not there.
      await sleep(200);
      assert.match(stderr(), /files \(stdio\): up, \d+ tools/, 'each upstream\'s start is reported');
      assert.match(stderr(), /broken \(stdio\): down, its tools are left out: /);
      assert.match(stderr(), /garbage \(stdio\): down, its tools are left out: .*it writes what is not JSON-RPC on stdout \("this is not JSON-RPC"\)/);
      assert.match(stderr(), /autoApprove/, 'an unknown field is a warning');
      assert.match(stderr(), /sieve.*mcp-sieve itself/, 'the entry that launches mcp-sieve is left out');
      assert.doesNotMatch(stderr(), /k-123/, 'the header secret is never logged');
    } finally {
      await client.close();
    }
  }
});

test('SDK v2 over stdio (auto, 2026-07-28) without --search: every upstream tool, namespaced, and calls', { timeout: 120_000 }, async () => {
  const transport = new StdioV2(launch(readmeSnippets()[0]));
  transport._serverParams.args = transport._serverParams.args.filter((a) => a !== '--search');
  const client = new ClientV2({ name: 'desktop-e2e-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const names = await allNames(client);
    for (const n of ['files_list_directory', 'files_read_text_file', 'memory_create_entities', 'everything_echo']) {
      assert.ok(names.includes(n), `${n} listed`);
    }
    assert.ok(!names.some((n) => n.startsWith('broken_') || n.startsWith('garbage_') || n.startsWith('sieve_')));
    const listed = await client.callTool({ name: 'files_list_directory', arguments: { path: tmp } });
    assert.match(listed.content[0].text, /hello\.txt/);
  } finally {
    await client.close();
  }
});

test('closing stdin ends mcp-sieve and the servers it started', { timeout: 60_000 }, async () => {
  const transport = new StdioV1(launch(readmeSnippets()[0]));
  const client = new ClientV1({ name: 'desktop-e2e-close', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools();
  const sieve = transport.pid;
  const children = spawnSync('ps', ['-o', 'pid=', '--ppid', String(sieve)], { encoding: 'utf8' }).stdout
    .split('\n').map((s) => Number(s.trim())).filter(Boolean);
  assert.ok(children.length >= 2, `mcp-sieve started its stdio servers (${children})`);
  await client.close(); // the SDK ends stdin first
  const t0 = Date.now();
  while ((pidAlive(sieve) || children.some(pidAlive)) && Date.now() - t0 < 10_000) await sleep(100);
  assert.ok(!pidAlive(sieve), 'mcp-sieve ended');
  assert.deepEqual(children.filter(pidAlive), [], 'its children ended with it');
});

test("the official Python SDK's stdio_client over the configuration, the search session launched as the book's claude mcp add line says", { timeout: 60_000 }, () => {
  const claude = launch(claudeCodeCommand());
  const spec = {
    command: BIN,
    args: ['stdio', '--mcp-config', config],
    env: { SIEVE_TEST_DIR: tmp, SIEVE_TEST_KEY: ENV.SIEVE_TEST_KEY },
    call: ['files_read_text_file', { path: path.join(tmp, 'hello.txt') }],
    outside: 'broken_anything',
    searchArgs: claude.args,
    query: 'read the contents of a text file',
  };
  const out = execFileSync(`${ROOT}/.venv/bin/python`, [`${ROOT}/tests/python/stdio_client.py`, JSON.stringify(spec)], { encoding: 'utf8', env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const seen = JSON.parse(out.trim().split('\n').pop());
  assert.match(seen.called, /hello from the filesystem server/);
  assert.match(seen.outside, /upstream "broken" is down .*its tool "broken_anything" is unavailable/, 'a down upstream is named, not an unknown tool');
  assert.ok(seen.listed.includes('files_read_text_file') && seen.listed.includes('everything_echo'), seen.listed.join());
  assert.deepEqual(seen.searchListed, ['call_tool', 'describe_tools', 'find_tools'], 'the claude mcp add line serves the search view');
  assert.ok(seen.found.includes('files_read_text_file'), seen.found.join());
});

test('tools prints every upstream tool and the search view against the full list; init writes a starter document that loads', { timeout: 120_000 }, () => {
  const full = execFileSync(BIN, ['tools', '--mcp-config', config], { encoding: 'utf8', env: ENV, stdio: ['ignore', 'pipe', 'ignore'] });
  assert.match(full, /files_read_text_file\s+files\s/);
  const search = execFileSync(BIN, ['tools', '--mcp-config', config, '--search'], { encoding: 'utf8', env: ENV, stdio: ['ignore', 'pipe', 'ignore'] });
  const [, shown, total, tokens, all] = search.match(/(\d+) of (\d+) tools: ~(\d+) of ~(\d+) tokens/);
  assert.equal(Number(shown), 3); // find_tools, describe_tools, call_tool
  assert.ok(Number(total) > 30 && Number(tokens) * 10 < Number(all), search);
  console.log(`# before/after: ${total} tools, ~${all} tokens in full; the search view ~${tokens} tokens`);
  const starter = path.join(tmp, 'sieve.json');
  execFileSync(BIN, ['init', '--mcp-config', config, '--output', starter], { env: ENV, stdio: 'ignore' });
  const doc = JSON.parse(readFileSync(starter, 'utf8'));
  assert.deepEqual(Object.keys(doc.upstreams).sort(), ['broken', 'everything', 'files', 'garbage', 'memory'], 'an entry per server of the configuration (mcp-sieve itself left out)');
  assert.equal(doc.views.search.mode, 'search');
  assert.ok(!JSON.stringify(doc).includes('k-123'), 'no secret in the starter document');
  const viewed = execFileSync(BIN, ['tools', '--mcp-config', config, '--catalog', starter, '--view', 'files'], { encoding: 'utf8', env: ENV, stdio: ['ignore', 'pipe', 'ignore'] });
  assert.match(viewed, /files_read_text_file/);
  assert.doesNotMatch(viewed, /everything_echo/);
});
