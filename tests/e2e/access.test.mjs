// E2E (issue 28): Cloudflare Access in front of mcp-sieve — the Worker under wrangler dev, or the
// native server with SIEVE_TARGET=native. With `auth.cloudflareAccess`, the `Cf-Access-Jwt-Assertion`
// header is checked against the team's keys (`<team>/cdn-cgi/access/certs`, here a loopback server
// publishing them in Access's format) and its email and groups become the principal and roles.
// Access itself cannot run locally; its assertions are signed here as Access signs them (RS256).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, startNative, startWorker } from './harness.mjs';
import { newKey, signJwt } from './oauth-server.mjs';

const native = process.env.SIEVE_TARGET === 'native';
const AUD = '4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2';
const key = newKey('RS256', 'access-1');

let team;
let teamUrl;
let server;
let tmp;

before(async () => {
  const teamPort = await freePort();
  teamUrl = `http://127.0.0.1:${teamPort}`;
  team = http.createServer((req, res) => {
    if (req.url !== '/cdn-cgi/access/certs') { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ keys: [key.publicJwk], public_cert: { kid: key.kid, cert: '' }, public_certs: [] }));
  });
  await new Promise((resolve) => team.listen(teamPort, '127.0.0.1', resolve));
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.auth = { cloudflareAccess: { teamDomain: teamUrl, audience: AUD } };
  doc.views.engineering = { filter: { groups: ['code'] }, principals: ['role:eng'] };
  doc.policy = { rules: [{ when: { principal: '*@contractor.example' }, hide: { tags: ['destructive'] } }] };
  const text = JSON.stringify(doc);
  const port = await freePort();
  if (native) {
    tmp = mkdtempSync(path.join(tmpdir(), 'sieve-access-'));
    writeFileSync(path.join(tmp, 'catalog.json'), text);
    server = await startNative({ port, extraArgs: ['--catalog', path.join(tmp, 'catalog.json')] });
  } else {
    server = await startWorker({ port, extraArgs: ['--var', `MCP_SIEVE_CONFIG:${text}`] });
  }
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  team?.closeAllConnections();
  await new Promise((resolve) => (team ? team.close(resolve) : resolve()));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const now = () => Math.floor(Date.now() / 1000);
/** An assertion as Access issues it (aud is an array, the issuer is the team's URL). */
const assertion = (extra = {}, k = key) => signJwt({ aud: [AUD], email: 'ann@example.com', exp: now() + 300, iat: now(),
  nbf: now(), iss: teamUrl, type: 'app', identity_nonce: 'n', sub: '7335d417-61da-459d-899c-0a01c76a2f94', country: 'NL',
  groups: ['eng'], ...extra }, k, { typ: 'JWT' });

async function list(headers, url = server.url) {
  const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list', ...headers },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }) });
  const text = await r.text();
  let names = [];
  try { names = JSON.parse(text).result?.tools?.map((t) => t.name) ?? []; } catch { /* not JSON */ }
  return { status: r.status, text, names };
}

test('an Access assertion names the principal (email) and roles (groups)', async () => {
  const ann = await list({ 'Cf-Access-Jwt-Assertion': assertion() });
  assert.equal(ann.status, 200, ann.text);
  assert.ok(ann.names.includes('delete_message'));
  const eng = await list({ 'Cf-Access-Jwt-Assertion': assertion() }, `${server.url}/engineering`);
  assert.equal(eng.status, 200, eng.text);
  assert.ok(eng.names.length > 0 && !eng.names.includes('echo'), eng.names.join(', '));
  const sales = await list({ 'Cf-Access-Jwt-Assertion': assertion({ groups: ['sales'] }) }, `${server.url}/engineering`);
  assert.equal(sales.status, 403, sales.text);
  const contractor = await list({ 'Cf-Access-Jwt-Assertion': assertion({ email: 'cy@contractor.example' }) });
  assert.equal(contractor.status, 200);
  assert.ok(!contractor.names.includes('delete_message'), 'the policy rule by principal applies to Access emails');
});

test('assertions Access would not have issued are refused with 401', async () => {
  const other = newKey('RS256', 'access-1');
  for (const [what, headers, why] of [
    ['no assertion', {}, /Cf-Access-Jwt-Assertion/],
    ['another application', { 'Cf-Access-Jwt-Assertion': assertion({ aud: ['someone-else'] }) }, /audience/],
    ['another team', { 'Cf-Access-Jwt-Assertion': assertion({ iss: 'https://evil.cloudflareaccess.com' }) }, /issuer/],
    ['expired', { 'Cf-Access-Jwt-Assertion': assertion({ exp: now() - 3600 }) }, /expired/],
    ['signed by another key', { 'Cf-Access-Jwt-Assertion': assertion({}, other) }, /signature/],
    ['no email', { 'Cf-Access-Jwt-Assertion': assertion({ email: undefined }) }, /principal/],
    ['a bearer token instead', { Authorization: `Bearer ${assertion()}` }, /not a token this server knows/],
  ]) {
    const r = await list(headers);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.match(r.text, why, what);
  }
});
