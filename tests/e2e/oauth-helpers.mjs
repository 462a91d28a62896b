// Shared parts of the upstream OAuth tests (oauth-upstream, oauth-elicit): a real authorization
// server (npm `oidc-provider`: dynamic client registration, resource indicators with JWT access
// tokens, refresh tokens, client credentials, revocation, its development login and consent
// pages), real MCP servers (the official SDK's McpServer + StreamableHTTPServerTransport) that
// check each access token with `jose` against its JWKS, and the test acting as the browser.
// Each of them may be served over TLS (`tls`: a key and certificate, with `fetch` trusting their
// CA; see tls-helpers.mjs).
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startWorker } from './harness.mjs';
import Provider, { errors } from 'oidc-provider';
import { createRemoteJWKSet, customFetch, jwtVerify } from 'jose';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** An http server, or with `tls` ({ key, cert }) an https one, for `handler`. */
function createServer(tls, handler) {
  return tls ? https.createServer(tls, handler) : http.createServer(handler);
}

/**
 * The authorization server on `port`: JWT access tokens of `ttl` seconds for the `resources`
 * (audience = the resource), granting `scopes`; a client_credentials client `svc` (allowed the
 * scopes `svcScope`), and the `clients` registered beforehand. With `tls` its issuer is
 * `https://127.0.0.1:port`. `tokenRequests` collects each answered token request ({ grant,
 * refreshToken, status, error, clientId, issuedRefreshToken }); while `hang.token` is true its token endpoint takes requests
 * and never answers (as a hung server would).
 */
export async function startAuthServer(t, {
  port, resources, ttl, scopes = ['mcp'], tls, svcScope = 'mcp', clients = [], tokenRequests = [], hang = {},
}) {
  const issuer = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'svc', client_secret: 'svc-secret-1234567890', grant_types: ['client_credentials'],
      redirect_uris: [], response_types: [], scope: svcScope,
    }, ...clients],
    scopes,
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resources[0],
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (!resources.includes(indicator)) throw new errors.InvalidTarget();
          return { scope: scopes.join(' '), audience: indicator, accessTokenTTL: ttl, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    pkce: { required: () => true },
  });
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.method === 'POST' && ctx.path === '/token') {
      tokenRequests.push({
        grant: ctx.oidc?.params?.grant_type,
        refreshToken: ctx.oidc?.params?.refresh_token,
        status: ctx.status,
        error: ctx.body?.error,
        clientId: ctx.oidc?.client?.clientId,
        issuedRefreshToken: ctx.body?.refresh_token,
      });
    }
  });
  const callback = provider.callback();
  const server = createServer(tls, (req, res) => {
    if (hang.token && req.method === 'POST' && req.url.startsWith('/token')) return; // never answered
    callback(req, res);
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  t.after(() => { server.closeAllConnections(); server.close(); });
  return issuer;
}

/**
 * An MCP server `name` on `port` with tools `whoami` and `echo` (and `admin` when `adminScope`
 * is given: a token without that scope gets 403 insufficient_scope). With a `resource`, it asks
 * for a token of `issuer` for that audience (401 with a Bearer challenge) and publishes its
 * Protected Resource Metadata; with a `bearer`, it answers 401 to a request without exactly
 * that static token. `seen` collects the Authorization headers it got, `requests` each request's
 * method, path, Authorization and Mcp-Session-Id. With `tls` it is served over https, and `fetch`
 * (one trusting the CA) reads the issuer's JWKS. With `sessions` it keeps sessions (the SDK's
 * stateful transport: a GET stream and a DELETE per session), every request's token checked.
 */
export async function startMcp(t, {
  name, port, resource, issuer, seen = [], adminScope, bearer, tls, fetch: fetchImpl, sessions = false, requests = [],
}) {
  const jwks = issuer ? createRemoteJWKSet(new URL(`${issuer}/jwks`), fetchImpl ? { [customFetch]: fetchImpl } : {}) : null;
  const metadata = `${tls ? 'https' : 'http'}://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
  /** The SDK server with its tools; `whose(extra)` is who the calling request's token is for. */
  const mcp = (whose) => {
    const s = new McpServer({ name: `up-${name}`, version: '1.0.0' });
    s.registerTool('whoami', { description: 'Who the token is for' }, async (extra) => ({ content: [{ type: 'text', text: whose(extra) }] }));
    s.registerTool('echo', { description: 'Echoes', inputSchema: { m: z.string() } }, async ({ m }) => ({ content: [{ type: 'text', text: m }] }));
    if (adminScope) {
      s.registerTool('admin', { description: `Needs the ${adminScope} scope` }, async (extra) => ({ content: [{ type: 'text', text: `admin:${whose(extra)}` }] }));
    }
    return s;
  };
  /** The sessions kept (`sessions`), by id. */
  const open = new Map();
  /**
   * A request in a session: handled by its session's transport (an initialize opens one);
   * who its token is for reaches the tools as `extra.authInfo`.
   */
  const inSession = async (req, res, body, who) => {
    req.auth = { token: '', clientId: who, scopes: [] };
    const id = req.headers['mcp-session-id'];
    let transport = id && open.get(id);
    if (!transport) {
      if (id || body?.method !== 'initialize') { res.writeHead(404).end(); return; }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(), enableJsonResponse: true,
        onsessioninitialized: (sid) => open.set(sid, transport),
      });
      transport.onclose = () => open.delete(transport.sessionId);
      await mcp((extra) => extra.authInfo?.clientId).connect(transport);
    }
    await transport.handleRequest(req, res, body);
  };
  const srv = createServer(tls, async (req, res) => {
    try {
      seen.push(req.headers.authorization);
      requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization, session: req.headers['mcp-session-id'] });
      if (bearer && req.headers.authorization !== `Bearer ${bearer}`) {
        res.writeHead(401, { 'content-type': 'text/plain' }).end('a static bearer token is needed');
        return;
      }
      if (req.url.startsWith('/.well-known/oauth-protected-resource')) {
        if (!resource || req.url !== '/.well-known/oauth-protected-resource/mcp') { res.writeHead(404).end(); return; }
        res.writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ resource, authorization_servers: [issuer], scopes_supported: ['mcp', ...(adminScope ? [adminScope] : [])] }));
        return;
      }
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const body = raw ? JSON.parse(raw) : undefined;
      let who = bearer ? 'static' : 'anyone';
      if (resource) {
        const challenge = `Bearer resource_metadata="${metadata}", scope="mcp"`;
        const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        if (!token) { res.writeHead(401, { 'www-authenticate': challenge }).end(); return; }
        let payload;
        try {
          ({ payload } = await jwtVerify(token, jwks, { issuer, audience: resource }));
        } catch (e) {
          res.writeHead(401, { 'www-authenticate': `${challenge}, error="invalid_token", error_description="${e.code ?? 'not valid'}"` }).end();
          return;
        }
        who = payload.sub ?? payload.client_id;
        const granted = String(payload.scope ?? '').split(' ');
        if (adminScope && body?.method === 'tools/call' && body.params?.name === 'admin' && !granted.includes(adminScope)) {
          res.writeHead(403, {
            'www-authenticate': `Bearer error="insufficient_scope", scope="mcp ${adminScope}", resource_metadata="${metadata}", error_description="admin needs ${adminScope}"`,
          }).end();
          return;
        }
      }
      if (sessions) {
        await inSession(req, res, body, who);
        return;
      }
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp(() => who).connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  t.after(() => { srv.closeAllConnections(); srv.close(); });
}

/**
 * Follows the authorization URL `url` as a browser would (cookies, redirects, oidc-provider's
 * development login and consent forms, signed in as `login`) until it is sent to `redirect`,
 * which it opens; the response of that last page.
 */
export async function browse(url, login, redirect, log = () => '', fetch = globalThis.fetch) {
  const jar = new Map();
  const go = async (to, init = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(to, { ...init, redirect: 'manual', headers: { ...init.headers, ...(cookie ? { cookie } : {}) } });
    for (const c of r.headers.getSetCookie()) {
      const kv = c.split(';')[0];
      const i = kv.indexOf('=');
      jar.set(kv.slice(0, i), kv.slice(i + 1));
    }
    return r;
  };
  let r = await go(url);
  for (let step = 0; step < 20; step += 1) {
    const location = r.headers.get('location');
    if (location) {
      const next = new URL(location, url);
      if (next.href.startsWith(redirect)) return fetch(next);
      r = await go(next);
      continue;
    }
    const html = await r.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form on the page (HTTP ${r.status}): ${html.slice(0, 300)}\n${log()}`);
    const body = html.includes('name="login"')
      ? new URLSearchParams({ prompt: 'login', login, password: 'any' })
      : new URLSearchParams({ prompt: 'consent' });
    r = await go(new URL(action, url), { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  throw new Error(`sign-in did not reach the redirect URI\n${log()}`);
}

/**
 * `mcp-sieve login NAME` signed in as `login`: follows the printed authorization URL (see
 * `browse`, with `fetch`) and waits for login to end with 0. `source` is how login is told the
 * document: `['--catalog', FILE]` when `catalog` is a string.
 */
export async function signInWith(bin, catalog, env, login, issuer, name = 'a', fetch = globalThis.fetch) {
  const source = typeof catalog === 'string' ? ['--catalog', catalog] : catalog;
  const p = spawn(bin, ['login', name, ...source, '--no-browser'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise((r) => p.on('exit', r));
  const url = await new Promise((resolve, reject) => {
    p.stderr.on('data', (d) => {
      err += d;
      const line = err.split('\n').find((l) => l.startsWith(`${issuer}/`));
      if (line) resolve(line.trim());
    });
    p.on('exit', (code) => reject(new Error(`login ended (${code}): ${err}`)));
  });
  const page = await browse(url, login, new URL(url).searchParams.get('redirect_uri'), () => err, fetch);
  assert.equal(page.status, 200, await page.text());
  assert.equal(await exited, 0, err);
}

/** Runs `cmd args` to its end: { code, err }. */
export function run(cmd, args, env) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => resolve({ code, err }));
  });
}

/** Every file under `dir`, read whole. */
function filesUnder(dir) {
  const out = [];
  for (const n of readdirSync(dir)) {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(readFileSync(p));
  }
  return out;
}

/** Checks that none of the Bearer `headers` (JWT access tokens), nor their claims, is in a file under `dir`. */
export function assertSealed(dir, headers) {
  const stored = filesUnder(dir);
  for (const h of new Set(headers)) {
    const token = h.split(' ')[1];
    assert.ok(!stored.some((b) => b.includes(token)), 'no access token is stored in clear');
    assert.ok(!stored.some((b) => b.includes(token.split('.')[1])), 'nor its claims');
  }
}

/**
 * The Worker (wrangler dev) serving `doc`, with its Durable Objects' state in `state` (a directory
 * of its own, removed after) and the upstream token key; its callers are the principals of the
 * static `tokens` (none: it does not tell them apart), `vars` more variables. `as(who)`: the
 * headers of principal `who`; `connect(who)`: an official SDK client of `who` in a session.
 */
export async function startOAuthWorker(t, doc, { tokens, vars = {} } = {}) {
  const state = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-worker-'));
  const more = Object.entries({ ...(tokens ? { MCP_SIEVE_TOKENS: JSON.stringify(tokens) } : {}), ...vars });
  const worker = await startWorker({
    persistTo: state,
    extraArgs: [
      '--var', `MCP_SIEVE_CONFIG:${JSON.stringify(doc)}`,
      '--var', 'MCP_SIEVE_TOKEN_KEY:test-key-0123456789abcdef',
      ...more.flatMap(([k, v]) => ['--var', `${k}:${v}`]),
    ],
  });
  t.after(async () => { await worker.stop(); rmSync(state, { recursive: true, force: true }); });
  const as = (who) => ({ Authorization: `Bearer ${tokens[who]}` });
  const connect = async (who) => {
    const client = new Client({ name: `oauth-${who}`, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(worker.url), { requestInit: { headers: as(who) } }));
    t.after(() => client.close());
    return client;
  };
  return { worker, state, base: worker.url.replace(/\/mcp$/, ''), as, connect };
}
