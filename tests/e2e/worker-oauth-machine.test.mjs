// E2E (Worker, wrangler dev): an upstream the gateway signs in to itself — `"auth": {"type":
// "oauth", "grant": "client_credentials", "clientId", "clientSecret": "${SECRET}"}` — with the
// real parts of ./oauth-helpers.mjs: an `oidc-provider` authorization server (client credentials,
// resource indicators, JWT access tokens of a few seconds) and an MCP server of the official SDK
// that keeps sessions (a GET stream and a DELETE per session) and checks every request's token
// with `jose`, recording each request's method and Authorization. Two principals (static tokens)
// call through the official SDK client without anyone signing in:
// - the upstream's tools are listed and callable for both, its status says `up` and how it is
//   signed in to; it saw the gateway's token only (audience = its URL, client `svc`, no
//   person's subject), never a principal's;
// - the GET stream and the DELETE of each upstream session carry that token too;
// - an expired token is taken again (a new one reaches the upstream);
// - step-up: a tool that needs the scope `admin` (403 insufficient_scope) is called with a token
//   asked again with the wider scopes;
// - the token is sealed at rest in the gateway's Durable Object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './harness.mjs';
import { startAuthServer, startMcp, assertSealed, startOAuthWorker } from './oauth-helpers.mjs';

const TTL = 5; // access tokens live 5 s: one is taken again within the test
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TOKENS = { alice: 'tok-alice-0123456789', bob: 'tok-bob-0123456789' };
const claims = (h) => JSON.parse(Buffer.from(h.split(' ')[1].split('.')[1], 'base64url'));

/** Waits until `ok()` holds (polling), else fails with `why()`. */
async function until(ok, why, ms = 15_000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) assert.fail(why());
    await sleep(100);
  }
}

if (process.env.SIEVE_TARGET === 'native') {
  test('client_credentials upstream OAuth (Worker only)', { skip: 'the Worker\'s flow' }, () => {});
} else {
  test('a client_credentials upstream serves every principal with the gateway\'s own token, on every request of its sessions', { timeout: 180_000 }, async (t) => {
    const [asPort, mPort] = [await freePort(), await freePort()];
    const resource = `http://127.0.0.1:${mPort}/mcp`;
    const issuer = await startAuthServer(t, { port: asPort, resources: [resource], ttl: TTL, scopes: ['mcp', 'admin'], svcScope: 'mcp admin' });
    const requests = [];
    await startMcp(t, { name: 'm', port: mPort, resource, issuer, adminScope: 'admin', sessions: true, requests });

    const doc = {
      tools: [],
      upstreams: { m: { url: resource, auth: { type: 'oauth', grant: 'client_credentials', clientId: 'svc', clientSecret: '${SVC_SECRET}', scopes: ['mcp'] } } },
    };
    const { worker, state, base, as, connect } = await startOAuthWorker(t, doc, { tokens: TOKENS, vars: { SVC_SECRET: 'svc-secret-1234567890' } });
    const call = async (client, name) => {
      const r = await client.callTool({ name, arguments: {} });
      assert.ok(!r.isError, JSON.stringify(r));
      return r.content[0].text;
    };
    // What reached the upstream's MCP endpoint (not its metadata) with a token.
    const sent = () => requests.filter((r) => r.url.startsWith('/mcp') && r.authorization);
    const why = () => `${JSON.stringify(requests.map((r) => [r.method, r.session, r.authorization?.slice(0, 20)]))}\n${worker.output()}`;

    // Nobody signs in: both principals see the upstream's tools and call them, as the gateway.
    const [alice, bob] = [await connect('alice'), await connect('bob')];
    for (const client of [alice, bob]) {
      const names = (await client.listTools()).tools.map((x) => x.name);
      assert.ok(names.includes('m_whoami'), `m's tools are listed without a sign-in: ${names}\n${worker.output()}`);
    }
    assert.equal(await call(alice, 'm_whoami'), 'svc');
    assert.equal(await call(bob, 'm_whoami'), 'svc');
    // Its status says how it is signed in to, and that it is up.
    const status = await (await fetch(`${base}/mcp-sieve/upstreams`, { headers: as('bob') })).json();
    assert.deepEqual(
      [status.upstreams[0].state, status.upstreams[0].auth, status.upstreams[0].grant, status.upstreams[0].signIn],
      ['up', 'oauth', 'client_credentials', undefined],
      JSON.stringify(status),
    );

    // Every token the upstream got is the gateway's: for its URL, of the client svc, nobody's.
    assert.ok(sent().length > 0, why());
    for (const r of sent()) {
      assert.ok(!Object.values(TOKENS).some((tok) => r.authorization.includes(tok)), 'no principal\'s token went upstream');
      const c = claims(r.authorization);
      assert.equal(c.aud, resource, 'the token\'s audience is the upstream');
      assert.equal(c.client_id, 'svc');
      assert.ok([undefined, 'svc'].includes(c.sub), `a token of the client, of no person: ${c.sub}`);
    }
    // Only the unauthenticated probe (and no request of a session) went without one.
    const bare = requests.filter((r) => r.url.startsWith('/mcp') && !r.authorization);
    assert.ok(bare.every((r) => r.method === 'POST' && !r.session), `only the probe goes without a token: ${why()}`);

    // The upstream sessions of the principals' sessions: their GET streams carry the token.
    await until(() => sent().some((r) => r.method === 'GET'), () => `a GET stream was opened with the token: ${why()}`);
    const gets = requests.filter((r) => r.method === 'GET' && r.url.startsWith('/mcp'));
    assert.ok(gets.every((r) => r.authorization && claims(r.authorization).client_id === 'svc'), `every GET carries the gateway's token: ${why()}`);

    // alice ends her session: the Worker's DELETE of her upstream session carries it too.
    const opened = new Set(sent().filter((r) => r.session).map((r) => r.session));
    await alice.transport.terminateSession();
    await until(() => requests.some((r) => r.method === 'DELETE'), () => `her upstream session was closed: ${why()}`);
    const deletes = requests.filter((r) => r.method === 'DELETE');
    for (const d of deletes) {
      assert.ok(opened.has(d.session), `the DELETE names a session the gateway opened: ${why()}`);
      assert.ok(d.authorization && claims(d.authorization).client_id === 'svc', `the DELETE carries the gateway's token: ${why()}`);
    }
    assert.equal(await call(bob, 'm_whoami'), 'svc', 'bob goes on');

    // The token expires: the gateway's object takes a new one, nobody signs in.
    const before = new Set(sent().map((r) => r.authorization));
    await sleep((TTL + 1) * 1000);
    assert.equal(await call(bob, 'm_whoami'), 'svc');
    const fresh = sent().filter((r) => !before.has(r.authorization));
    assert.ok(fresh.length > 0, `a new token reached the upstream after the first expired: ${why()}`);
    assert.ok(fresh.every((r) => claims(r.authorization).exp > Math.max(...[...before].map((h) => claims(h).exp)) - 1));

    // Step-up: `admin` needs the scope admin (403 insufficient_scope); the gateway asks again
    // with the wider scopes, and the call succeeds.
    assert.equal(await call(bob, 'm_admin'), 'admin:svc');
    const wider = sent().filter((r) => String(claims(r.authorization).scope).split(' ').includes('admin'));
    assert.ok(wider.length > 0, `a token with the scope admin reached the upstream: ${why()}`);
    assert.deepEqual(String(claims(wider[0].authorization).scope).split(' ').sort(), ['admin', 'mcp'], 'the wider token keeps the scope it had');
    assert.equal(await call(bob, 'm_whoami'), 'svc');

    // At rest, the gateway's tokens are sealed: none is in the Worker's local state.
    assertSealed(state, sent().map((r) => r.authorization));
  });

  // Issue 58 item 6, the Worker's side: a token endpoint that hangs left the call waiting (the
  // sign-in's fetches had no deadline); now each takes the upstream's
  // limits.signInTimeoutSeconds at most (by default half of a short callTimeoutSeconds: 2 s
  // here) and the error names the token endpoint.
  test('a hung token endpoint is named within the sign-in\'s own deadline, shorter than the call\'s', { timeout: 120_000 }, async (t) => {
    const [asPort, mPort] = [await freePort(), await freePort()];
    const resource = `http://127.0.0.1:${mPort}/mcp`;
    const hang = { token: false };
    const issuer = await startAuthServer(t, { port: asPort, resources: [resource], ttl: 3, hang });
    await startMcp(t, { name: 'm', port: mPort, resource, issuer });
    const doc = {
      tools: [],
      upstreams: {
        m: {
          url: resource,
          auth: { type: 'oauth', grant: 'client_credentials', clientId: 'svc', clientSecret: '${SVC_SECRET}', scopes: ['mcp'] },
          limits: { callTimeoutSeconds: 4 },
        },
      },
    };
    const { worker, connect } = await startOAuthWorker(t, doc, { tokens: TOKENS, vars: { SVC_SECRET: 'svc-secret-1234567890' } });
    const bob = await connect('bob');
    const call = () => bob.callTool({ name: 'm_whoami', arguments: {} });
    assert.equal((await call()).content[0].text, 'svc', worker.output());

    hang.token = true;
    await sleep(3500); // the token is due: the next call asks the token endpoint, which hangs
    const started = Date.now();
    const failed = await call().then((r) => ({ result: r }), (e) => e);
    const took = Date.now() - started;
    assert.equal(failed.code, -32603, `${JSON.stringify(failed)}\n${worker.output()}`);
    const where = `127.0.0.1:${asPort}`.replaceAll('.', '\\.');
    assert.match(failed.message, new RegExp(`token endpoint \\(${where}\\) did not answer within 2 s \\(limits\\.signInTimeoutSeconds\\)`), failed.message);
    assert.doesNotMatch(failed.message, /callTimeoutSeconds/, failed.message);
    assert.ok(took >= 1800 && took < 3900, `it failed after ${took} ms, not at the sign-in's 2 s deadline`);

    hang.token = false;
    assert.equal((await call()).content[0].text, 'svc', worker.output());
  });
}
