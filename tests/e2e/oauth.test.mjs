// E2E (issue 28): mcp-sieve as an OAuth 2.1 resource server per the MCP authorization spec, against
// a real authorization server (npm oidc-provider on loopback: client_credentials, resource
// indicators, JWT access tokens) — the Worker under wrangler dev, or the native server with
// SIEVE_TARGET=native. The official SDK v2 client discovers the Protected Resource Metadata from
// our 401, obtains a token for this resource and lists what its role's view allows; then tokens
// an attacker would try are refused with the right status and WWW-Authenticate, and a key
// rotation at the issuer is picked up (the JWKS refetch on an unknown kid is rate-limited).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHmac } from 'node:crypto';
import { Client, StreamableHTTPClientTransport, ClientCredentialsProvider } from '@modelcontextprotocol/client';
import { freePort, startNative, startWorker } from './harness.mjs';
import { startAuthServer, newKey, signJwt, signIn } from './oauth-server.mjs';

const native = process.env.SIEVE_TARGET === 'native';
/** The core's MIN_REFETCH_MS: a key set is fetched again at most this often. */
const MIN_REFETCH_MS = 30_000;

const keys = { rsa1: newKey('RS256', 'rsa1'), ec1: newKey('ES256', 'ec1'), ed1: newKey('EdDSA', 'ed1') };
const rsa2 = newKey('RS256', 'rsa2');
const CLIENTS = { ops: { secret: 'ops-secret', groups: ['admin'] }, reader: { secret: 'reader-secret', groups: ['reader'] } };

let as;
let asPort;
let server;
let tmp;
let resource;
let firstFetchAt;

async function startAs(keyList) {
  as = await startAuthServer({ port: asPort, keys: keyList, resources: [resource, 'http://127.0.0.1:1/other'], clients: CLIENTS,
    users: { ali: ['admin'], rob: ['reader'] } });
}

before(async () => {
  asPort = await freePort();
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  await startAs([keys.rsa1, keys.ec1, keys.ed1]);
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.auth = { resource, issuer: as.issuer, jwksUrl: `${as.issuer}/jwks`, requiredScopes: ['mcp'], rolesClaims: ['groups'], resourceName: 'mcp-sieve e2e' };
  doc.views.admins = { filter: { groups: ['admin'] }, principals: ['role:admin'] };
  doc.policy = { rules: [{ when: { roles: ['reader'] }, hide: { tags: ['destructive'] } }] };
  const text = JSON.stringify(doc);
  if (native) {
    tmp = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-'));
    writeFileSync(path.join(tmp, 'catalog.json'), text);
    server = await startNative({ port, extraArgs: ['--catalog', path.join(tmp, 'catalog.json')] });
  } else {
    server = await startWorker({ port, extraArgs: ['--var', `MCP_SIEVE_CONFIG:${text}`] });
  }
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  await as?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const now = () => Math.floor(Date.now() / 1000);
const claims = (extra = {}) => ({ iss: as.issuer, aud: resource, sub: 'mallory', scope: 'mcp', groups: ['admin'], iat: now(), exp: now() + 300, ...extra });

/** A raw tools/list (2025-11-25 initialize is not needed: a stateless 2026-07-28 list). */
async function list(token, url = server.url) {
  const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } };
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' };
  if (token != null) headers.Authorization = `Bearer ${token}`;
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: r.status, www: r.headers.get('www-authenticate'), body: await r.text() };
}

async function connect(client, url = server.url) {
  const provider = new ClientCredentialsProvider({ clientId: client, clientSecret: CLIENTS[client].secret, expectedIssuer: as.issuer });
  const c = new Client({ name: `oauth-e2e-${client}`, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await c.connect(transport);
  return c;
}

async function names(c) {
  const all = [];
  let cursor;
  do {
    const r = await c.listTools(cursor ? { cursor } : {});
    all.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return all;
}

test('no token: 401 pointing at the Protected Resource Metadata, served at both well-known paths', async () => {
  const r = await list(null);
  assert.equal(r.status, 401, r.body);
  const meta = `http://127.0.0.1:${new URL(resource).port}/.well-known/oauth-protected-resource/mcp`;
  assert.equal(r.www, `Bearer resource_metadata="${meta}", scope="mcp"`);
  for (const url of [meta, `http://127.0.0.1:${new URL(resource).port}/.well-known/oauth-protected-resource`]) {
    const m = await fetch(url);
    assert.equal(m.status, 200, url);
    assert.deepEqual(await m.json(), { resource, authorization_servers: [as.issuer], bearer_methods_supported: ['header'],
      scopes_supported: ['mcp'], resource_name: 'mcp-sieve e2e' });
  }
});

test('concurrent first requests of a cold server all wait for its first key fetch, and are accepted', async () => {
  const token = signJwt(claims(), keys.rsa1);
  const answers = await Promise.all(Array.from({ length: 8 }, () => list(token)));
  assert.deepEqual(answers.map((a) => a.status), Array(8).fill(200), answers.map((a) => a.body).join('\n'));
});

test('the SDK v2 client discovers, obtains a token for this resource and sees its role\'s view', { timeout: 60_000 }, async () => {
  const ops = await connect('ops');
  const reader = await connect('reader');
  try {
    firstFetchAt ??= Date.now();
    const [o, r] = [await names(ops), await names(reader)];
    assert.ok(o.includes('delete_message'), 'admin sees destructive tools');
    assert.ok(r.length > 0 && !r.includes('delete_message'), 'the rule for role reader hides them');
    await assert.rejects(reader.callTool({ name: 'delete_message', arguments: { id: '1' } }), /Unknown tool|delete_message/);
  } finally { await ops.close(); await reader.close(); }
  const admins = await connect('ops', `${server.url}/admins`);
  try {
    const a = await names(admins);
    assert.ok(a.length > 0 && !a.includes('echo'), a.join(', '));
  } finally { await admins.close(); }
  await assert.rejects(connect('reader', `${server.url}/admins`), /403|not open/);
});

test('a client cannot pass its own caller to the session object (the front Worker\'s header is replaced)', { timeout: 60_000 }, async () => {
  const token = signJwt(claims({ sub: 'rita', groups: ['reader'] }), keys.rsa1);
  const forged = JSON.stringify({ principal: 'ops', roles: ['admin'], claims: { sub: 'ops' } });
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    Authorization: `Bearer ${token}`, 'X-MCP-Sieve-Caller': forged };
  const init = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'forger', version: '1' } } }) });
  assert.equal(init.status, 200);
  const session = init.headers.get('mcp-session-id');
  await init.text();
  const r = await fetch(server.url, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  assert.ok(text.includes('"echo"') && !text.includes('delete_message'), 'the session sees the reader\'s view, not the forged admin\'s');
  // Without a token the forged header gets nothing at all.
  const anon = await fetch(server.url, { method: 'POST', headers: { ...headers, Authorization: '' }, body: '{}' });
  assert.equal(anon.status, 401);
});

/** The SDK's OAuth client provider for a person at a browser (authorization code + PKCE). */
class PersonProvider {
  constructor() { this.redirected = null; }
  get redirectUrl() { return 'http://127.0.0.1/callback'; }
  get clientMetadata() {
    return { client_name: 'oauth-e2e', redirect_uris: ['http://127.0.0.1/callback'], grant_types: ['authorization_code'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return { client_id: 'cli', issuer: as.issuer }; }
  tokens() { return this._tokens; }
  saveTokens(t) { this._tokens = t; }
  redirectToAuthorization(url) { this.redirected = url; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
}

test('a person signs in (authorization code + PKCE through the SDK v2 client) and sees their role\'s view', { timeout: 60_000 }, async () => {
  for (const [login, admin] of [['ali', true], ['rob', false]]) {
    const provider = new PersonProvider();
    const first = new StreamableHTTPClientTransport(new URL(`${server.url}/admins`), { authProvider: provider });
    await assert.rejects(new Client({ name: 'person', version: '1' }).connect(first), /nauthorized/);
    assert.ok(provider.redirected, 'the client was sent to the authorization server');
    assert.equal(new URL(provider.redirected).searchParams.get('resource'), resource, 'RFC 8707 resource indicator');
    const { code, iss } = await signIn(provider.redirected, login);
    await first.finishAuth(code, iss);
    const c = new Client({ name: 'person', version: '1' });
    const t = new StreamableHTTPClientTransport(new URL(`${server.url}/admins`), { authProvider: provider });
    if (admin) {
      await c.connect(t);
      try {
        const n = await names(c);
        assert.ok(n.length > 0 && !n.includes('echo'), n.join(', '));
      } finally { await c.close(); }
    } else {
      await assert.rejects(c.connect(t), /403|not open/);
    }
  }
});

test('ES256 and EdDSA tokens from the issuer\'s keys are accepted; the principal and roles come from the claims', async () => {
  for (const k of [keys.ec1, keys.ed1]) {
    const r = await list(signJwt(claims(), k), `${server.url}/admins`);
    assert.equal(r.status, 200, `${k.alg}: ${r.body}`);
  }
});

test('attacks: each refused with 401 invalid_token (or 403 insufficient_scope) and the metadata URL', async () => {
  firstFetchAt ??= Date.now();
  const hitsBefore = as.jwksHits();
  const hs = (() => {
    // HMAC with the issuer's public key as the secret (the classic RS/HS confusion).
    const h = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'at+jwt', kid: 'rsa1' })).toString('base64url');
    const p = Buffer.from(JSON.stringify(claims())).toString('base64url');
    const mac = createHmac('sha256', JSON.stringify(keys.rsa1.publicJwk)).update(`${h}.${p}`).digest('base64url');
    return `${h}.${p}.${mac}`;
  })();
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}.`;
  const attacker = newKey('RS256', 'rsa1');
  const cases = [
    ['another audience', signJwt(claims({ aud: 'http://127.0.0.1:1/other' }), keys.rsa1), /audience/],
    ['expired', signJwt(claims({ exp: now() - 600, iat: now() - 900 }), keys.rsa1), /expired/],
    ['not yet valid', signJwt(claims({ nbf: now() + 600 }), keys.rsa1), /not valid yet/],
    ['another issuer', signJwt(claims({ iss: 'http://127.0.0.1:1' }), keys.rsa1), /issuer/],
    ['wrongly signed (attacker key, issuer kid)', signJwt(claims(), attacker), /signature/],
    ['alg none', none, /none/],
    ['HS256 with the public key', hs, /HS256/],
    ['unknown kid', signJwt(claims(), newKey('RS256', 'nope')), /kid/],
    ['key embedded in the header (jwk)', signJwt(claims(), { ...attacker, kid: undefined }, { jwk: attacker.publicJwk }), /key|kid/],
    ['key URL in the header (jku)', signJwt(claims(), { ...attacker, kid: 'evil' }, { jku: `${as.issuer}/jwks` }), /kid/],
    ['no principal claim', signJwt(claims({ sub: undefined }), keys.rsa1), /principal/],
    ['not a JWT', 'opaque-token-value', /not a JWT/],
  ];
  for (const [what, token, why] of cases) {
    const r = await list(token);
    assert.equal(r.status, 401, `${what}: ${r.body}`);
    assert.match(r.www, /^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp", error="invalid_token", error_description="[^"]*"/, what);
    assert.match(r.body, why, what);
  }
  const scope = await list(signJwt(claims({ scope: 'openid' }), keys.rsa1));
  assert.equal(scope.status, 403, scope.body);
  assert.match(scope.www, /error="insufficient_scope", scope="mcp"/);
  // Several unknown kids within the interval: at most one refetch of the key set.
  assert.ok(as.jwksHits() - hitsBefore <= 1, `JWKS fetched ${as.jwksHits() - hitsBefore} times for unknown kids`);
});

test('key rotation: a token under a new key is refused until the issuer publishes it, then accepted', { timeout: 90_000 }, async () => {
  firstFetchAt ??= Date.now();
  const token = signJwt(claims(), rsa2);
  assert.equal((await list(token)).status, 401, 'not yet published');
  await as.stop();
  await startAs([rsa2, keys.rsa1, keys.ec1, keys.ed1]);
  // The unknown kid above may have used the interval's one refetch: wait it out.
  const wait = MIN_REFETCH_MS + 1_000 - (Date.now() - firstFetchAt);
  await new Promise((r) => setTimeout(r, Math.max(wait, MIN_REFETCH_MS + 1_000)));
  const r = await list(token);
  assert.equal(r.status, 200, r.body);
  assert.equal((await list(signJwt(claims(), keys.rsa1))).status, 200, 'the old key still works while published');
});
