// E2E (native): an upstream that needs a person to sign in, seen by official SDK clients that
// declared URL-mode elicitation (MCP 2025-11-25) — v1 over `mcp-sieve stdio`, v2 over `mcp-sieve
// serve` — against a real authorization server (oidc-provider) and a real SDK MCP server checking
// its tokens (see oauth-helpers.mjs).
//
// - Step-up: the token of `mcp-sieve login a` carries the scope `mcp`; the tool `admin` needs
//   `admin` too and its server answers 403 insufficient_scope. The client's call gets -32042
//   (URLElicitationRequiredError) with a sign-in URL asking for `mcp admin`; the test follows it
//   as the browser; the gateway's own loopback listener takes the redirect and exchanges the
//   code; the client hears `notifications/elicitation/complete` with the elicitation's id, and
//   the call tried again succeeds with the wider token.
// - A revoked refresh token: once the access token expires, the call gets -32042 again; after
//   the sign-in (and its completion notification) the call succeeds.
// - Not signed in at startup: once initialized, the client is sent elicitation/create (mode
//   url); after the sign-in it hears `notifications/elicitation/complete`, by then the upstream
//   is listed (and `tools/list_changed` follows), and its call works.
// - Under `serve`, the SDK v2 client (2025-11-25, a session with its GET stream) gets -32042 on
//   the step-up call and the completion notification on its GET stream.
// - The OS keychain where one works: login keeps the tokens there (no file) and a new gateway
//   process uses them; skipped, saying why, where none works.
// A client that did not declare URL-mode elicitation keeps the error naming `mcp-sieve login a`:
// oauth-upstream.test.mjs (its client declares no capabilities).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, UrlElicitationRequiredError, ElicitRequestSchema, ToolListChangedNotificationSchema, ElicitationCompleteNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport, UrlElicitationRequiredError as UrlElicitationRequiredErrorV2 } from '@modelcontextprotocol/client';
import { spawn } from 'node:child_process';
import { freePort } from './harness.mjs';
import { startAuthServer, startMcp, signInWith, browse, run } from './oauth-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const TTL = 4;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The elicitation ids of the `notifications/elicitation/complete` a client heard, and a wait for one. */
function completions() {
  const ids = [];
  const waiting = [];
  return {
    ids,
    heard(id) { ids.push(id); for (const w of waiting.splice(0)) w(); },
    /** Resolves once `id` was heard; rejects after `ms`, showing `log()`. */
    async of(id, log, ms = 20_000) {
      const until = Date.now() + ms;
      while (!ids.includes(id)) {
        if (Date.now() > until) throw new Error(`no notifications/elicitation/complete for ${id} (heard ${JSON.stringify(ids)})\n${log()}`);
        await Promise.race([new Promise((r) => waiting.push(r)), sleep(200)]);
      }
    },
  };
}

if (process.env.SIEVE_TARGET !== 'native') {
  test('url-mode elicitation of an upstream sign-in (native only)', { skip: 'set SIEVE_TARGET=native' }, () => {});
} else {
  test('a client that declared URL-mode elicitation is handed the sign-in URL: step-up and a revoked token', { timeout: 180_000 }, async (t) => {
    const [asPort, aPort] = [await freePort(), await freePort()];
    const resourceA = `http://127.0.0.1:${aPort}/mcp`;
    const issuer = await startAuthServer(t, { port: asPort, resources: [resourceA], ttl: TTL, scopes: ['mcp', 'admin'] });
    const seen = [];
    await startMcp(t, { name: 'a', port: aPort, resource: resourceA, issuer, seen, adminScope: 'admin' });

    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-elicit-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalog = path.join(dir, 'sieve.json');
    writeFileSync(catalog, JSON.stringify({ tools: [], upstreams: { a: { url: resourceA } } }));
    const env = { ...process.env, XDG_CONFIG_HOME: dir, MCP_SIEVE_TOKEN_STORE: 'file' }; // the file is read below
    const store = path.join(dir, 'mcp-sieve', 'tokens.json');
    await signInWith(BIN, catalog, env, 'alice', issuer);
    assert.equal(JSON.parse(readFileSync(store, 'utf8')).upstreams.a.tokens.scope, 'mcp');

    const connectWith = async (envOf, capabilities, setup = () => {}) => {
      const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', catalog], env: envOf, stderr: 'pipe' });
      const out = { log: '' };
      transport.stderr?.on('data', (d) => { out.log += d; });
      const client = new Client({ name: 'elicit-e2e', version: '1.0.0' }, { capabilities });
      setup(client);
      await client.connect(transport);
      t.after(() => client.close());
      out.client = client;
      return out;
    };
    const done = completions();
    const c = await connectWith(env, { elicitation: { url: {} } }, (cl) => {
      cl.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => done.heard(n.params.elicitationId));
    });
    const { client } = c;
    assert.deepEqual((await client.listTools()).tools.map((x) => x.name).sort(), ['a_admin', 'a_echo', 'a_whoami']);
    const text = async (name) => (await client.callTool({ name, arguments: {} })).content[0].text;
    assert.equal(await text('a_whoami'), 'alice');

    // Signs in by the elicitation `e` (the test is the browser); the sign-in page says so, and
    // the client hears that the elicitation is complete.
    const signInBy = async (e) => {
      assert.ok(e instanceof UrlElicitationRequiredError, `${e}\n${c.log}`);
      assert.equal(e.code, ErrorCode.UrlElicitationRequired);
      const [el] = e.elicitations;
      assert.equal(el.mode, 'url');
      assert.ok(el.elicitationId);
      assert.match(el.message, /upstream "a"/);
      const u = new URL(el.url);
      assert.ok(el.url.startsWith(`${issuer}/`), el.url);
      assert.equal(u.searchParams.get('resource'), resourceA);
      assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
      const page = await browse(el.url, 'alice', u.searchParams.get('redirect_uri'), () => c.log);
      assert.equal(page.status, 200, await page.text());
      await done.of(el.elicitationId, () => c.log);
      return u;
    };
    // Calls `name` until the sign-in's tokens are in use (the exchange ends just after the page).
    const eventually = async (name) => {
      let last;
      for (let i = 0; i < 50; i += 1) {
        try { return await text(name); } catch (e) { last = e; await sleep(100); }
      }
      throw last;
    };

    // Step-up: 403 insufficient_scope -> -32042 naming the wider scopes.
    const stepUp = await client.callTool({ name: 'a_admin', arguments: {} }).then(() => null, (e) => e);
    const u = await signInBy(stepUp);
    assert.deepEqual(u.searchParams.get('scope').split(' ').sort(), ['admin', 'mcp'], 'the sign-in asks for the wider scopes');
    assert.equal(await eventually('a_admin'), 'admin:alice', 'the call succeeds with the stepped-up token');
    const kept = JSON.parse(readFileSync(store, 'utf8')).upstreams.a;
    assert.deepEqual(kept.tokens.scope.split(' ').sort(), ['admin', 'mcp']);

    // The refresh token revoked, the access token expired: -32042 again, then it works.
    const revoke = await fetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: kept.tokens.refresh_token, token_type_hint: 'refresh_token', client_id: kept.client.client_id }),
    });
    assert.equal(revoke.status, 200);
    await sleep((TTL + 1) * 1000);
    const again = await client.callTool({ name: 'a_whoami', arguments: {} }).then(() => null, (e) => e);
    await signInBy(again);
    assert.equal(await eventually('a_whoami'), 'alice');
    assert.equal(done.ids.length, 2, `one notification per sign-in: ${JSON.stringify(done.ids)}`);
    for (const secret of [kept.tokens.access_token, kept.tokens.refresh_token]) assert.ok(!c.log.includes(secret), 'no token in the log');
    await client.close();

    // Not signed in at startup (a new store): the upstream's tools are not listed, so no call
    // can ask; once initialized, the client is sent elicitation/create (mode url). After the
    // sign-in the upstream comes up and its tools are listed.
    const sdir = mkdtempSync(path.join(tmpdir(), 'sieve-startup-'));
    t.after(() => rmSync(sdir, { recursive: true, force: true }));
    const senv = { ...process.env, XDG_CONFIG_HOME: sdir, MCP_SIEVE_TOKEN_STORE: 'file' };
    let asked;
    let changed = 0;
    const gotAsked = new Promise((resolve) => { asked = resolve; });
    const sdone = completions();
    const s = await connectWith(senv, { elicitation: { url: {} } }, (cl) => {
      cl.setRequestHandler(ElicitRequestSchema, async (req) => { asked(req.params); return { action: 'accept' }; });
      cl.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed += 1; });
      cl.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => sdone.heard(n.params.elicitationId));
    });
    assert.ok(!(await s.client.listTools()).tools.some((x) => x.name.startsWith('a_')), 'no tools of a before the sign-in');
    const params = await Promise.race([gotAsked, sleep(20_000).then(() => { throw new Error(`no elicitation/create\n${s.log}`); })]);
    assert.equal(params.mode, 'url');
    assert.ok(params.elicitationId);
    assert.match(params.message, /upstream "a"/);
    const page = await browse(params.url, 'carol', new URL(params.url).searchParams.get('redirect_uri'), () => s.log);
    assert.equal(page.status, 200);
    // The notification comes once the upstream is listed again: its tools are there at once
    // (not after the retry's backoff).
    await sdone.of(params.elicitationId, () => s.log);
    const listed = (await s.client.listTools()).tools.map((x) => x.name);
    assert.ok(listed.includes('a_whoami'), `a is listed when the sign-in is complete: ${listed}\n${s.log}`);
    for (let i = 0; i < 50 && changed === 0; i += 1) await sleep(100);
    assert.ok(changed > 0, 'the client heard tools/list_changed');
    assert.equal((await s.client.callTool({ name: 'a_whoami', arguments: {} })).content[0].text, 'carol');
    await s.client.close();

    // The OS keychain (the Linux kernel's keyutils here), where one works: login keeps the
    // tokens there, no file is written, and a new gateway process finds them.
    const kdir = mkdtempSync(path.join(tmpdir(), 'sieve-keychain-'));
    t.after(() => rmSync(kdir, { recursive: true, force: true }));
    const kenv = { ...process.env, XDG_CONFIG_HOME: kdir, MCP_SIEVE_TOKEN_STORE: '' };
    const probe = await run(BIN, ['logout', 'a'], kenv);
    if (!/OS keychain/.test(probe.err)) {
      t.diagnostic(`keychain path skipped: no OS keychain works here (${probe.err.trim()})`);
      return;
    }
    await signInWith(BIN, catalog, kenv, 'bob', issuer);
    assert.ok(!existsSync(path.join(kdir, 'mcp-sieve', 'tokens.json')), 'no token file beside the keychain');
    const k = await connectWith(kenv, {});
    assert.match(k.log, /tokens are kept in the OS keychain/, 'the startup line says where tokens are');
    assert.equal((await k.client.callTool({ name: 'a_whoami', arguments: {} })).content[0].text, 'bob');
    await k.client.close();
    assert.equal((await run(BIN, ['logout', 'a'], kenv)).code, 0);
  });
}

if (process.env.SIEVE_TARGET === 'native') {
  test('serve: the SDK v2 client hears notifications/elicitation/complete on its GET stream', { timeout: 120_000 }, async (t) => {
    const [asPort, aPort, port] = [await freePort(), await freePort(), await freePort()];
    const resourceA = `http://127.0.0.1:${aPort}/mcp`;
    const issuer = await startAuthServer(t, { port: asPort, resources: [resourceA], ttl: 60, scopes: ['mcp', 'admin'] });
    await startMcp(t, { name: 'a', port: aPort, resource: resourceA, issuer, adminScope: 'admin' });
    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-elicit-serve-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalog = path.join(dir, 'sieve.json');
    writeFileSync(catalog, JSON.stringify({ tools: [], upstreams: { a: { url: resourceA } } }));
    const env = { ...process.env, XDG_CONFIG_HOME: dir, MCP_SIEVE_TOKEN_STORE: 'file' };
    await signInWith(BIN, catalog, env, 'erin', issuer);

    const serve = spawn(BIN, ['serve', '--catalog', catalog, '--host', '127.0.0.1', '--port', String(port)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    serve.stderr.on('data', (d) => { log += d; });
    t.after(() => { try { process.kill(serve.pid); } catch { /* gone */ } });
    for (let i = 0; i < 100; i += 1) {
      await sleep(100);
      if ((await fetch(`http://127.0.0.1:${port}/mcp-sieve/upstreams`).catch(() => null))?.ok) break;
    }
    const done = completions();
    const client = new ClientV2({ name: 'elicit-serve-e2e', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: 'legacy' } });
    client.setNotificationHandler('notifications/elicitation/complete', (n) => done.heard(n.params.elicitationId));
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    t.after(() => client.close());
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    const text = async (name) => (await client.callTool({ name, arguments: {} })).content[0].text;
    assert.equal(await text('a_whoami'), 'erin');

    const e = await client.callTool({ name: 'a_admin', arguments: {} }).then(() => null, (err) => err);
    assert.ok(e instanceof UrlElicitationRequiredErrorV2, `${e}\n${log}`);
    const [el] = e.elicitations;
    assert.equal(el.mode, 'url');
    const page = await browse(el.url, 'erin', new URL(el.url).searchParams.get('redirect_uri'), () => log);
    assert.equal(page.status, 200, await page.text());
    await done.of(el.elicitationId, () => log);
    assert.deepEqual(done.ids, [el.elicitationId], 'told once, with the id it was handed');
    assert.equal(await text('a_admin'), 'admin:erin', 'the call tried again after the notification succeeds');
  });
}
