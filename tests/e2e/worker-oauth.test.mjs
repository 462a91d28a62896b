// E2E (Worker, wrangler dev): per-principal upstream OAuth. The Worker fronts an MCP server (the
// official SDK's, checking each JWT access token with `jose`) whose authorization server is a real
// `oidc-provider` (dynamic client registration, resource indicators, refresh tokens, PKCE
// required) — the same parts as the native test, from ./oauth-helpers.mjs. Two principals (static
// tokens) call through the official SDK client: alice signs in at /mcp-sieve/oauth/start (the
// test is her browser); her calls reach the upstream with her token, bob's still say where to
// sign in (MCP's -32042 URL elicitation error) and carry no token at all (a refresh of the lists
// his request finds due takes nothing away from alice); bob signs in as
// another user and the upstream sees his subject; an expired token is refreshed in the Durable
// Object; what the object stores does not contain the tokens in clear.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './harness.mjs';
import { startAuthServer, startMcp, browse, assertSealed, startOAuthWorker } from './oauth-helpers.mjs';

const TTL = 6; // access tokens live 6 s: a refresh is seen within the test
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TOKENS = { alice: 'tok-alice-0123456789', bob: 'tok-bob-0123456789' };
const subjectOf = (h) => JSON.parse(Buffer.from(h.split(' ')[1].split('.')[1], 'base64url')).sub;

if (process.env.SIEVE_TARGET === 'native') {
  test('per-principal upstream OAuth (Worker only)', { skip: 'the Worker\'s flow' }, () => {});
} else {
  test('each principal signs in to an OAuth upstream once; nobody else\'s token is ever sent', { timeout: 180_000 }, async (t) => {
    const [asPort, aPort] = [await freePort(), await freePort()];
    const resource = `http://127.0.0.1:${aPort}/mcp`;
    const issuer = await startAuthServer(t, { port: asPort, resources: [resource], ttl: TTL });
    const seen = [];
    await startMcp(t, { name: 'a', port: aPort, resource, issuer, seen });

    const doc = { tools: [], upstreams: { a: { url: resource, auth: 'oauth', refreshSeconds: 2 } } };
    const { worker, state, base, as, connect } = await startOAuthWorker(t, doc, { tokens: TOKENS });

    /** Signs `who` in as the authorization server's user `login`; the callback page's text. */
    async function signIn(who, login) {
      const start = await fetch(`${base}/mcp-sieve/oauth/start?upstream=a`, { headers: as(who), redirect: 'manual' });
      assert.equal(start.status, 302, await start.text());
      const to = new URL(start.headers.get('location'));
      assert.equal(to.origin, issuer);
      assert.equal(to.searchParams.get('resource'), resource, 'the authorization request names the resource');
      assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(to.searchParams.get('redirect_uri'), `${base}/mcp-sieve/oauth/callback`);
      const page = await browse(to.href, login, `${base}/mcp-sieve/oauth/callback`, () => worker.output());
      const text = await page.text();
      assert.equal(page.status, 200, text);
      return { text, state: to.searchParams.get('state') };
    }
    const call = async (client, name) => {
      const r = await client.callTool({ name, arguments: {} });
      return r.content[0].text;
    };

    // Nobody has signed in: the upstream's lists could not be fetched, and its status says where
    // to sign in. Starting a sign-in needs the caller's credentials.
    const status = await (await fetch(`${base}/mcp-sieve/upstreams`, { headers: as('alice') })).text();
    assert.match(status, /mcp-sieve\/oauth\/start\?upstream=a/, status);
    assert.equal((await fetch(`${base}/mcp-sieve/oauth/start?upstream=a`, { redirect: 'manual' })).status, 401);
    const unknown = await fetch(`${base}/mcp-sieve/oauth/start?upstream=zz`, { headers: as('alice'), redirect: 'manual' });
    assert.equal(unknown.status, 404);
    assert.equal(seen.filter(Boolean).length, 0, 'no token was sent before anyone signed in');

    // alice signs in. A callback with a forged state (or hers replayed) is refused.
    const forged = await fetch(`${base}/mcp-sieve/oauth/callback?code=x&state=${Buffer.from('alice').toString('hex')}.forged`);
    assert.equal(forged.status, 400);
    const first = await signIn('alice', 'alice-user');
    assert.match(first.text, /Signed in to upstream &quot;a&quot;|Signed in to upstream "a"/);
    const replay = await fetch(`${base}/mcp-sieve/oauth/callback?code=x&state=${first.state}`);
    assert.equal(replay.status, 400, 'a state is used once');

    const alice = await connect('alice');
    // The upstream's lists come with her next requests (the failed refresh is retried with backoff).
    let names = [];
    for (let i = 0; i < 40 && !names.includes('a_whoami'); i += 1) {
      names = (await alice.listTools()).tools.map((x) => x.name);
      if (!names.includes('a_whoami')) await sleep(500);
    }
    assert.ok(names.includes('a_whoami'), `a's tools are listed once alice signed in: ${names}`);
    assert.equal(await call(alice, 'a_whoami'), 'alice-user', 'alice\'s token reached the upstream');

    // bob has not signed in: his call says where to, and reaches the upstream with no token.
    const bob = await connect('bob');
    const before = seen.length;
    await assert.rejects(call(bob, 'a_whoami'), (e) => {
      assert.equal(e.code, -32042, e.message);
      assert.match(e.message, new RegExp(`${base.replace(/[.]/g, '\\.')}/mcp-sieve/oauth/start\\?upstream=a`));
      return true;
    });
    assert.equal(seen.length, before, 'bob\'s call was not sent (not with alice\'s token, not with none)');

    // The lists are due again (refreshSeconds 2) and bob's request finds them due: a refresh for
    // someone who has not signed in says nothing about the upstream, so the tools alice's token
    // listed stay for everyone, and nothing was sent for bob.
    await sleep(2_500);
    const bobSees = (await bob.listTools()).tools.map((x) => x.name);
    assert.ok(bobSees.includes('a_whoami'), `bob's due refresh did not take a's tools out: ${bobSees}`);
    assert.equal(seen.length, before, 'bob\'s refresh sent nothing');
    assert.ok((await alice.listTools()).tools.some((x) => x.name === 'a_whoami'), 'alice still sees a\'s tools');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');

    // bob signs in as another user: the upstream sees his subject, and alice's stays hers.
    await signIn('bob', 'bob-user');
    assert.equal(await call(bob, 'a_whoami'), 'bob-user');
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');

    // Access tokens expire: refreshed in the Durable Object, nobody signs in again.
    const tokensBefore = new Set(seen.filter(Boolean));
    await sleep((TTL + 1) * 1000);
    assert.equal(await call(alice, 'a_whoami'), 'alice-user');
    assert.equal(await call(bob, 'a_whoami'), 'bob-user');
    const sent = seen.filter(Boolean);
    assert.ok(sent.some((h) => !tokensBefore.has(h)), 'a refreshed token reached the upstream');
    // Every token the upstream got was alice's or bob's, each for its own principal's calls.
    assert.deepEqual([...new Set(sent.map(subjectOf))].sort(), ['alice-user', 'bob-user']);

    // At rest, the tokens are encrypted: none of them is in the Worker's local state.
    assertSealed(state, sent);
  });
}
