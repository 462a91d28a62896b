// E2E: Windows line ends (issue 60 item 2). A servers file written with CRLF, a stdio server
// whose every line ends in CRLF (as a Windows program writing text mode does, stderr too), and a
// client that sends CRLF: `mcp-sieve stdio --mcp-config FILE` reads each `\r\n` as a line end —
// lists and calls through it, the client's own CRLF lines are answered.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT } from '../security/helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
let tmp, config;

/** A stdio MCP server that ends every line it writes with CRLF. */
const UPSTREAM = `
import readline from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\r\\n');
process.stderr.write('crlf server ready\\r\\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'crlf', version: '1.0.0' } } });
  else if (m.method === 'tools/list') send({ id: m.id, result: { tools: [{ name: 'echo', description: 'Says its text back', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }] } });
  else if (m.method === 'tools/call') send({ id: m.id, result: { content: [{ type: 'text', text: 'echo: ' + m.params.arguments.text }] } });
  else if (m.method === 'ping') send({ id: m.id, result: {} });
  else if (m.id !== undefined) send({ id: m.id, error: { code: -32601, message: 'no ' + m.method } });
});
`;

before(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-crlf-'));
  const script = path.join(tmp, 'crlf-upstream.mjs');
  writeFileSync(script, UPSTREAM);
  config = path.join(tmp, 'servers.json');
  const text = JSON.stringify({ mcpServers: { crlf: { command: process.execPath, args: [script] } } }, null, 2);
  writeFileSync(config, text.replaceAll('\n', '\r\n') + '\r\n');
});
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

test('a CRLF servers file and a server writing CRLF: listed and called through mcp-sieve stdio', { timeout: 60_000 }, async () => {
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--mcp-config', config], stderr: 'pipe' });
  const client = new Client({ name: 'crlf-client', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['crlf_echo']);
    const r = await client.callTool({ name: 'crlf_echo', arguments: { text: 'hi' } });
    assert.equal(r.content[0].text, 'echo: hi');
  } finally {
    await client.close();
  }
});

test('a client that ends its lines with CRLF is answered', { timeout: 60_000 }, async () => {
  const p = spawn(BIN, ['stdio', '--mcp-config', config], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  const answered = (id) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer to ${id}: ${out}`)), 30_000);
    const look = () => {
      const line = out.split('\n').find((l) => l.includes(`"id":${id}`));
      if (line) { clearTimeout(t); p.stdout.off('data', look); resolve(JSON.parse(line)); }
    };
    p.stdout.on('data', look);
    look();
  });
  p.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
  const send = (m) => p.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\r\n');
  try {
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'crlf', version: '1' } } });
    assert.ok((await answered(1)).result, out);
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 'crlf_echo', arguments: { text: 'from a CRLF client' } } });
    const r = await answered(2);
    assert.equal(r.result?.content?.[0]?.text, 'echo: from a CRLF client', JSON.stringify(r));
  } finally {
    p.stdin.end();
    p.kill();
  }
});
