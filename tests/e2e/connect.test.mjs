// E2E: `mcp-sieve connect <client>` / `disconnect <client>` (native) on copies of the client
// fixtures of tests/fixtures/clients/ (Claude Desktop, Zed's settings.json, VS Code's tab-indented
// mcp.json) whose servers are the real @modelcontextprotocol/server-filesystem and server-memory
// (run with node from node_modules). After connect, the client's `sieve` entry is launched
// exactly as the client would (its command, args and env from the rewritten file) by the official
// SDK's StdioClientTransport, and the servers' tools are listed and called through mcp-sieve;
// connecting again changes nothing; disconnect gives back the original bytes. Also: --dry-run
// writes nothing, a broken file is refused untouched with its line and column, a VS Code file with
// comments and trailing commas is edited keeping them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync, existsSync, chmodSync, statSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { binOf, ROOT } from '../security/helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const FIXTURES = path.join(ROOT, 'tests', 'fixtures', 'clients');
let tmp;

before(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-connect-'));
  writeFileSync(path.join(tmp, 'hello.txt'), 'hello through mcp-sieve\n');
});
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

/** The fixture `name` with its servers replaced by the real ones (its other keys as they are). */
function realCopy(name, key, indent) {
  const doc = JSON.parse(readFileSync(path.join(FIXTURES, name), 'utf8'));
  const files = { command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), tmp] };
  const memory = {
    command: process.execPath,
    args: [binOf('@modelcontextprotocol/server-memory')],
    env: { MEMORY_FILE_PATH: path.join(tmp, `memory-${name}.jsonl`) },
  };
  doc[key] = key === 'servers'
    ? { files: { type: 'stdio', ...files }, memory: { type: 'stdio', ...memory } }
    : { files, memory };
  const file = path.join(tmp, name);
  writeFileSync(file, JSON.stringify(doc, null, indent) + '\n');
  return file;
}

function sieve(...args) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Lists (and calls) through the client's `sieve` entry, launched as the client launches it. */
async function throughEntry(entry, search) {
  const transport = new StdioClientTransport({
    command: entry.command, args: entry.args, env: entry.env, stderr: 'pipe',
  });
  const client = new Client({ name: 'desktop-client', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    if (search) {
      assert.deepEqual(names.sort(), ['call_tool', 'describe_tools', 'find_tools'].filter((n) => names.includes(n)).sort());
      assert.ok(names.includes('find_tools') && names.includes('call_tool'), names.join());
      const r = await client.callTool({ name: 'call_tool', arguments: { name: 'files_read_text_file', arguments: { path: path.join(tmp, 'hello.txt') } } });
      assert.match(JSON.stringify(r.content), /hello through mcp-sieve/);
    } else {
      assert.ok(names.includes('files_read_text_file'), names.join());
      assert.ok(names.includes('memory_read_graph'), names.join());
      const r = await client.callTool({ name: 'files_read_text_file', arguments: { path: path.join(tmp, 'hello.txt') } });
      assert.match(r.content[0].text, /hello through mcp-sieve/);
    }
    return names;
  } finally {
    await client.close();
  }
}

for (const [client, fixture, key, indent, search] of [
  ['claude-desktop', 'claude_desktop_config.json', 'mcpServers', 2, false],
  ['zed', 'zed-settings.json', 'context_servers', 2, true],
  ['vscode', 'vscode-mcp.json', 'servers', '\t', false],
]) {
  test(`connect ${client}: the client launches mcp-sieve over its own servers; disconnect restores its bytes`, { timeout: 120_000 }, async () => {
    const file = realCopy(fixture, key, indent);
    const servers = path.join(tmp, `servers-${client}.json`);
    const original = readFileSync(file);
    const flags = ['--config-path', file, '--servers', servers, ...(search ? ['--search'] : [])];

    const dry = sieve('connect', client, ...flags, '--dry-run');
    assert.equal(dry.code, 0, dry.err);
    assert.match(dry.out, new RegExp(`^--- ${servers}`, 'm'));
    assert.match(dry.out, /^-\s+"files": \{/m);
    assert.match(dry.out, /^\+\s+"sieve": \{/m);
    assert.deepEqual(readFileSync(file), original, 'a dry run writes nothing');
    assert.ok(!existsSync(servers));

    const done = sieve('connect', client, ...flags);
    assert.equal(done.code, 0, done.err);
    assert.deepEqual(readFileSync(`${file}.mcp-sieve-backup`), original, 'the backup is the file as it was');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    const before = JSON.parse(original);
    assert.deepEqual(Object.keys(doc), Object.keys(before), 'every key, in its order');
    assert.deepEqual(Object.keys(doc[key]), ['sieve']);
    const entry = doc[key].sieve;
    // The binary's own path as the OS gives it (current_exe): target/ may be a link (scripts/test.sh).
    assert.equal(entry.command, realpathSync(BIN));
    assert.deepEqual(entry.args.slice(0, 3), ['stdio', '--mcp-config', servers]);
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(servers, 'utf8')).mcpServers), ['files', 'memory']);

    await throughEntry(entry, search);

    const connected = readFileSync(file);
    const again = sieve('connect', client, ...flags);
    assert.equal(again.code, 0, again.err);
    assert.match(again.err, /connected already: nothing to change/);
    assert.deepEqual(readFileSync(file), connected, 'connecting twice changes nothing');

    const back = sieve('disconnect', client, '--config-path', file, '--servers', servers);
    assert.equal(back.code, 0, back.err);
    assert.deepEqual(readFileSync(file), original, 'disconnect restores the bytes');
    assert.deepEqual(JSON.parse(readFileSync(servers, 'utf8')).mcpServers, {});
    assert.ok(!existsSync(`${file}.mcp-sieve-backup`));
  });
}

test('disconnect after the user edited the client file keeps the edits', { timeout: 60_000 }, () => {
  const file = realCopy('claude_desktop_config.json', 'mcpServers', 2);
  const servers = path.join(tmp, 'servers-edited.json');
  assert.equal(sieve('connect', 'claude-desktop', '--config-path', file, '--servers', servers).code, 0);
  writeFileSync(file, readFileSync(file, 'utf8').replace('Alt+Space', 'Ctrl+Space'));
  const back = sieve('disconnect', 'claude-desktop', '--config-path', file, '--servers', servers);
  assert.equal(back.code, 0, back.err);
  assert.match(back.err, /your edits since connect kept/);
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(doc.globalShortcut, 'Ctrl+Space');
  assert.deepEqual(Object.keys(doc.mcpServers), ['files', 'memory']);
});

test('a file that does not parse is refused untouched, naming its line and column', () => {
  const file = path.join(tmp, 'broken.json');
  const text = '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n';
  writeFileSync(file, text);
  const r = sieve('connect', 'cursor', '--config-path', file, '--servers', path.join(tmp, 's.json'));
  assert.equal(r.code, 2);
  assert.match(r.err, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:\\d+: not valid JSON`));
  assert.equal(readFileSync(file, 'utf8'), text);
  assert.ok(!existsSync(`${file}.mcp-sieve-backup`));
});

test('connect vscode: an mcp.json with comments and trailing commas is edited keeping them; disconnect restores its bytes', { timeout: 120_000 }, async () => {
  const files = { type: 'stdio', command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), tmp] };
  const memory = { type: 'stdio', command: process.execPath, args: [binOf('@modelcontextprotocol/server-memory')] };
  const file = path.join(tmp, 'vscode-comments-mcp.json');
  const text = [
    '{',
    '\t// Servers of this workspace',
    '\t"servers": {',
    `\t\t"files": ${JSON.stringify(files)}, // the project folder`,
    `\t\t"memory": ${JSON.stringify(memory)},`,
    '\t},',
    '\t/* prompts for secrets */',
    '\t"inputs": [],',
    '}',
    '',
  ].join('\n');
  writeFileSync(file, text);
  const servers = path.join(tmp, 'servers-vscode-comments.json');
  const flags = ['--config-path', file, '--servers', servers];
  const done = sieve('connect', 'vscode', ...flags);
  assert.equal(done.code, 0, done.err);
  const connected = readFileSync(file, 'utf8');
  for (const kept of ['\t// Servers of this workspace\n', '\t/* prompts for secrets */\n\t"inputs": [],\n}\n']) {
    assert.ok(connected.includes(kept), `${JSON.stringify(kept)} kept:\n${connected}`);
  }
  assert.doesNotMatch(connected, /server-filesystem/);
  const entry = JSON.parse(/"sieve": (\{[^]*?\n\t\t\})/.exec(connected)[1]);
  assert.deepEqual(entry.args.slice(0, 3), ['stdio', '--mcp-config', servers]);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(servers, 'utf8')).mcpServers), ['files', 'memory']);
  await throughEntry(entry, false);
  const back = sieve('disconnect', 'vscode', ...flags);
  assert.equal(back.code, 0, back.err);
  assert.equal(readFileSync(file, 'utf8'), text, 'disconnect restores the bytes');
});

test('a client file the user made read-only is refused, saying so, and nothing is written', () => {
  for (const [what, ro] of [['client', 'client'], ['servers', 'servers']]) {
    const file = realCopy('claude_desktop_config.json', 'mcpServers', 2);
    const servers = path.join(tmp, `servers-ro-${what}.json`);
    writeFileSync(servers, '{\n  "mcpServers": {}\n}\n');
    const locked = ro === 'client' ? file : servers;
    chmodSync(locked, 0o444);
    const before = { client: readFileSync(file, 'utf8'), servers: readFileSync(servers, 'utf8') };
    for (const cmd of ['connect', 'disconnect']) {
      const r = sieve(cmd, 'claude-desktop', '--config-path', file, '--servers', servers);
      if (cmd === 'disconnect') {
        // Nothing to undo (never connected): the file is not touched either way.
        assert.equal(readFileSync(file, 'utf8'), before.client);
        continue;
      }
      assert.equal(r.code, 2, `${what}: ${r.err}`);
      assert.match(r.err, new RegExp(`${locked.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is read-only`));
      assert.match(r.err, /nothing was changed/);
      assert.equal(readFileSync(file, 'utf8'), before.client, `${what}: client file untouched`);
      assert.equal(readFileSync(servers, 'utf8'), before.servers, `${what}: servers file untouched`);
      assert.equal(statSync(locked).mode & 0o777, 0o444, `${what}: still read-only`);
      assert.ok(!existsSync(`${file}.mcp-sieve-backup`), `${what}: no backup`);
    }
    chmodSync(locked, 0o644);
  }
});

test('disconnect refuses a read-only client file, saying so, and keeps the backup', () => {
  const file = realCopy('claude_desktop_config.json', 'mcpServers', 2);
  const servers = path.join(tmp, 'servers-ro-disconnect.json');
  assert.equal(sieve('connect', 'claude-desktop', '--config-path', file, '--servers', servers).code, 0);
  const connected = readFileSync(file, 'utf8');
  chmodSync(file, 0o444);
  const r = sieve('disconnect', 'claude-desktop', '--config-path', file, '--servers', servers);
  assert.equal(r.code, 2, r.err);
  assert.match(r.err, /is read-only/);
  assert.equal(readFileSync(file, 'utf8'), connected);
  assert.ok(existsSync(`${file}.mcp-sieve-backup`));
  chmodSync(file, 0o644);
  assert.equal(sieve('disconnect', 'claude-desktop', '--config-path', file, '--servers', servers).code, 0);
});
