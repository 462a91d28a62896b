// E2E (native): the sign-in client's checks of URLs and metadata, against a hostile upstream and
// authorization server (issue 58 items 1–4), both small node servers on 127.0.0.1 that say what
// an attacker's would and record every request they get:
// - a token endpoint on a name that only looks local (`http://127.probe.as.test/token`) is
//   refused before anything is sent to it (item 1);
// - an upstream URL with dot segments (`/mcp/../mcpx`, `/mcp/%2e%2e/mcpx`) gets no token issued for
//   `/mcp`, and requests go to the URL as resolved (item 2);
// - a redirect without `iss` from a server whose metadata says it sends one is refused and its
//   code never exchanged (item 3, RFC 9207);
// - protected-resource metadata without `resource` is refused, and a `resource_metadata` URL on
//   another origin than the upstream's is never fetched: the well-known URL on the upstream's
//   origin is read instead, and the log says why (item 4, RFC 9728).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './harness.mjs';
import { serve, hostile, json } from './oauth-hostile.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A folder with the document `doc` and an empty token store; the env that points there. */
function home(t, doc) {
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-checks-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const catalog = path.join(dir, 'sieve.json');
  writeFileSync(catalog, JSON.stringify(doc));
  return { dir, catalog, env: { ...process.env, XDG_CONFIG_HOME: dir, MCP_SIEVE_TOKEN_STORE: 'file' } };
}

/**
 * `mcp-sieve login a`: resolves { url } when it prints the authorization URL (a line starting
 * with `issuer/`), or { code, err } when it ends first; `wait()` its end, `err()` its output.
 */
function login(t, catalog, env, issuer) {
  const p = spawn(BIN, ['login', 'a', '--catalog', catalog, '--no-browser'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => { try { p.kill(); } catch { /* gone */ } });
  let err = '';
  const ended = new Promise((r) => p.on('exit', (code) => r({ code, err })));
  const first = new Promise((resolve) => {
    p.stderr.on('data', (d) => {
      err += d;
      const line = err.split('\n').find((l) => l.startsWith(`${issuer}/`));
      if (line) resolve({ url: line.trim() });
    });
    ended.then(resolve);
  });
  return { first, wait: () => ended, err: () => err };
}

const upstreamDoc = (url, auth = { type: 'oauth', clientId: 'cli' }) => ({ tools: [], upstreams: { a: { url, auth } } });

if (process.env.SIEVE_TARGET !== 'native') {
  test('the sign-in client\'s checks (native only)', { skip: 'set SIEVE_TARGET=native' }, () => {});
} else {
  test('item 1: a token endpoint on a name that only looks local is refused before anything is sent', { timeout: 30_000 }, async (t) => {
    const [up, as] = [await freePort(), await freePort()];
    const { issuer, server } = await hostile(t, {
      up, as, prm: { resource: `http://127.0.0.1:${up}/mcp`, authorization_servers: [`http://127.0.0.1:${as}`] },
      asMeta: { token_endpoint: 'http://127.probe.as.test/token' },
    });
    const { catalog, env } = home(t, upstreamDoc(`http://127.0.0.1:${up}/mcp`));
    const out = await login(t, catalog, env, issuer).first;
    assert.equal(out.url, undefined, `no sign-in was begun: ${out.url}`);
    assert.notEqual(out.code, 0);
    assert.match(out.err, /token_endpoint "http:\/\/127\.probe\.as\.test\/token" must be an https:\/\/ URL/, out.err);
    assert.ok(!server.some((r) => r.url === '/token'), 'nothing reached a token endpoint');
  });

  test('item 2: an upstream URL with dot segments gets no token of the resource it climbs out of', { timeout: 60_000 }, async (t) => {
    const up = await freePort();
    const seen = await serve(t, up, (req) => {
      if (req.method !== 'POST') return [405, {}, ''];
      // An MCP server that answers whatever it is asked, as if the token were good.
      return [401, { 'www-authenticate': 'Bearer error="invalid_token"' }, ''];
    });
    const resource = `http://127.0.0.1:${up}/mcp`;
    const issuer = 'http://127.0.0.1:9';
    const signIn = {
      resource,
      server: { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, code_challenge_methods: ['S256'], client_id_metadata_document_supported: false },
      client: { client_id: 'cli' },
      tokens: { access_token: 'at-of-mcp-0123456789', obtained_ms: Date.now(), expires_ms: Date.now() + 3_600_000 },
    };
    for (const climb of ['/mcp/../mcpx', '/mcp/%2e%2e/mcpx']) {
      seen.length = 0;
      const { dir, catalog, env } = home(t, {
        tools: [],
        upstreams: {
          a: { url: `http://127.0.0.1:${up}${climb}`, auth: 'oauth' },
          b: { url: `http://127.0.0.1:${up}/x/../open` },
        },
      });
      mkdirSync(path.join(dir, 'mcp-sieve'), { recursive: true });
      writeFileSync(path.join(dir, 'mcp-sieve', 'tokens.json'), JSON.stringify({ upstreams: { a: signIn } }), { mode: 0o600 });
      const port = await freePort();
      const p = spawn(BIN, ['serve', '--catalog', catalog, '--port', String(port)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      p.stderr.on('data', (d) => { log += d; });
      let status;
      for (let i = 0; i < 100; i += 1) {
        await sleep(100);
        const r = await fetch(`http://127.0.0.1:${port}/mcp-sieve/upstreams`).catch(() => null);
        if (!r?.ok) continue;
        status = await r.json();
        const a = status.upstreams?.find((x) => x.name === 'a');
        if (a && a.state !== 'starting' && seen.some((x) => x.url === '/open')) break;
      }
      p.kill();
      await new Promise((r) => (p.exitCode !== null ? r() : p.on('exit', r)));
      const carried = seen.filter((x) => x.authorization?.includes('at-of-mcp'));
      assert.deepEqual(carried.map((x) => x.url), [], `${climb}: the token of ${resource} was sent\n${log}`);
      assert.ok(seen.some((x) => x.url === '/open'), `${climb}: upstream b was asked at its resolved URL: ${JSON.stringify(seen)}`);
      assert.ok(!seen.some((x) => x.url.includes('..') || x.url.includes('%2e')), `requests go to the URL as resolved: ${JSON.stringify(seen)}`);
      assert.equal(status?.upstreams?.find((x) => x.name === 'a')?.state, 'needs-login', `${JSON.stringify(status)}\n${log}`);
    }
  });

  test('item 3: a redirect without iss from a server that says it sends one is refused, its code not exchanged', { timeout: 30_000 }, async (t) => {
    const [up, as] = [await freePort(), await freePort()];
    const { issuer, server } = await hostile(t, {
      up, as, prm: { resource: `http://127.0.0.1:${up}/mcp`, authorization_servers: [`http://127.0.0.1:${as}`] },
      asMeta: { authorization_response_iss_parameter_supported: true },
    });
    const { catalog, env } = home(t, upstreamDoc(`http://127.0.0.1:${up}/mcp`));
    const run = login(t, catalog, env, issuer);
    const { url } = await run.first;
    assert.ok(url, run.err());
    const u = new URL(url);
    const back = await fetch(`${u.searchParams.get('redirect_uri')}?code=stolen&state=${u.searchParams.get('state')}`);
    assert.equal(back.status, 400, await back.text());
    const end = await run.wait();
    assert.notEqual(end.code, 0);
    assert.match(end.err, /no iss/, end.err);
    assert.ok(!server.some((r) => r.url === '/token'), 'the code was not exchanged');

    // With its iss, the same redirect signs in.
    const again = login(t, catalog, env, issuer);
    const { url: url2 } = await again.first;
    const v = new URL(url2);
    const ok = await fetch(`${v.searchParams.get('redirect_uri')}?code=c&state=${v.searchParams.get('state')}&iss=${encodeURIComponent(issuer)}`);
    assert.equal(ok.status, 200, await ok.text());
    assert.equal((await again.wait()).code, 0, again.err());
    assert.equal(server.filter((r) => r.url === '/token').length, 1);
  });

  test('item 4: metadata without resource is refused; resource_metadata on another origin is not fetched', { timeout: 30_000 }, async (t) => {
    const [up, as, inside] = [await freePort(), await freePort(), await freePort()];
    const internal = await serve(t, inside, () => json({ resource: `http://127.0.0.1:${up}/mcp`, authorization_servers: [`http://127.0.0.1:${as}`] }));
    const { issuer, upstream } = await hostile(t, {
      up, as, prm: { resource: `http://127.0.0.1:${up}/mcp`, authorization_servers: [`http://127.0.0.1:${as}`] },
      challengeUrl: `http://127.0.0.1:${inside}/internal`,
    });
    const { catalog, env } = home(t, upstreamDoc(`http://127.0.0.1:${up}/mcp`));
    const run = login(t, catalog, env, issuer);
    const { url } = await run.first;
    assert.ok(url, `the sign-in goes on from the upstream's own well-known URL: ${run.err()}`);
    assert.deepEqual(internal, [], 'the other origin was never asked');
    assert.ok(upstream.some((r) => r.url === '/.well-known/oauth-protected-resource/mcp'));
    assert.match(run.err(), /resource_metadata "http:\/\/127\.0\.0\.1:\d+\/internal", which is not on its origin/, run.err());

    const [up2, as2] = [await freePort(), await freePort()];
    const bare = await hostile(t, { up: up2, as: as2, prm: { authorization_servers: [`http://127.0.0.1:${as2}`] } });
    const h2 = home(t, upstreamDoc(`http://127.0.0.1:${up2}/mcp`));
    const out = await login(t, h2.catalog, h2.env, bare.issuer).first;
    assert.equal(out.url, undefined, 'no sign-in was begun');
    assert.match(out.err, /has no "resource"/, out.err);
    assert.ok(!bare.server.some((r) => r.url.startsWith('/.well-known')), 'its authorization server was not asked');
  });
}
