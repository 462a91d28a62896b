// E2E (Worker, wrangler dev): the per-principal sign-in's checks of URLs and metadata (issue 58
// items 1, 3 and 4 on the Worker; oauth-client-checks.test.mjs is the native twin), against the
// hostile upstream and authorization server of ./oauth-hostile.mjs. Alice starts a sign-in at
// /mcp-sieve/oauth/start?upstream=a:
// - a token endpoint on a name that only looks local (`http://127.probe.as.test/token`) ends it;
// - a redirect without `iss` from a server whose metadata says it sends one is refused at the
//   callback, and its code is never exchanged (RFC 9207);
// - protected-resource metadata without `resource` ends it; a `resource_metadata` URL on another
//   origin is never fetched: the upstream's own well-known URL is read, and the log says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './harness.mjs';
import { startOAuthWorker } from './oauth-helpers.mjs';
import { serve, hostile, json } from './oauth-hostile.mjs';

const TOKENS = { alice: 'tok-alice-0123456789' };

if (process.env.SIEVE_TARGET === 'native') {
  test('the Worker sign-in\'s checks (Worker only)', { skip: 'the Worker\'s flow' }, () => {});
} else {
  test('the Worker\'s sign-in refuses what a hostile upstream or authorization server says', { timeout: 120_000 }, async (t) => {
    const ports = [];
    for (let i = 0; i < 9; i += 1) ports.push(await freePort());
    const [up1, as1, up3, as3, up4, as4, inside, up5, as5] = ports;
    const prm = (up, as) => ({ resource: `http://127.0.0.1:${up}/mcp`, authorization_servers: [`http://127.0.0.1:${as}`] });
    const lookalike = await hostile(t, { up: up1, as: as1, prm: prm(up1, as1), asMeta: { token_endpoint: 'http://127.probe.as.test/token' } });
    const iss = await hostile(t, { up: up3, as: as3, prm: prm(up3, as3), asMeta: { authorization_response_iss_parameter_supported: true } });
    const internal = await serve(t, inside, () => json(prm(up4, as4)));
    const foreign = await hostile(t, { up: up4, as: as4, prm: prm(up4, as4), challengeUrl: `http://127.0.0.1:${inside}/internal` });
    const bare = await hostile(t, { up: up5, as: as5, prm: { authorization_servers: [`http://127.0.0.1:${as5}`] } });
    const auth = { type: 'oauth', clientId: 'cli' };
    const doc = {
      tools: [],
      upstreams: {
        lookalike: { url: `http://127.0.0.1:${up1}/mcp`, auth },
        iss: { url: `http://127.0.0.1:${up3}/mcp`, auth },
        foreign: { url: `http://127.0.0.1:${up4}/mcp`, auth },
        bare: { url: `http://127.0.0.1:${up5}/mcp`, auth },
      },
    };
    const { worker, base, as } = await startOAuthWorker(t, doc, { tokens: TOKENS });
    const start = (name) => fetch(`${base}/mcp-sieve/oauth/start?upstream=${name}`, { headers: as('alice'), redirect: 'manual' });

    // Item 1: plain http to a name that looks local is not this machine.
    const r1 = await start('lookalike');
    const t1 = await r1.text();
    assert.equal(r1.status, 502, t1);
    assert.match(t1, /token_endpoint "http:\/\/127\.probe\.as\.test\/token" must be an https:\/\/ URL/, t1);
    assert.ok(!lookalike.server.some((r) => r.url === '/token'));

    // Item 3: the server says its redirects carry iss; one without it is refused, not exchanged.
    const r3 = await start('iss');
    assert.equal(r3.status, 302, await r3.text());
    const to = new URL(r3.headers.get('location'));
    assert.equal(to.origin, iss.issuer);
    const back = await fetch(`${to.searchParams.get('redirect_uri')}?code=stolen&state=${encodeURIComponent(to.searchParams.get('state'))}`);
    const tb = await back.text();
    assert.equal(back.status, 400, tb);
    assert.match(tb, /no iss/, tb);
    assert.ok(!iss.server.some((r) => r.url === '/token'), 'the code was not exchanged');

    // Item 4: resource_metadata on another origin is not fetched; the upstream's own is read.
    const r4 = await start('foreign');
    assert.equal(r4.status, 302, await r4.text());
    assert.deepEqual(internal, [], 'the other origin was never asked');
    assert.ok(foreign.upstream.some((r) => r.url === '/.well-known/oauth-protected-resource/mcp'));
    for (let i = 0; i < 50 && !/which is not on its origin/.test(worker.output()); i += 1) await new Promise((r) => setTimeout(r, 100));
    // The log line is JSON: its quotes escaped.
    assert.match(worker.output(), /resource_metadata \\?"http:\/\/127\.0\.0\.1:\d+\/internal\\?", which is not on its origin/);

    // Item 4: metadata without resource is refused before its authorization server is asked.
    const r5 = await start('bare');
    const t5 = await r5.text();
    assert.equal(r5.status, 502, t5);
    assert.match(t5, /has no "resource"/, t5);
    assert.ok(!bare.server.some((r) => r.url.startsWith('/.well-known')));
  });
}
