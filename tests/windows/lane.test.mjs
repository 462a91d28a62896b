// The Windows lane's end-to-end tests (issue 60), run by scripts/test-windows.sh: the
// x86_64-pc-windows-gnu `mcp-sieve.exe` under Wine, driven from Linux by the official SDK's
// stdio client (StdioClientTransport launching `wine64 mcp-sieve.exe …`).
// - `stdio --mcp-config` fronting two Windows upstreams, in folders whose names hold spaces,
//   written with backslashes: one entry a bare command name (`files-server`) that only PATHEXT
//   resolves, to a `.cmd` file (as `npx` is `npx.cmd`) — the `.cmd` starts the upstream with its
//   argument (a path with spaces) — and one entry the `.exe` itself. There is no Windows Node
//   here, so each upstream is mcp-sieve.exe serving a small catalog (`stdio --catalog`). Listed,
//   searched (`--search`) and called through both.
// - `serve`: Streamable HTTP on 127.0.0.1 with the embedded default catalog, listed (a filter
//   too) and called by the official client over HTTP.
// - Search by meaning: the sentence encoder fetched from a loopback stand-in for the Hugging Face
//   Hub into a Windows HF_HOME, then read from that cache by a second start with no request.
// - Code mode (`stdio --code`): a multi-step program in QuickJS, a hidden tool unknown inside a
//   program, the time, stack, call and answer limits (the memory ones left out, as in the unit tests).
// - An https upstream signed by a company CA (openssl): trusted through `caFile` or SSL_CERT_FILE
//   given as Windows paths, refused in words without either.
// - Reload: edits of a running `stdio --catalog`'s document, one with an error (nothing changes),
//   one that keeps the file's time and length.
// - `connect claude-desktop` writes `%APPDATA%\Claude\claude_desktop_config.json` (Wine's
//   APPDATA is its own: C:\users\root\AppData\Roaming in the prefix) and the entry it writes
//   starts under Wine and serves the moved servers.
// - `login` against a loopback authorization server: Windows' http handler (Wine's
//   winebrowser, which hands the URL to the Unix opener `xdg-open`, here a script that records
//   it) receives the whole authorization URL; the test then signs in as that browser. With the
//   keychain, the token goes to the Credential Manager (Wine's, with Windows' 2,560-byte limit a
//   credential, so the store is kept in pieces) and a gateway started later finds it there.
// - Two gateways (`stdio --catalog`) sharing one token store, their access token expired at once,
//   take turns to refresh it (the store's lock, LockFileEx there): no refresh token is sent twice.
// Environment (from the script): SIEVE_WIN_EXE (the .exe, the shim beside it), WINE, WINEPREFIX.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { allTools, freePort } from '../e2e/harness.mjs';
import { startAuthServer, startMcp, browse } from '../e2e/oauth-helpers.mjs';
import { startHub } from '../e2e/hub-stand-in.mjs';
import { makeCa, sign } from '../e2e/tls-helpers.mjs';
import { codeCatalog, runCode, TASK, assertTask, assertHiddenUnknown, ATTACKS } from '../common/code-cases.mjs';

const EXE = process.env.SIEVE_WIN_EXE;
const WINE = process.env.WINE ?? '/usr/lib/wine/wine64';
const PREFIX = process.env.WINEPREFIX;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** A Linux path as Wine's Windows programs name it (drive Z: is /), with backslashes. */
const win = (p) => `Z:${p.replaceAll('/', '\\')}`;

let tmp, servers, bin, fakeOpener;
/** The environment of every Wine process: Wine's own, its PATH led by `bin` (WINEPATH). */
const wineEnv = (extra = {}) => ({
  ...process.env, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=', WINEPATH: win(bin), ...extra,
});

before(() => {
  assert.ok(EXE && existsSync(EXE), 'SIEVE_WIN_EXE names mcp-sieve.exe (run scripts/test-windows.sh)');
  // Beside the .exe (same file system: the upstream is a hard link of it, not a 100 MB copy).
  tmp = mkdtempSync(path.join(path.dirname(EXE), 'lane '));
  const folder = path.join(tmp, 'My Servers');
  bin = path.join(tmp, 'bin dir');
  mkdirSync(folder);
  mkdirSync(bin);
  const upstream = path.join(folder, 'upstream server.exe');
  linkSync(EXE, upstream);
  copyFileSync(path.join(path.dirname(EXE), 'bcryptprimitives.dll'), path.join(folder, 'bcryptprimitives.dll'));
  const catalog = (name, tools) => {
    const f = path.join(folder, `${name} catalog.json`);
    writeFileSync(f, JSON.stringify({ tools }));
    return f;
  };
  const one = catalog('files', [
    { name: 'read_file', description: 'Reads a text file from the disk', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  ]);
  const two = catalog('mail', [
    { name: 'send_mail', description: 'Sends an e-mail message to a person', inputSchema: { type: 'object', properties: { to: { type: 'string' } } } },
  ]);
  // `files-server` exists only as `files-server.cmd` (and, as npm leaves it, a shell script
  // `files-server` without extension, which is no Windows program).
  writeFileSync(path.join(bin, 'files-server'), '#!/bin/sh\necho not a Windows program\n');
  writeFileSync(path.join(bin, 'files-server.cmd'), `@echo off\r\n"${win(upstream)}" stdio --catalog %1\r\n`);
  servers = path.join(tmp, 'servers.json');
  writeFileSync(servers, JSON.stringify({
    mcpServers: {
      files: { command: 'files-server', args: [win(one)] },
      mail: { command: win(upstream), args: ['stdio', '--catalog', win(two)] },
    },
  }, null, 2));
  // The Unix opener winebrowser hands URLs to: records its arguments.
  fakeOpener = path.join(tmp, 'opener');
  mkdirSync(fakeOpener);
  writeFileSync(path.join(fakeOpener, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$#" "$@" > '${path.join(tmp, 'opened.txt')}'\n`);
  chmodSync(path.join(fakeOpener, 'xdg-open'), 0o755);
});
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

/**
 * `wine64 ARGS` (the .exe and its arguments) connected by the SDK's stdio client, as a desktop
 * client launches it; `stderr()` is what it wrote there so far. The caller closes `client`.
 */
async function overStdio(args, env = wineEnv()) {
  const transport = new StdioClientTransport({ command: WINE, args, env, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (d) => { err += d; });
  const client = new Client({ name: 'windows-lane', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => err };
}

/** Lists, (with `search`: searches) and calls through `mcp-sieve.exe <args>` under Wine. */
async function through(args, search, env = wineEnv()) {
  const { client, stderr } = await overStdio(args, env);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    if (!search) {
      assert.deepEqual(names, ['files_read_file', 'mail_send_mail'], stderr());
      const a = await client.callTool({ name: 'files_read_file', arguments: { path: 'C:\\a b\\c.txt' } });
      assert.match(a.content[0].text, /read_file .*C:\\\\a b\\\\c\.txt/, stderr());
      const b = await client.callTool({ name: 'mail_send_mail', arguments: { to: 'x@example.com' } });
      assert.match(b.content[0].text, /send_mail/, stderr());
    } else {
      assert.ok(names.includes('find_tools') && names.includes('call_tool'), names.join());
      const found = await client.callTool({ name: 'find_tools', arguments: { query: 'send an e-mail' } });
      assert.match(JSON.stringify(found.content), /mail_send_mail/, stderr());
      const found2 = await client.callTool({ name: 'find_tools', arguments: { query: 'read a file from the disk' } });
      assert.match(JSON.stringify(found2.content), /files_read_file/, stderr());
      for (const name of ['files_read_file', 'mail_send_mail']) {
        const r = await client.callTool({ name: 'call_tool', arguments: { name, arguments: {} } });
        assert.match(JSON.stringify(r.content), new RegExp(name.replace(/^\w+?_/, '')), stderr());
      }
    }
  } finally {
    await client.close();
  }
}

test('stdio --mcp-config: a bare name resolved through PATHEXT to a .cmd, and a .exe, in folders with spaces: listed and called', { timeout: 120_000 }, async () => {
  await through([EXE, 'stdio', '--mcp-config', win(servers)], false);
});

test('stdio --mcp-config --search: found and called through both', { timeout: 120_000 }, async () => {
  await through([EXE, 'stdio', '--mcp-config', win(servers), '--search'], true);
});

test('serve: Streamable HTTP on 127.0.0.1 with the embedded catalog, listed, filtered and called by the official client', { timeout: 120_000 }, async (t) => {
  const port = await freePort();
  const server = spawn(WINE, [EXE, 'serve', '--host', '127.0.0.1', '--port', String(port)], { env: wineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  server.stdout.on('data', (d) => { log += d; });
  server.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((r) => server.on('exit', r));
  t.after(async () => { server.kill(); await exited; });
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  let up = false;
  for (let i = 0; i < 300 && !up && server.exitCode === null; i += 1) {
    up = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":0,"method":"ping"}' }).then(() => true, () => false);
    if (!up) await sleep(100);
  }
  assert.ok(up, `serve did not answer: ${log}`);
  const client = new Client({ name: 'windows-http', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  try {
    const all = (await allTools(client)).map((x) => x.name);
    assert.ok(all.includes('echo') && all.includes('read_file'), all.join());
    const utilities = await client.request({ method: 'tools/list', params: { filter: { groups: ['utilities'] } } }, ListToolsResultSchema);
    assert.ok(utilities.tools.length > 0 && utilities.tools.length < all.length, `${utilities.tools.length} of ${all.length}`);
    assert.ok(utilities.tools.some((x) => x.name === 'echo'), JSON.stringify(utilities.tools.map((x) => x.name)));
    const r = await client.callTool({ name: 'echo', arguments: { message: 'from Windows' } });
    assert.match(JSON.stringify(r.content), /from Windows/, log);
  } finally {
    await client.close();
  }
});

test('search by meaning: the encoder fetched from the hub into a Windows HF_HOME, then read from that cache with no request', { timeout: 240_000 }, async (t) => {
  const model = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'target', 'models', 'all-minilm-l6-v2');
  assert.ok(existsSync(path.join(model, 'model.safetensors')), `${model} is missing: run scripts/bootstrap.sh`);
  const hub = await startHub({ dir: model });
  t.after(() => hub.close());
  const home = mkdtempSync(path.join(tmp, 'hf home '));
  const READY = /search vectors ready for \d+ tools/;
  const start = async () => {
    const { client, stderr } = await overStdio([EXE, 'stdio', '--search'], wineEnv({ HF_ENDPOINT: hub.endpoint, HF_HOME: win(home) }));
    for (let i = 0; i < 1800 && !READY.test(stderr()); i += 1) await sleep(100);
    assert.match(stderr(), READY);
    const found = await client.callTool({ name: 'find_tools', arguments: { query: 'send an email to a colleague', limit: 3 } });
    await client.close();
    return { err: stderr(), ranking: found._meta?.['dev.mcp-sieve/search']?.ranking, found };
  };
  const first = await start();
  assert.match(first.err, /fetched sentence-transformers\/all-MiniLM-L6-v2 \(9\d\.\d MB, checked against the hub's hashes\)/, first.err);
  assert.equal(first.ranking, 'hybrid', JSON.stringify(first.found));
  assert.ok(existsSync(path.join(home, 'hub', 'models--sentence-transformers--all-MiniLM-L6-v2', 'refs', 'main')), 'the HF cache layout');
  hub.requests.length = 0;
  const second = await start();
  assert.equal(second.ranking, 'hybrid');
  assert.deepEqual(hub.requests, [], 'the second start read the cache');
});

test('code mode: a program runs in QuickJS under Windows, a hidden tool stays unknown, and the time, stack and call limits hold', { timeout: 180_000 }, async (t) => {
  const catalog = path.join(tmp, 'code catalog.json');
  writeFileSync(catalog, JSON.stringify(codeCatalog({ file: win(path.join(tmp, 'code audit.jsonl')) })));
  const start = async (groups) => {
    const { client } = await overStdio([EXE, 'stdio', '--catalog', win(catalog), '--code', '--groups', groups], wineEnv({ HF_HUB_OFFLINE: '1' }));
    t.after(() => client.close());
    return client;
  };
  assertTask(await runCode(await start('utilities,email'), TASK));
  const narrow = await start('utilities');
  await assertHiddenUnknown(narrow);
  // The memory cases are left out: under Wine the time limit can come first (the unit test that
  // holds them is left out of this lane for the same reason).
  for (const c of ATTACKS.filter((a) => a.error && !/memory/.test(String(a.error)))) {
    const r = await runCode(narrow, c.code);
    assert.equal(r.isError, true, `${c.code}: ${JSON.stringify(r)}`);
    assert.match(r.structuredContent.error, c.error, c.code);
  }
  const still = await runCode(narrow, 'return (await tools.add({ a: 1, b: 1 })).sum');
  assert.equal(still.structuredContent?.result, 2, JSON.stringify(still));
});

test('an https upstream signed by a company CA: trusted through caFile or SSL_CERT_FILE given as Windows paths, refused in words without', { timeout: 180_000 }, async (t) => {
  const dir = mkdtempSync(path.join(tmp, 'company ca '));
  makeCa(dir);
  sign(dir, 'upstream');
  const port = await freePort();
  await startMcp(t, { name: 'b', port, bearer: 'b-token', tls: { key: readFileSync(path.join(dir, 'upstream.key')), cert: readFileSync(path.join(dir, 'upstream.pem')) } });
  const up = { url: `https://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer b-token' } };
  const catalog = (name, extra) => {
    const f = path.join(dir, `${name}.json`);
    writeFileSync(f, JSON.stringify({ tools: [], upstreams: { b: { ...up, ...extra } } }));
    return f;
  };
  const ca = win(path.join(dir, 'ca.pem'));
  const gateway = async (file, env) => {
    const g = await overStdio([EXE, 'stdio', '--catalog', win(file)], wineEnv({ NO_PROXY: '*', ...env }));
    t.after(() => g.client.close());
    return { client: g.client, err: g.stderr };
  };
  for (const [name, extra, env] of [['by caFile', { caFile: ca }, {}], ['by SSL_CERT_FILE', {}, { SSL_CERT_FILE: ca }]]) {
    const g = await gateway(catalog(name, extra), env);
    const names = (await allTools(g.client)).map((x) => x.name);
    assert.ok(names.includes('b_echo'), `${name}: ${names} ${g.err()}`);
    const r = await g.client.callTool({ name: 'b_echo', arguments: { m: 'over TLS' } });
    assert.match(JSON.stringify(r.content), /over TLS/, name);
  }
  const refused = await gateway(catalog('untrusted', {}), {});
  const denied = await refused.client.callTool({ name: 'b_echo', arguments: { m: 'x' } }).catch((e) => e);
  assert.match(String(denied?.message ?? JSON.stringify(denied)), /upstream "b"/);
  for (let i = 0; i < 100 && !/issuer is unknown/.test(refused.err()); i += 1) await sleep(100);
  assert.match(refused.err(), /TLS with 127\.0\.0\.1 failed: the certificate's issuer is unknown/, refused.err());
});

test('reload: edits of the catalog reach a running stdio gateway, one with an error changes nothing, one that keeps the time and length is seen', { timeout: 120_000 }, async (t) => {
  const file = path.join(tmp, 'reload catalog.json');
  const doc = (...names) => JSON.stringify({ tools: names.map((name) => ({ name, description: `The tool ${name}`, inputSchema: { type: 'object' } })) });
  writeFileSync(file, doc('aa'));
  const { client } = await overStdio([EXE, 'stdio', '--catalog', win(file)], wineEnv({ HF_HUB_OFFLINE: '1' }));
  t.after(() => client.close());
  const names = async () => (await client.listTools()).tools.map((x) => x.name).sort().join();
  const becomes = async (want) => {
    for (let i = 0; i < 150 && (await names()) !== want; i += 1) await sleep(100);
    assert.equal(await names(), want);
  };
  assert.equal(await names(), 'aa');
  writeFileSync(file, doc('aa', 'bb'));
  await becomes('aa,bb');
  writeFileSync(file, '{"tools": [');
  await sleep(2_000);
  assert.equal(await names(), 'aa,bb', 'an edit with an error changes nothing');
  // The same length and, set back to whole seconds, the same time: only the content differs.
  const then = new Date('2026-01-01T00:00:00Z');
  writeFileSync(file, doc('aa', 'bb'));
  utimesSync(file, then, then);
  await sleep(3_000);
  writeFileSync(file, doc('aa', 'cc'));
  utimesSync(file, then, then);
  await becomes('aa,cc');
});

test('connect claude-desktop writes %APPDATA%\\Claude\\claude_desktop_config.json, and its entry starts under Wine', { timeout: 120_000 }, async () => {
  const file = path.join(PREFIX, 'drive_c', 'users', process.env.USER ?? 'root', 'AppData', 'Roaming', 'Claude', 'claude_desktop_config.json');
  rmSync(path.dirname(file), { recursive: true, force: true });
  mkdirSync(path.dirname(file), { recursive: true });
  const mine = JSON.parse(readFileSync(servers, 'utf8'));
  writeFileSync(file, JSON.stringify({ mcpServers: mine.mcpServers, globalShortcut: 'Alt+Space' }, null, 2));
  const moved = path.join(tmp, 'moved servers.json');
  const r = spawnSync(WINE, [EXE, 'connect', 'claude-desktop', '--servers', win(moved)], { env: wineEnv(), encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /C:\\users\\[^\\]+\\AppData\\Roaming\\Claude\\claude_desktop_config\.json/);
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(doc.globalShortcut, 'Alt+Space');
  assert.deepEqual(Object.keys(doc.mcpServers), ['sieve']);
  const entry = doc.mcpServers.sieve;
  assert.match(entry.command, /^Z:\\.*mcp-sieve\.exe$/i, entry.command);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(moved, 'utf8')).mcpServers), ['files', 'mail']);
  // As Claude Desktop would start it (its command and args as written), here through Wine.
  await through([entry.command, ...entry.args], false, wineEnv(entry.env ?? {}));
  const back = spawnSync(WINE, [EXE, 'disconnect', 'claude-desktop', '--servers', win(moved)], { env: wineEnv(), encoding: 'utf8', timeout: 60_000 });
  assert.equal(back.status, 0, back.stderr);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(file, 'utf8')).mcpServers), ['files', 'mail']);
});

/**
 * `mcp-sieve.exe login a` under Wine against a loopback authorization server (access tokens of
 * `ttl` s): the URL Windows' browser was handed (recorded by the fake `xdg-open`), then the test
 * signs in as that browser. The tokens go to the file store under `store` (XDG_CONFIG_HOME), or
 * with `keychain` to the Windows Credential Manager (Wine's, kept in the prefix's registry).
 */
async function loginUnderWine(t, { ttl = 60, store = tmp, tokenRequests = [], keychain = false } = {}) {
  const [asPort, aPort] = [await freePort(), await freePort()];
  const resource = `http://127.0.0.1:${aPort}/mcp`;
  const issuer = await startAuthServer(t, { port: asPort, resources: [resource], ttl, tokenRequests });
  await startMcp(t, { name: 'a', port: aPort, resource, issuer });
  const catalog = path.join(tmp, `oauth catalog ${aPort}.json`);
  writeFileSync(catalog, JSON.stringify({ tools: [], upstreams: { a: { url: resource } } }));
  const opened = path.join(tmp, 'opened.txt');
  rmSync(opened, { force: true });
  const env = wineEnv({ PATH: `${fakeOpener}:${process.env.PATH}`, MCP_SIEVE_TOKEN_STORE: keychain ? 'keychain' : 'file', XDG_CONFIG_HOME: win(store) });
  const login = spawn(WINE, [EXE, 'login', 'a', '--catalog', win(catalog)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  login.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => login.on('exit', r));
  for (let i = 0; i < 600 && !existsSync(opened); i += 1) await sleep(50);
  assert.ok(existsSync(opened), `no browser was opened: ${err}`);
  await sleep(200);
  const [count, url] = readFileSync(opened, 'utf8').trimEnd().split('\n');
  const printed = err.split('\n').find((l) => l.startsWith(`${issuer}/`))?.trim();
  const page = await browse(url, 'alice', new URL(url).searchParams.get('redirect_uri'), () => err);
  assert.equal(page.status, 200, await page.text());
  assert.equal(await exited, 0, err);
  return { count, url, printed, issuer, catalog, env, err };
}

test('login hands Windows\' browser the whole authorization URL, and signs in through its loopback redirect', { timeout: 180_000 }, async (t) => {
  const { count, url, printed } = await loginUnderWine(t);
  assert.equal(count, '1', 'one argument: the URL');
  assert.equal(url, printed, 'the browser got the URL login printed, whole');
  const u = new URL(url);
  for (const p of ['response_type', 'client_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'resource']) {
    assert.ok(u.searchParams.get(p), `${p} reached the browser`);
  }
  assert.ok(existsSync(path.join(tmp, 'mcp-sieve', 'tokens.json')), 'the token was kept in the file store');
});

test('login keeps the token in the Windows Credential Manager, where a gateway started later finds it', { timeout: 180_000 }, async (t) => {
  const store = mkdtempSync(path.join(tmp, 'keychain '));
  const { catalog, env, err } = await loginUnderWine(t, { store, keychain: true });
  assert.match(err, /the token is kept in the OS keychain \(the Windows Credential Manager\)/, err);
  assert.ok(!existsSync(path.join(store, 'mcp-sieve', 'tokens.json')), 'no token file beside it');
  const { client } = await overStdio([EXE, 'stdio', '--catalog', win(catalog)], env);
  t.after(() => client.close());
  const r = await client.callTool({ name: 'a_whoami', arguments: {} });
  assert.ok(!r.isError, JSON.stringify(r.content));
  assert.match(JSON.stringify(r.content), /alice/);
});

test('two gateways sharing one token store take turns to refresh: no refresh token is sent twice', { timeout: 240_000 }, async (t) => {
  const TTL = 4;
  const store = mkdtempSync(path.join(tmp, 'store '));
  const tokenRequests = [];
  const { catalog, env } = await loginUnderWine(t, { ttl: TTL, store, tokenRequests });
  const gateways = [];
  t.after(() => Promise.all(gateways.map((c) => c.close())));
  for (let n = 0; n < 2; n += 1) gateways.push((await overStdio([EXE, 'stdio', '--catalog', win(catalog)], env)).client);
  for (let round = 0; round < 2; round += 1) {
    await sleep((TTL + 1) * 1000);
    // Both expired at once: each call needs a fresh token, and both ask together.
    const answers = await Promise.all(gateways.map((c) => c.callTool({ name: 'a_whoami', arguments: {} })));
    for (const r of answers) assert.ok(!r.isError, JSON.stringify(r.content));
  }
  const refreshes = tokenRequests.filter((r) => r.grant === 'refresh_token');
  assert.ok(refreshes.length >= 2, `refreshed: ${JSON.stringify(refreshes)}`);
  assert.deepEqual(refreshes.filter((r) => r.status !== 200), [], 'every refresh answered');
  const sent = refreshes.map((r) => r.refreshToken);
  assert.equal(new Set(sent).size, sent.length, 'no refresh token sent twice');
});
