// The native server as an OAuth resource server whose issuer publishes its keys over https
// (native/src/auth.rs through native/src/http/tls.rs's connector): a CA and a certificate made with
// the openssl CLI (tls-helpers.mjs), the JWKS served by node:https on 127.0.0.1. With the CA in
// SSL_CERT_FILE a token under the published key lists; without it the fetch fails, the token is
// refused (401) and the log says why in words. Native only (SIEVE_TARGET=native).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import https from 'node:https';
import { freePort, startNative } from './harness.mjs';
import { makeCa, sign } from './tls-helpers.mjs';
import { newKey, signJwt } from './oauth-server.mjs';

const native = process.env.SIEVE_TARGET === 'native';
const key = newKey('ES256', 'es-https');

let dir;
let jwks;
let issuer;
const hits = [];

before(async () => {
  if (!native) return;
  dir = mkdtempSync(path.join(tmpdir(), 'sieve-oauth-https-'));
  makeCa(dir);
  sign(dir, 'issuer');
  jwks = https.createServer({ cert: readFileSync(path.join(dir, 'issuer.pem')), key: readFileSync(path.join(dir, 'issuer.key')) }, (req, res) => {
    hits.push(req.url);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.publicJwk] }));
  });
  await new Promise((r) => jwks.listen(0, '127.0.0.1', r));
  issuer = `https://127.0.0.1:${jwks.address().port}`;
});

after(() => {
  jwks?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A native server whose auth fetches `issuer`'s keys over https, with `env` added. */
async function serverWith(env) {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.auth = { resource, issuer, jwksUrl: `${issuer}/jwks`, requiredScopes: ['mcp'] };
  const catalog = path.join(dir, `catalog-${port}.json`);
  writeFileSync(catalog, JSON.stringify(doc));
  // NO_PROXY=*: the fetch goes straight to the issuer whatever this machine's proxy variables say.
  const server = await startNative({ port, extraArgs: ['--catalog', catalog], env: { NO_PROXY: '*', ...env } });
  return { server, resource };
}

async function list(url, token) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/list', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
  });
  return { status: r.status, www: r.headers.get('www-authenticate'), body: await r.text() };
}

const now = () => Math.floor(Date.now() / 1000);
const tokenFor = (aud) => signJwt({ iss: issuer, aud, sub: 'ann', scope: 'mcp', iat: now(), exp: now() + 300 }, key);

test('keys fetched over https from an issuer the CA in SSL_CERT_FILE signed: the token lists', { skip: !native && 'native only', timeout: 60_000 }, async (t) => {
  const { server, resource } = await serverWith({ SSL_CERT_FILE: path.join(dir, 'ca.pem') });
  t.after(() => server.stop());
  const before = hits.length;
  const r = await list(server.url, tokenFor(resource));
  assert.equal(r.status, 200, r.body);
  assert.ok(JSON.parse(r.body).result.tools.length > 0, r.body);
  assert.deepEqual(hits.slice(before), ['/jwks'], 'one fetch of the key set, over https');
});

test('an issuer whose CA is not trusted: its keys are not fetched, the token is refused and the log says why', { skip: !native && 'native only', timeout: 60_000 }, async (t) => {
  const empty = path.join(dir, 'no-such-ca.pem');
  writeFileSync(empty, '');
  const { server, resource } = await serverWith({ SSL_CERT_FILE: empty });
  t.after(() => server.stop());
  const before = hits.length;
  const r = await list(server.url, tokenFor(resource));
  assert.equal(r.status, 401, r.body);
  assert.match(r.www ?? '', /invalid_token/);
  assert.equal(hits.length, before, 'no request got past the TLS handshake');
  const log = server.output();
  assert.match(log, new RegExp(`cannot read the JWKS at ${issuer}/jwks: .*issuer is unknown`), log);
});
