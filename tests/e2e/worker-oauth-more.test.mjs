// E2E (Worker, wrangler dev): per-principal upstream OAuth, the rest of the flow — sign-out and
// step-up — with the same real parts as worker-oauth.test.mjs (./oauth-helpers.mjs: an
// `oidc-provider` authorization server, an official-SDK MCP server checking each JWT, the test as
// the browser; two principals with static tokens through the official SDK client).
// - Sign-out: /mcp-sieve/oauth/logout?upstream=a (behind the same authentication as start)
//   deletes alice's tokens for `a` in her object; her next call is -32042 again and sends
//   nothing; bob's still works; signing in again works.
// - Step-up: the tool `admin` needs the scope `admin`, and the server answers a token without it
//   403 insufficient_scope. The call gets -32042 whose start URL asks the authorization server for
//   `mcp admin` (the union); after that sign-in the call succeeds.
// - Sessions: at an upstream that keeps sessions, the GET stream and the DELETE of a principal's
//   upstream session carry that principal's token, as its POSTs do.
// - Stateless callers: alice's and bob's 2026-07-28 calls without a session, at an upstream that
//   keeps sessions (spoken to in 2025-11-25), each run in an upstream session of their own, closed
//   (DELETE) after it: no upstream session ever carries two principals' tokens.
// - Status for nobody: a Worker that does not tell its callers apart answers an anonymous
//   GET /mcp-sieve/upstreams for an upstream nobody has listed with `needs-login` and where to
//   sign in (a refresh for nobody leaves the upstream due, so it is not `down`), sending nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, sdkStateless } from './harness.mjs';
import { startAuthServer, startMcp, browse, startOAuthWorker } from './oauth-helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TOKENS = { alice: 'tok-alice-0123456789', bob: 'tok-bob-0123456789' };

/**
 * A Worker fronting upstream `a` (signed in per principal; `admin` needs the scope `admin`);
 * with `anonymous`, one that does not tell its callers apart (no MCP_SIEVE_TOKENS); with
 * `sessions`, `a` keeps sessions (a GET stream and a DELETE each; `requests` records them).
 */
async function setUp(t, { anonymous = false, sessions = false, ttl = 300, tokenRequests = [] } = {}) {
  const [asPort, aPort] = [await freePort(), await freePort()];
  const resource = `http://127.0.0.1:${aPort}/mcp`;
  const issuer = await startAuthServer(t, { port: asPort, resources: [resource], ttl, scopes: ['mcp', 'admin'], tokenRequests });
  const [seen, requests] = [[], []];
  await startMcp(t, { name: 'a', port: aPort, resource, issuer, seen, adminScope: 'admin', sessions, requests });
  const doc = { tools: [], upstreams: { a: { url: resource, auth: 'oauth' } } };
  const { worker, base, as, connect } = await startOAuthWorker(t, doc, { tokens: anonymous ? undefined : TOKENS });
  /** Signs `who` in as `login` from the start URL `startUrl`; the authorization request's URL. */
  const signIn = async (who, login, startUrl = `${base}/mcp-sieve/oauth/start?upstream=a`) => {
    const start = await fetch(startUrl, { headers: as(who), redirect: 'manual' });
    assert.equal(start.status, 302, await start.text());
    const to = new URL(start.headers.get('location'));
    const page = await browse(to.href, login, `${base}/mcp-sieve/oauth/callback`, () => worker.output());
    assert.equal(page.status, 200, await page.text());
    return to;
  };
  const call = async (client, name) => (await client.callTool({ name, arguments: {} })).content[0].text;
  /** The call's -32042 error, checked: its start URL. */
  const signInNeeded = async (client, name) => {
    const e = await client.callTool({ name, arguments: {} }).then(() => null, (err) => err);
    assert.ok(e, `${name} was refused`);
    assert.equal(e.code, -32042, e.message);
    const url = e.data?.elicitations?.[0]?.url;
    assert.equal(url, `${base}/mcp-sieve/oauth/start?upstream=a`, e.message);
    return { url, message: e.message };
  };
  /** `a`'s tools as `client` sees them, waiting for the lists (fetched with a signed-in token). */
  const waitForTools = async (client, tool) => {
    let names = [];
    for (let i = 0; i < 40 && !names.includes(tool); i += 1) {
      names = (await client.listTools()).tools.map((x) => x.name);
      if (!names.includes(tool)) await sleep(500);
    }
    assert.ok(names.includes(tool), `${tool} is listed: ${names}`);
  };
  /** alice and bob signed in (as alice-user, bob-user), each calling with their own token. */
  const bothSignedIn = async () => {
    await signIn('alice', 'alice-user');
    await signIn('bob', 'bob-user');
    const [alice, bob] = [await connect('alice'), await connect('bob')];
    await waitForTools(alice, 'a_whoami');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');
    assert.equal(await call(bob, 'a_whoami'), 'bob-user');
    return [alice, bob];
  };
  return { base, as, connect, signIn, call, signInNeeded, waitForTools, bothSignedIn, seen, requests, worker, issuer };
}

if (process.env.SIEVE_TARGET === 'native') {
  test('per-principal upstream OAuth: sign-out, step-up (Worker only)', { skip: 'the Worker\'s flow' }, () => {});
} else {
  test('sign-out deletes one principal\'s tokens for one upstream; the next call asks for a sign-in and sends nothing', { timeout: 180_000 }, async (t) => {
    const { base, as, signIn, call, signInNeeded, bothSignedIn, seen } = await setUp(t);
    const logout = `${base}/mcp-sieve/oauth/logout?upstream=a`;
    // Behind the same authentication as start; an unknown upstream is not found.
    assert.equal((await fetch(logout, { method: 'POST' })).status, 401);
    assert.equal((await fetch(`${base}/mcp-sieve/oauth/logout?upstream=zz`, { headers: as('alice') })).status, 404);

    const [alice, bob] = await bothSignedIn();

    // alice signs out (POST): her call asks for a sign-in again, and nothing is sent for it.
    const out = await fetch(logout, { method: 'POST', headers: as('alice') });
    const text = await out.text();
    assert.equal(out.status, 200, text);
    assert.match(text, /Signed out of upstream/);
    assert.doesNotMatch(text, /was not told/, 'the refresh token was revoked at the authorization server');
    const before = seen.length;
    await signInNeeded(alice, 'a_whoami');
    assert.equal(seen.length, before, 'alice\'s call after her sign-out was not sent');
    // bob is unaffected.
    assert.equal(await call(bob, 'a_whoami'), 'bob-user');
    // Signing out again (GET) finds nothing kept.
    const again = await fetch(logout, { headers: as('alice') });
    assert.equal(again.status, 200);
    assert.match(await again.text(), /not signed in/);
    // She signs in again: her calls work.
    await signIn('alice', 'alice-user');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');
  });

  // Issue 58 item 5, the Worker's side: a refused refresh token is deleted with the principal's
  // tokens (not sent again); her calls ask for a sign-in, and a new sign-in serves again.
  test('a refresh token refused with invalid_grant is sent once: the principal\'s tokens are deleted and her calls ask for a sign-in', { timeout: 180_000 }, async (t) => {
    const tokenRequests = [];
    const { signIn, call, signInNeeded, connect, waitForTools, issuer } = await setUp(t, { ttl: 3, tokenRequests });
    await signIn('alice', 'alice-user');
    const alice = await connect('alice');
    await waitForTools(alice, 'a_whoami');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');
    const issued = tokenRequests.filter((r) => r.issuedRefreshToken).at(-1);
    assert.ok(issued, `a refresh token was issued: ${JSON.stringify(tokenRequests.map((r) => r.grant))}`);
    const revoke = await fetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: issued.issuedRefreshToken, token_type_hint: 'refresh_token', client_id: issued.clientId }),
    });
    assert.equal(revoke.status, 200, await revoke.text());
    await sleep(3500); // her access token expired
    const refreshes = () => tokenRequests.filter((r) => r.grant === 'refresh_token');
    const before = refreshes().length;
    await signInNeeded(alice, 'a_whoami');
    await signInNeeded(alice, 'a_whoami');
    await signInNeeded(alice, 'a_whoami');
    const refused = refreshes().slice(before);
    assert.deepEqual(refused.map((r) => r.error), ['invalid_grant'], 'the refused refresh token was sent once');
    await signIn('alice', 'alice-user');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');
  });

  test('step-up: 403 insufficient_scope asks the principal to sign in for the wider scopes; then the call succeeds', { timeout: 180_000 }, async (t) => {
    const { connect, signIn, call, signInNeeded, waitForTools } = await setUp(t);
    const first = await signIn('alice', 'alice-user');
    assert.equal(first.searchParams.get('scope'), 'mcp', 'the first sign-in asks for the challenge\'s scope');
    const [alice, bob] = [await connect('alice'), await connect('bob')];
    await waitForTools(alice, 'a_admin');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');

    // `admin` needs the scope admin: -32042 with the start URL, naming the scopes.
    const { url, message } = await signInNeeded(alice, 'a_admin');
    assert.match(message, /mcp admin/);
    const wider = await signIn('alice', 'alice-user', url);
    assert.deepEqual(wider.searchParams.get('scope').split(' ').sort(), ['admin', 'mcp'], 'the sign-in asks for the wider scopes');
    assert.equal(await call(alice, 'a_admin'), 'admin:alice-user', 'the call succeeds with the stepped-up token');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');

    // bob's sign-in is his own: he has not signed in at all.
    await signInNeeded(bob, 'a_admin');
  });

  test('an anonymous status request says an upstream nobody has listed needs a sign-in, and sends no token', { timeout: 120_000 }, async (t) => {
    const { base, seen } = await setUp(t, { anonymous: true });
    for (let i = 0; i < 2; i += 1) {
      const res = await fetch(`${base}/mcp-sieve/upstreams`);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const [a] = JSON.parse(text).upstreams;
      assert.equal(a.state, 'needs-login', text);
      assert.equal(a.auth, 'oauth', text);
      assert.equal(a.signIn, `${base}/mcp-sieve/oauth/start?upstream=a`, text);
      assert.match(a.error, /needs you to sign in/, text);
    }
    assert.equal(seen.filter(Boolean).length, 0, 'no token was sent');
  });

  test('the GET stream and the DELETE of a principal\'s upstream session carry that principal\'s token', { timeout: 180_000 }, async (t) => {
    const { call, bothSignedIn, requests, worker } = await setUp(t, { sessions: true });
    const [alice, bob] = await bothSignedIn();
    const subject = (r) => r.authorization && JSON.parse(Buffer.from(r.authorization.split(' ')[1].split('.')[1], 'base64url')).sub;
    const why = () => `${JSON.stringify(requests.map((r) => [r.method, r.session, subject(r)]))}\n${worker.output()}`;
    // Whose each upstream session is: the subject of the POSTs made in it.
    const owner = (session) => new Set(requests.filter((r) => r.session === session && r.method === 'POST').map(subject));
    const of = (method) => requests.filter((r) => r.method === method && r.url.startsWith('/mcp'));
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    for (let i = 0; i < 100 && of('GET').length < 2; i += 1) await sleep(100);
    assert.ok(of('GET').length >= 2, `each session's upstream session has its GET stream: ${why()}`);
    for (const g of of('GET')) {
      assert.deepEqual([...owner(g.session)], [subject(g)], `a GET carries the token its session's POSTs carry: ${why()}`);
    }
    await alice.transport.terminateSession();
    for (let i = 0; i < 100 && of('DELETE').length < 1; i += 1) await sleep(100);
    assert.ok(of('DELETE').length >= 1, `her upstream session was closed: ${why()}`);
    for (const d of of('DELETE')) {
      assert.equal(subject(d), 'alice-user', `the DELETE carries alice's token: ${why()}`);
      assert.deepEqual([...owner(d.session)], ['alice-user'], 'of her own session');
    }
    assert.equal(await call(bob, 'a_whoami'), 'bob-user');
  });

  test('stateless calls of two principals never share an upstream session', { timeout: 180_000 }, async (t) => {
    const { as, base, bothSignedIn, requests, worker } = await setUp(t, { sessions: true });
    await bothSignedIn();
    const subject = (r) => r.authorization && JSON.parse(Buffer.from(r.authorization.split(' ')[1].split('.')[1], 'base64url')).sub;
    const why = () => `${JSON.stringify(requests.map((r) => [r.method, r.session, subject(r)]))}\n${worker.output()}`;
    const whoami = async (who) => {
      const r = await sdkStateless(`${base}/mcp`, 'tools/call', { name: 'a_whoami', arguments: {} }, { headers: as(who) });
      assert.ok(r.result, `${who}'s stateless call: ${JSON.stringify(r)}`);
      return r.result.content[0].text;
    };
    const first = requests.length;
    // One after another (a session the first opened would be there for the next), then at once.
    for (const who of ['alice', 'bob', 'alice', 'bob']) assert.equal(await whoami(who), `${who}-user`, why());
    const both = await Promise.all(['alice', 'bob', 'alice', 'bob'].map(whoami));
    assert.deepEqual(both, ['alice-user', 'bob-user', 'alice-user', 'bob-user']);
    const used = requests.slice(first).filter((r) => r.session);
    assert.ok(used.length > 0, `the upstream keeps sessions: ${why()}`);
    const before = new Set(requests.slice(0, first).map((r) => r.session));
    const opened = [...new Set(used.map((r) => r.session))].filter((id) => !before.has(id));
    assert.ok(opened.length >= 8, `each stateless call opened its own upstream session: ${why()}`);
    // Each is closed after its call, with its principal's token.
    const closed = (id) => requests.some((r) => r.method === 'DELETE' && r.session === id);
    for (let i = 0; i < 100 && !opened.every(closed); i += 1) await new Promise((r) => setTimeout(r, 100));
    assert.ok(opened.every(closed), `each was closed: ${why()}`);
    for (const id of new Set(used.map((r) => r.session))) {
      const subjects = new Set(requests.filter((r) => r.session === id).map(subject));
      assert.equal(subjects.size, 1, `upstream session ${id} carried the tokens of ${[...subjects]}: ${why()}`);
    }
  });
}
