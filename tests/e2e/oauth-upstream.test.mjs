// E2E (native): the gateway as an OAuth 2.1 client of its upstreams, against parts nobody here
// wrote, all on 127.0.0.1: a real authorization server (npm `oidc-provider`: dynamic client
// registration, resource indicators with JWT access tokens, refresh tokens, client credentials,
// revocation, its development login and consent pages) and real MCP servers (the official SDK's
// McpServer + StreamableHTTPServerTransport) that check each access token with `jose` against
// the server's JWKS (issuer and audience = their own URL) and publish Protected Resource Metadata.
//
// `mcp-sieve login a` signs in (the test is the browser: it follows the printed authorization
// URL through the login and consent forms to the loopback redirect); then the official SDK
// client over `mcp-sieve stdio` lists and calls the protected server's tools; a token that
// expires is refreshed without anyone; client_credentials needs nobody; a second upstream never
// sees a token; a revoked refresh token makes the upstream `needs-login`, its calls fail naming
// `mcp-sieve login a`, and the status says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { freePort } from './harness.mjs';
import { startAuthServer, startMcp, signInWith as signIn, run } from './oauth-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const TTL = 4; // access tokens live 4 s: the refresh is seen within the test
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (process.env.SIEVE_TARGET !== 'native') {
  test('oauth upstreams (native only)', { skip: 'set SIEVE_TARGET=native' }, () => {});
} else {
  test('the gateway signs in to OAuth upstreams: login, refresh, client_credentials, isolation, revocation', { timeout: 180_000 }, async (t) => {
    const [asPort, aPort, bPort, cPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const resourceA = `http://127.0.0.1:${aPort}/mcp`;
    const resourceC = `http://127.0.0.1:${cPort}/mcp`;
    // The authorization server; the protected MCP servers (a: a person's tokens; c: the
    // gateway's own) and an open one (b).
    const issuer = await startAuthServer(t, { port: asPort, resources: [resourceA, resourceC], ttl: TTL });
    const seen = { a: [], b: [], c: [] };
    await startMcp(t, { name: 'a', port: aPort, resource: resourceA, issuer, seen: seen.a });
    await startMcp(t, { name: 'b', port: bPort, seen: seen.b });
    await startMcp(t, { name: 'c', port: cPort, resource: resourceC, issuer, seen: seen.c });

    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalog = path.join(dir, 'sieve.json');
    writeFileSync(catalog, JSON.stringify({
      tools: [],
      upstreams: {
        // No `auth`: it answers 401 with a Bearer challenge, so it is an OAuth upstream.
        a: { url: resourceA },
        b: { url: `http://127.0.0.1:${bPort}/mcp` },
        c: { url: resourceC, auth: { type: 'oauth', clientId: 'svc', clientSecret: '${SVC_SECRET}', grant: 'client_credentials', scopes: ['mcp'] } },
      },
    }));
    // The file store (read below); the keychain's path is tested in oauth-elicit.test.mjs.
    const env = { ...process.env, XDG_CONFIG_HOME: dir, SVC_SECRET: 'svc-secret-1234567890', MCP_SIEVE_TOKEN_STORE: 'file' };
    const store = path.join(dir, 'mcp-sieve', 'tokens.json');

    // mcp-sieve login a: the test is the browser.
    const login = spawn(BIN, ['login', 'a', '--catalog', catalog, '--no-browser'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const authorizeUrl = await new Promise((resolve, reject) => {
      login.stderr.on('data', (d) => {
        err += d;
        const line = err.split('\n').find((l) => l.startsWith(`${issuer}/`));
        if (line) resolve(line.trim());
      });
      login.on('exit', (code) => reject(new Error(`login ended (${code}) before printing a URL: ${err}`)));
    });
    const u = new URL(authorizeUrl);
    assert.equal(u.searchParams.get('resource'), resourceA, 'the authorization request names the resource');
    assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(u.searchParams.get('scope'), 'mcp', 'the challenge scope');
    assert.ok(u.searchParams.get('state'));
    // A redirect with another state is discarded (and the sign-in goes on waiting for its own).
    const redirect = u.searchParams.get('redirect_uri');
    assert.match(redirect, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    const forged = await fetch(`${redirect}?code=x&state=forged`);
    assert.equal(forged.status, 400);
    // That ended this sign-in (a forged redirect is an error, not ignored): sign in again.
    await new Promise((r) => (login.exitCode !== null ? r() : login.on('exit', r)));
    assert.notEqual(login.exitCode, 0);
    assert.match(err, /another state than the one sent/);
    await signInWith(catalog, env, 'alice', issuer);
    const kept = JSON.parse(readFileSync(store, 'utf8'));
    assert.equal(statSync(store).mode & 0o777, 0o600, 'the token store is readable by its owner only');
    assert.equal(kept.upstreams.a.resource, resourceA);
    assert.ok(kept.upstreams.a.tokens.refresh_token, 'a refresh token was kept');
    const firstAccess = kept.upstreams.a.tokens.access_token;
    assert.ok(!readFileSync(catalog, 'utf8').includes(firstAccess), 'no token in the document');

    // The official SDK client over `mcp-sieve stdio`.
    const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', catalog], env, stderr: 'pipe' });
    let log = '';
    transport.stderr?.on('data', (d) => { log += d; });
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(transport);
    t.after(() => client.close());
    const names = (await client.listTools()).tools.map((x) => x.name).sort();
    assert.deepEqual(names, ['a_echo', 'a_whoami', 'b_echo', 'b_whoami', 'c_echo', 'c_whoami'], log);
    const text = async (name, args = {}) => (await client.callTool({ name, arguments: args })).content[0].text;
    assert.equal(await text('a_whoami'), 'alice', 'the signed-in user\'s token reached upstream a');
    assert.equal(await text('c_whoami'), 'svc', 'client_credentials: the gateway\'s own token, no login');
    assert.equal(await text('b_whoami'), 'anyone');

    // The access token expires (4 s): refreshed without anyone.
    await sleep((TTL + 1) * 1000);
    assert.equal(await text('a_whoami'), 'alice');
    assert.equal(await text('c_whoami'), 'svc');
    const refreshed = JSON.parse(readFileSync(store, 'utf8')).upstreams.a.tokens;
    assert.notEqual(refreshed.access_token, firstAccess, 'a new access token was stored');
    const tokensOfA = new Set(seen.a.filter(Boolean));
    assert.ok(tokensOfA.size >= 2, 'upstream a saw a refreshed token');

    // The open upstream never saw any token (none of a's, none of c's).
    assert.ok(seen.b.length > 0);
    assert.deepEqual(seen.b.filter((h) => h !== undefined), [], 'upstream b got no Authorization header');
    for (const h of seen.c.filter(Boolean)) assert.ok(!tokensOfA.has(h), 'upstream c never got a\'s token');
    for (const secret of [firstAccess, refreshed.access_token, refreshed.refresh_token]) {
      assert.ok(!log.includes(secret), 'no token in the log');
    }

    // The refresh token is revoked at the authorization server: once the access token expires,
    // the upstream needs a sign-in, and its calls say how.
    const revoke = await fetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshed.refresh_token, token_type_hint: 'refresh_token', client_id: kept.upstreams.a.client.client_id }),
    });
    assert.equal(revoke.status, 200, await revoke.text());
    await sleep((TTL + 1) * 1000);
    const failed = await client.callTool({ name: 'a_whoami', arguments: {} }).then((r) => JSON.stringify(r), (e) => String(e));
    assert.match(failed, /mcp-sieve login a/, failed);
    assert.equal(await text('b_echo', { m: 'still here' }), 'still here', 'the other upstreams keep serving');
    await client.close();

    // `serve`'s status says needs-login.
    const port = await freePort();
    const serve = spawn(BIN, ['serve', '--catalog', catalog, '--port', String(port)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let serveLog = '';
    serve.stderr.on('data', (d) => { serveLog += d; });
    t.after(() => { try { process.kill(serve.pid); } catch { /* gone */ } });
    let status;
    for (let i = 0; i < 100; i += 1) {
      await sleep(200);
      const r = await fetch(`http://127.0.0.1:${port}/mcp-sieve/upstreams`).catch(() => null);
      if (!r?.ok) continue;
      status = await r.json();
      if (status.upstreams?.find((x) => x.name === 'a')?.state === 'needs-login') break;
    }
    const a = status?.upstreams?.find((x) => x.name === 'a');
    assert.equal(a?.state, 'needs-login', `${JSON.stringify(status)}\n${serveLog}`);
    assert.equal(a.login, 'mcp-sieve login a');
    assert.match(a.error, /mcp-sieve login a/);
    assert.equal(status.upstreams.find((x) => x.name === 'c').state, 'up');
    assert.ok(!JSON.stringify(status).includes(refreshed.access_token));

    // logout deletes them.
    const out = await run(BIN, ['logout', 'a'], env);
    assert.equal(out.code, 0, out.err);
    assert.equal(JSON.parse(readFileSync(store, 'utf8')).upstreams.a, undefined);
  });

  // Issue 58 item 5: a refused refresh token was sent again at every retry (+1, +2, +4 s ...)
  // and the stored entry was never cleared.
  test('a refresh token refused with invalid_grant is sent once: its tokens are cleared and the upstream stays needs-login until login', { timeout: 120_000 }, async (t) => {
    const [asPort, aPort] = [await freePort(), await freePort()];
    const resourceA = `http://127.0.0.1:${aPort}/mcp`;
    const tokenRequests = [];
    const issuer = await startAuthServer(t, { port: asPort, resources: [resourceA], ttl: 2, tokenRequests });
    await startMcp(t, { name: 'a', port: aPort, resource: resourceA, issuer });
    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-revoked-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalog = path.join(dir, 'sieve.json');
    // refreshSeconds 1 caps the backoff at a second: a retry each second.
    writeFileSync(catalog, JSON.stringify({ tools: [], upstreams: { a: { url: resourceA, refreshSeconds: 1 } } }));
    const env = { ...process.env, XDG_CONFIG_HOME: dir, MCP_SIEVE_TOKEN_STORE: 'file' };
    const store = path.join(dir, 'mcp-sieve', 'tokens.json');
    await signInWith(catalog, env, 'alice', issuer);
    const kept = JSON.parse(readFileSync(store, 'utf8')).upstreams.a;
    const revoke = await fetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: kept.tokens.refresh_token, token_type_hint: 'refresh_token', client_id: kept.client.client_id }),
    });
    assert.equal(revoke.status, 200, await revoke.text());
    await sleep(2500); // the access token expired too

    const serve = await startServe(t, catalog, env);
    const needsLogin = await serve.until((a) => a?.state === 'needs-login');
    assert.equal(needsLogin?.state, 'needs-login', serve.log());
    assert.match(needsLogin.error, /mcp-sieve login a/);
    await sleep(5000); // five retries or more
    const refreshes = () => tokenRequests.filter((r) => r.grant === 'refresh_token');
    assert.equal(refreshes().length, 1, `the refused refresh token was sent again: ${JSON.stringify(refreshes().map((r) => [r.status, r.error]))}`);
    assert.equal(refreshes()[0].error, 'invalid_grant');
    assert.equal(JSON.parse(readFileSync(store, 'utf8')).upstreams.a, undefined, 'the refused tokens were deleted from the store');
    const still = await serve.upstream();
    assert.equal(still.state, 'needs-login');
    assert.match(still.error, /mcp-sieve login a/);

    // A new sign-in: the running gateway takes it (no restart), and nothing is refreshed meanwhile.
    await signInWith(catalog, env, 'alice', issuer);
    const up = await serve.until((a) => a?.state === 'up');
    assert.equal(up?.state, 'up', `${JSON.stringify(up)}\n${serve.log()}`);
    assert.equal(refreshes().length, 1);
  });

  // Issue 58 item 6: a token endpoint that hangs was blamed on the upstream, with the call's
  // deadline ("did not answer tools/call within 30 s (limits.callTimeoutSeconds)"): the sign-in's
  // requests now have their own, shorter deadline, and the error names the token endpoint.
  test('a hung token endpoint is named, within the sign-in\'s own deadline (shorter than the call\'s)', { timeout: 120_000 }, async (t) => {
    const [asPort, cPort] = [await freePort(), await freePort()];
    const resourceC = `http://127.0.0.1:${cPort}/mcp`;
    const hang = { token: false };
    const issuer = await startAuthServer(t, { port: asPort, resources: [resourceC], ttl: 2, hang });
    await startMcp(t, { name: 'hang', port: cPort, resource: resourceC, issuer });
    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-hang-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalog = path.join(dir, 'sieve.json');
    // A call deadline of 4 s (its default is 30): the sign-in's default is then half of it, 2 s.
    writeFileSync(catalog, JSON.stringify({
      tools: [],
      upstreams: {
        hang: {
          url: resourceC,
          auth: { type: 'oauth', clientId: 'svc', clientSecret: '${SVC_SECRET}', grant: 'client_credentials', scopes: ['mcp'] },
          limits: { callTimeoutSeconds: 4 },
        },
      },
    }));
    const env = { ...process.env, XDG_CONFIG_HOME: dir, SVC_SECRET: 'svc-secret-1234567890', MCP_SIEVE_TOKEN_STORE: 'file' };
    const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', catalog], env, stderr: 'pipe' });
    let log = '';
    transport.stderr?.on('data', (d) => { log += d; });
    const client = new Client({ name: 'oauth-hang', version: '1.0.0' });
    await client.connect(transport);
    t.after(() => client.close());
    const call = () => client.callTool({ name: 'hang_whoami', arguments: {} });
    assert.equal((await call()).content[0].text, 'svc', log);

    hang.token = true;
    await sleep(2500); // the token expired: the next call asks the token endpoint, which hangs
    const started = Date.now();
    const failed = await call().then((r) => ({ result: r }), (e) => e);
    const took = Date.now() - started;
    assert.equal(failed.code, -32603, `${JSON.stringify(failed)}\n${log}`);
    const where = `127.0.0.1:${asPort}`;
    assert.match(failed.message, /upstream "hang"/, failed.message);
    assert.match(failed.message, new RegExp(`token endpoint \\(${where.replaceAll('.', '\\.')}\\) did not answer within 2 s \\(limits\\.signInTimeoutSeconds\\)`), failed.message);
    assert.doesNotMatch(failed.message, /callTimeoutSeconds/, failed.message);
    assert.ok(took >= 1800 && took < 3900, `it failed after ${took} ms, not at the sign-in's 2 s deadline`);

    // Answering again, it serves again.
    hang.token = false;
    assert.equal((await call()).content[0].text, 'svc', log);
  });
}

/**
 * `mcp-sieve serve` of `catalog` with `env`: `upstream(name)` reads upstream `name`'s status
 * (`a` by default); `until(pred)` polls it (10 s at most) until `pred` holds, returning it.
 */
async function startServe(t, catalog, env) {
  const port = await freePort();
  const serve = spawn(BIN, ['serve', '--catalog', catalog, '--port', String(port)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  serve.stderr.on('data', (d) => { log += d; });
  t.after(() => { try { process.kill(serve.pid); } catch { /* gone */ } });
  const upstream = async (name = 'a') => {
    const r = await fetch(`http://127.0.0.1:${port}/mcp-sieve/upstreams`).catch(() => null);
    if (!r?.ok) return undefined;
    return (await r.json()).upstreams?.find((x) => x.name === name);
  };
  const until = async (pred, name = 'a') => {
    let a;
    for (let i = 0; i < 50; i += 1) {
      a = await upstream(name);
      if (pred(a)) break;
      await sleep(200);
    }
    return a;
  };
  return { upstream, until, log: () => log };
}

/** `mcp-sieve login a` signed in as `login` (the test is the browser). */
function signInWith(catalog, env, login, issuer) {
  return signIn(BIN, catalog, env, login, issuer);
}
