// E2E (native; issue 39 "Done when"): a user's real desktop configuration behind ONE
// `mcp-sieve stdio --mcp-config FILE` entry, with parts nobody here wrote, all on 127.0.0.1.
// The mcpServers file (claude_desktop_config.json's shape) holds
//   memory  a stdio server on the machine (npm @modelcontextprotocol/server-memory, run by node),
//   github  an HTTPS MCP server (the official SDK's McpServer behind node:https) that refuses a
//           request without its static bearer, given in `headers` from the environment,
//   linear  an HTTPS MCP server behind OAuth: a real authorization server (npm oidc-provider over
//           https: dynamic client registration, refresh tokens, resource indicators, JWT access
//           tokens of a few seconds) protecting an SDK server that checks each token with jose,
//   sentry  an `npx mcp-remote https://…/mcp --header "Authorization: Bearer ${TOKEN}"` entry
//           (made a direct HTTPS upstream by native/src/config/mcp_config.rs),
//   notion  an `npx mcp-remote https://…/mcp --static-oauth-client-info {…}` entry: OAuth with a
//           client registered beforehand at the same authorization server.
// Their CA is made by the test and given as a company's is (SSL_CERT_FILE), and every request of
// mcp-sieve goes through a real HTTP CONNECT proxy, Debian's tinyproxy, whose log must show the
// CONNECTs. The flow: `mcp-sieve login linear` (the test is the browser); then the official SDK
// v2 client and the Python SDK each launch the README's desktop entry (`mcp-sieve stdio
// --mcp-config ~/.config/mcp-sieve/servers.json`, with and without its `--search`): list every
// upstream's tools under their prefixes, search with find_tools, call a tool of each upstream;
// an expired access token is refreshed without the user; a revoked refresh token makes the
// upstream needs-login and its calls name `mcp-sieve login linear`. Last, the document of the
// book's "Put it in front of your servers" (docs/src/gateway.md) with its GitHub URL an HTTPS
// stand-in behind the same proxy and CA.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { freePort } from './harness.mjs';
import { startAuthServer, startMcp, signInWith } from './oauth-helpers.mjs';
import { makeCa, sign, fetchWithCa } from './tls-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const MEMORY = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
const TTL = 4; // the OAuth upstream's access tokens live 4 s: the refresh is seen within the test
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The tinyproxy binary on PATH (or in /usr/sbin, /usr/bin), if installed. */
function tinyproxy() {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/bin'];
  return dirs.map((dir) => path.join(dir, 'tinyproxy')).find((f) => existsSync(f));
}

/** Starts tinyproxy on 127.0.0.1 with its own config in `dir`, in the foreground; stopped by its PID. */
async function startTinyproxy(t, bin, dir) {
  const port = await freePort();
  const log = path.join(dir, 'tinyproxy.log');
  const conf = path.join(dir, 'tinyproxy.conf');
  // No ConnectPort line: CONNECT to any port (the upstreams listen on free ports).
  writeFileSync(conf, [`Port ${port}`, 'Listen 127.0.0.1', 'Allow 127.0.0.1', `LogFile "${log}"`, 'LogLevel Connect',
    'MaxClients 100', 'Timeout 120', ''].join('\n'));
  const p = spawn(bin, ['-d', '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (x) => { err += x; });
  t.after(() => { if (p.exitCode === null) process.kill(p.pid); });
  for (let i = 0; i < 100; i += 1) {
    const up = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => { s.end(); r(true); });
      s.on('error', () => r(false));
    });
    if (up) return { url: `http://127.0.0.1:${port}`, log: () => (existsSync(log) ? readFileSync(log, 'utf8') : '') };
    if (p.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`tinyproxy did not start: ${err}`);
}

/** The README's desktop entry (Quick starts › Desktop client), as printed. */
function readmeEntry() {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Desktop client'));
  return JSON.parse(section.match(/```json\n([\s\S]*?)\n```/)[1]).mcpServers.sieve;
}

/** `mcp-sieve ARGS` to its end: { code, stdout, stderr }. */
function sieve(args, env, cwd = ROOT) {
  return new Promise((resolve) => {
    execFile(BIN, args, { env, cwd, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

const tp = tinyproxy();
if (process.env.SIEVE_TARGET !== 'native') {
  test('a desktop configuration with internet servers (native only)', { skip: 'set SIEVE_TARGET=native' }, () => {});
} else if (!tp) {
  test('a desktop configuration with internet servers', { skip: 'tinyproxy is not installed (apt-get install tinyproxy; scripts/bootstrap.sh installs it)' }, () => {});
} else {
  test('one mcp-sieve stdio entry fronts stdio, static-token HTTPS, OAuth HTTPS and mcp-remote servers through a proxy', { timeout: 300_000 }, async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-desktop-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    makeCa(dir);
    sign(dir, 'server');
    const tls = { key: readFileSync(path.join(dir, 'server.key')), cert: readFileSync(path.join(dir, 'server.pem')) };
    const caFetch = fetchWithCa(readFileSync(path.join(dir, 'ca.pem')));
    const proxy = await startTinyproxy(t, tp, dir);

    // The servers on the "internet".
    const [asPort, ghPort, linPort, senPort, notesPort, notPort] = await Promise.all([1, 2, 3, 4, 5, 6].map(() => freePort()));
    const GITHUB_TOKEN = `ghp_desktop${process.pid}`;
    const SENTRY_TOKEN = `sntrys_desktop${process.pid}`;
    const resource = `https://127.0.0.1:${linPort}/mcp`;
    const notionResource = `https://127.0.0.1:${notPort}/mcp`;
    // notion's client, registered beforehand (a native app: any loopback port, RFC 8252).
    const desk = {
      client_id: 'desk', client_secret: 'desk-secret-1234567890', application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: ['http://127.0.0.1/callback'],
    };
    const issuer = await startAuthServer(t, { port: asPort, resources: [resource, notionResource], ttl: TTL, tls, clients: [desk] });
    const seen = { github: [], linear: [], sentry: [], notion: [] };
    await startMcp(t, { name: 'github', port: ghPort, bearer: GITHUB_TOKEN, tls, seen: seen.github });
    await startMcp(t, { name: 'linear', port: linPort, resource, issuer, tls, fetch: caFetch, seen: seen.linear });
    await startMcp(t, { name: 'sentry', port: senPort, bearer: SENTRY_TOKEN, tls, seen: seen.sentry });
    await startMcp(t, { name: 'notion', port: notPort, resource: notionResource, issuer, tls, fetch: caFetch, seen: seen.notion });

    // The user's servers, moved as they are to the file the README names.
    const home = path.join(dir, 'home');
    mkdirSync(path.join(home, '.config', 'mcp-sieve'), { recursive: true });
    const servers = {
      mcpServers: {
        memory: { command: 'node', args: [MEMORY], env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') } },
        github: { type: 'http', url: `https://127.0.0.1:${ghPort}/mcp`, headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' } },
        linear: { type: 'http', url: resource },
        sentry: {
          command: 'npx',
          args: ['mcp-remote', `https://127.0.0.1:${senPort}/mcp`, '--header', 'Authorization: Bearer ${SENTRY_TOKEN}'],
          env: { SENTRY_TOKEN },
        },
        notion: {
          command: 'npx',
          args: ['-y', 'mcp-remote', notionResource, '--static-oauth-client-info', JSON.stringify({ client_id: desk.client_id, client_secret: desk.client_secret })],
        },
      },
    };
    writeFileSync(path.join(home, '.config', 'mcp-sieve', 'servers.json'), JSON.stringify(servers, null, 2));
    // What a desktop client launches mcp-sieve with: the company CA, the proxy, a secret.
    const env = { ...process.env };
    for (const k of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy', 'NO_PROXY', 'no_proxy', 'SSL_CERT_DIR', 'XDG_CONFIG_HOME']) delete env[k];
    Object.assign(env, { HOME: home, SSL_CERT_FILE: path.join(dir, 'ca.pem'), HTTPS_PROXY: proxy.url, GITHUB_TOKEN, MCP_SIEVE_TOKEN_STORE: 'file' });
    const store = path.join(home, '.config', 'mcp-sieve', 'tokens.json');
    const stored = () => JSON.parse(readFileSync(store, 'utf8')).upstreams.linear;

    // The README's entry, as printed: `mcp-sieve stdio --mcp-config ~/… --search`.
    const entry = readmeEntry();
    assert.equal(entry.command, 'mcp-sieve');
    assert.ok(entry.args.includes('--search'), JSON.stringify(entry.args));
    const searchArgs = entry.args;
    const plainArgs = entry.args.filter((a) => a !== '--search');
    const configArg = entry.args[entry.args.indexOf('--mcp-config') + 1];
    assert.match(configArg, /^~\//, 'the README names the file under ~');

    // `mcp-sieve check` on the file: nothing that will work is flagged (the proxy, the CA).
    const checked = await sieve(['check', configArg], env);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);

    // mcp-sieve login linear: the test is the browser (through the https authorization server).
    await signInWith(BIN, ['--mcp-config', configArg], env, 'alice', issuer, 'linear', caFetch);
    const firstAccess = stored().tokens.access_token;
    // notion: signed in through the client registered beforehand (no registration).
    await signInWith(BIN, ['--mcp-config', configArg], env, 'bob', issuer, 'notion', caFetch);
    const notion = JSON.parse(readFileSync(store, 'utf8')).upstreams.notion;
    assert.equal(notion.client.client_id, 'desk', 'the client of --static-oauth-client-info');
    assert.ok(stored().tokens.refresh_token, 'a refresh token was kept');
    assert.equal(stored().resource, resource);

    const expected = ['github_echo', 'github_whoami', 'linear_echo', 'linear_whoami', 'memory_read_graph', 'memory_create_entities', 'sentry_echo', 'sentry_whoami', 'notion_whoami'];
    // (each client makes its own entity: the memory file is shared)
    const calls = (entity) => [['memory_create_entities', { entities: [{ name: entity, entityType: 'tool', observations: ['fronts four servers'] }] }],
      ['github_whoami', {}], ['linear_whoami', {}], ['sentry_echo', { m: 'via mcp-remote' }], ['memory_read_graph', {}], ['notion_whoami', {}]];
    const checkCalls = (texts, who) => {
      assert.match(texts[0], new RegExp(who), `${who}: memory_create_entities`);
      assert.equal(texts[1], 'static', `${who}: the static token reached github`);
      assert.equal(texts[2], 'alice', `${who}: the signed-in user's token reached linear`);
      assert.equal(texts[3], 'via mcp-remote', `${who}: the mcp-remote entry's header reached sentry`);
      assert.match(texts[4], /fronts four servers/, `${who}: memory_read_graph`);
      assert.equal(texts[5], 'bob', `${who}: bob's token (the pre-registered client's) reached notion`);
    };
    const queries = ['echoes a message', 'read the knowledge graph'];
    const checkFound = (found, who, why = '') => {
      for (const n of ['github_echo', 'linear_echo', 'sentry_echo']) assert.ok(found[0].includes(n), `${who}: find_tools found ${n}: ${found[0]}\n${why}`);
      assert.ok(found[1].includes('memory_read_graph'), `${who}: find_tools found memory_read_graph: ${found[1]}`);
    };

    // The official SDK v2 client over `mcp-sieve stdio` (kept open for the refresh below).
    let log = '';
    const connect = async (args) => {
      const transport = new StdioClientTransport({ command: BIN, args, env, stderr: 'pipe' });
      transport.stderr?.on('data', (x) => { log += x; });
      const client = new Client({ name: 'desktop-e2e', version: '1.0.0' });
      await client.connect(transport);
      t.after(() => client.close());
      return client;
    };
    const client = await connect(plainArgs);
    const listed = (await client.listTools()).tools.map((x) => x.name);
    for (const n of expected) assert.ok(listed.includes(n), `${n} listed: ${listed.join(', ')}\n${log}`);
    assert.ok(listed.every((n) => /^(memory|github|linear|sentry|notion)_/.test(n)), listed.join(', '));
    const textOf = (r) => (r.isError ? `error: ${r.content?.[0]?.text}` : r.content?.[0]?.text);
    const call = async (c, name, args = {}) => textOf(await c.callTool({ name, arguments: args }));
    const texts = [];
    for (const [name, args] of calls('sdk-v2')) texts.push(await call(client, name, args));
    checkCalls(texts, 'sdk-v2');
    const searching = await connect(searchArgs);
    assert.deepEqual((await searching.listTools()).tools.map((x) => x.name).sort(), ['call_tool', 'describe_tools', 'find_tools']);
    const found = [];
    for (const query of queries) {
      const r = await searching.callTool({ name: 'find_tools', arguments: { query, limit: 10 } });
      found.push(r.structuredContent.tools.map((x) => x.name));
    }
    checkFound(found, 'SDK v2', log);
    assert.equal(await call(searching, 'call_tool', { name: 'linear_whoami', arguments: {} }), 'alice');

    // The Python SDK, the same two launches.
    const spec = { command: BIN, args: plainArgs, searchArgs, env, calls: calls('python'), queries, searchCall: ['sentry_whoami', {}] };
    const py = await new Promise((resolve) => {
      execFile(PYTHON, [path.join(ROOT, 'tests', 'python', 'desktop_client.py'), JSON.stringify(spec)], { env, timeout: 120_000 },
        (err, stdout, stderr) => resolve({ err, stdout, stderr }));
    });
    assert.ok(!py.err, `${py.err}\n${py.stderr}`);
    const saw = JSON.parse(py.stdout);
    for (const n of expected) assert.ok(saw.listed.includes(n), `Python: ${n} listed: ${saw.listed.join(', ')}`);
    checkCalls(saw.called, 'python');
    assert.deepEqual(saw.searchListed, ['call_tool', 'describe_tools', 'find_tools']);
    checkFound(saw.found, 'Python', py.stderr);
    assert.equal(saw.searchCalled, 'static', 'call_tool reached sentry');

    // The access token expires: refreshed without the user (the v2 client's gateway is still up).
    await sleep((TTL + 1) * 1000);
    assert.equal(await call(client, 'linear_whoami'), 'alice', log);
    let refreshed = stored().tokens;
    assert.notEqual(refreshed.access_token, firstAccess, 'a new access token was stored');
    assert.ok(new Set(seen.linear.filter(Boolean)).size >= 2, 'linear saw a refreshed token');
    // A second desktop client's gateway (the search one, still running) holds the tokens it read
    // before; the refresh token was rotated by the first: it takes the stored ones, and neither
    // is signed out (oidc-provider revokes the whole grant when a rotated refresh token is reused).
    assert.equal(await call(searching, 'call_tool', { name: 'linear_whoami', arguments: {} }), 'alice', log);
    assert.equal(await call(client, 'linear_whoami'), 'alice', log);
    await searching.close();
    // The static tokens went to their own servers only, and no token of linear elsewhere.
    assert.ok(seen.github.length > 0 && seen.github.every((h) => h === `Bearer ${GITHUB_TOKEN}`), JSON.stringify(seen.github));
    assert.ok(seen.sentry.length > 0 && seen.sentry.every((h) => h === `Bearer ${SENTRY_TOKEN}`), JSON.stringify(seen.sentry));
    for (const secret of [firstAccess, refreshed.access_token, refreshed.refresh_token, GITHUB_TOKEN, SENTRY_TOKEN]) {
      assert.ok(!log.includes(secret), 'no token in the log');
    }

    // A stored access token the server no longer takes (revoked there, a clock ahead of its): a
    // gateway starting with it is refused, refreshes and goes on, without the user.
    const kept = JSON.parse(readFileSync(store, 'utf8'));
    kept.upstreams.linear.tokens.access_token = 'eyJ.refused-by-the-server.x';
    kept.upstreams.linear.tokens.expires_ms = Date.now() + 3_600_000;
    writeFileSync(store, JSON.stringify(kept), { mode: 0o600 });
    const third = await connect(plainArgs);
    assert.equal(await call(third, 'linear_whoami'), 'alice', log);
    assert.notEqual(stored().tokens.access_token, 'eyJ.refused-by-the-server.x', 'the refreshed token was stored');
    await third.close();
    // Two desktop clients started together (at login) find the stored token expired: their
    // gateways refresh it at once, and neither signs the other out.
    const expired = JSON.parse(readFileSync(store, 'utf8'));
    expired.upstreams.linear.tokens.expires_ms = Date.now() - 1000;
    writeFileSync(store, JSON.stringify(expired), { mode: 0o600 });
    const pair = await Promise.all([connect(plainArgs), connect(plainArgs)]);
    const answers = await Promise.all(pair.map((c) => call(c, 'linear_whoami').catch((e) => String(e))));
    assert.deepEqual(answers, ['alice', 'alice'], log);
    await Promise.all(pair.map((c) => c.close()));

    // The refresh token is revoked: once the access token expires, linear needs a sign-in.
    refreshed = stored().tokens;
    const client_id = JSON.parse(readFileSync(store, 'utf8')).upstreams.linear.client.client_id;
    const revoke = await caFetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshed.refresh_token, token_type_hint: 'refresh_token', client_id }).toString(),
    });
    assert.equal(revoke.status, 200, await revoke.text());
    await sleep((TTL + 1) * 1000);
    const failed = await client.callTool({ name: 'linear_whoami', arguments: {} }).then((r) => JSON.stringify(r), (e) => String(e));
    assert.match(failed, /mcp-sieve login linear/, failed);
    assert.equal(await call(client, 'github_whoami'), 'static', 'the other upstreams keep serving');
    assert.equal(await call(client, 'sentry_echo', { m: 'still' }), 'still');
    await client.close();
    // What the client will see, as the README's `mcp-sieve tools` line shows it: linear needs-login.
    const status = await sieve(['tools', '--mcp-config', configArg], env);
    assert.match(status.stderr, /linear \(http\): needs-login.*mcp-sieve login linear/, status.stderr);
    assert.match(status.stdout, /github_whoami/);

    // Every HTTPS request went through the proxy: CONNECTs to each server's port.
    const tunnels = proxy.log();
    for (const port of [asPort, ghPort, linPort, senPort, notPort]) {
      assert.match(tunnels, new RegExp(`CONNECT 127\\.0\\.0\\.1:${port} `), `a CONNECT to 127.0.0.1:${port} in tinyproxy's log:\n${tunnels}`);
    }

    // The book's "Put it in front of your servers" document (docs/src/gateway.md), as printed
    // but for its URLs and folders: GitHub is the HTTPS stand-in (its token from the
    // environment), notes an open http server; through the same proxy and CA.
    await startMcp(t, { name: 'notes', port: notesPort });
    const chapter = readFileSync(path.join(ROOT, 'docs', 'src', 'gateway.md'), 'utf8');
    const printed = JSON.parse(chapter.match(/```json\n([\s\S]*?)\n```/)[1]);
    assert.match(printed.upstreams.github.url, /^https:\/\//);
    printed.upstreams.github.url = `https://127.0.0.1:${ghPort}/mcp`;
    printed.upstreams.files.args[1] = dir;
    printed.upstreams.memory.env.MEMORY_FILE_PATH = path.join(dir, 'book-memory.jsonl');
    printed.upstreams.notes.url = `http://127.0.0.1:${notesPort}/mcp`;
    writeFileSync(path.join(dir, 'book.json'), JSON.stringify(printed));
    const book = await sieve(['tools', '--catalog', path.join(dir, 'book.json')], env);
    assert.equal(book.code, 0, book.stderr);
    for (const n of ['github_whoami', 'files_list_directory', 'mem_read_graph', 'notes_echo']) assert.match(book.stdout, new RegExp(n), `${n}:\n${book.stdout}\n${book.stderr}`);
  });
}
