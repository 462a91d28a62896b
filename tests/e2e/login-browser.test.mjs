// E2E (native): what `mcp-sieve login NAME` hands the browser, and the loopback redirect it
// serves (issue 58 item 11, issue 60). The browser is a script named by `$BROWSER` (the opener,
// the `webbrowser` crate, honours it as the desktop openers do) that records the argument it was
// given; the test then acts as that browser: it follows the recorded URL through a real
// authorization server's login and consent (npm `oidc-provider`, tests/e2e/oauth-helpers.mjs) to
// the redirect, which mcp-sieve's listener (hyper) answers with its page. The recorded URL is the
// whole authorization URL, every `&`-joined parameter in it (`cmd /C start` cut it at the first).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './harness.mjs';
import { startAuthServer, startMcp, browse } from './oauth-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (process.env.SIEVE_TARGET !== 'native') {
  test('login and the browser (native only)', { skip: 'set SIEVE_TARGET=native' }, () => {});
} else {
  test('login opens the browser with the whole authorization URL; the redirect is served and signs in', { timeout: 120_000 }, async (t) => {
    const [asPort, aPort] = [await freePort(), await freePort()];
    const resource = `http://127.0.0.1:${aPort}/mcp`;
    const issuer = await startAuthServer(t, { port: asPort, resources: [resource], ttl: 60 });
    await startMcp(t, { name: 'a', port: aPort, resource, issuer });
    const dir = mkdtempSync(path.join(tmpdir(), 'sieve-browser-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalog = path.join(dir, 'sieve.json');
    writeFileSync(catalog, JSON.stringify({ tools: [], upstreams: { a: { url: resource } } }));
    const opened = path.join(dir, 'opened.txt');
    const browser = path.join(dir, 'browser.sh');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$#" "$@" > '${opened}'\n`);
    chmodSync(browser, 0o755);
    const env = { ...process.env, XDG_CONFIG_HOME: dir, MCP_SIEVE_TOKEN_STORE: 'file', BROWSER: browser };
    const login = spawn(BIN, ['login', 'a', '--catalog', catalog], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    login.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((r) => login.on('exit', r));
    for (let i = 0; i < 200 && !existsSync(opened); i += 1) await sleep(50);
    assert.ok(existsSync(opened), `the browser was not opened: ${err}`);
    await sleep(100);
    const [count, url] = readFileSync(opened, 'utf8').trimEnd().split('\n');
    assert.equal(count, '1', 'one argument: the URL');
    const printed = err.split('\n').find((l) => l.startsWith(`${issuer}/`))?.trim();
    assert.equal(url, printed, 'the browser got the URL login printed, whole');
    const u = new URL(url);
    for (const p of ['response_type', 'client_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'resource']) {
      assert.ok(u.searchParams.get(p), `${p} reached the browser`);
    }
    assert.match(err, /a browser was opened/);
    // The listener (hyper): another path is 404, and leaves the sign-in waiting.
    const redirect = u.searchParams.get('redirect_uri');
    const other = await fetch(new URL('/favicon.ico', redirect));
    assert.equal(other.status, 404);
    const page = await browse(url, 'alice', redirect, () => err);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('cache-control'), 'no-store');
    assert.match(await page.text(), /Signed in: mcp-sieve has its token/);
    assert.equal(await exited, 0, err);
    assert.match(err, /signed in to upstream "a"/);
  });
}
