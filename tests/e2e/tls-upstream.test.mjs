// HTTPS upstreams of the native server (native/src/http/tls.rs), with real parts on 127.0.0.1 only:
// a CA and certificates made with the openssl CLI (tls-helpers.mjs), MCP upstreams served by node:https and
// node:http2, a CONNECT proxy written with node:http. Everything goes through the real binary
// (`mcp-sieve tools`, `check`, `serve`). Run with SIEVE_TARGET=native (it needs target/debug/mcp-sieve).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import https from 'node:https';
import http2 from 'node:http2';
import net from 'node:net';
import { startNative } from './harness.mjs';
import { makeCa, sign as signWith } from './tls-helpers.mjs';
import { stateless } from '../common/mcp-raw.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const native = process.env.SIEVE_TARGET === 'native';

let dir;
const file = (name) => path.join(dir, name);
const servers = [];

/** Runs `mcp-sieve ARGS` with `env` added (and the proxy variables of this process removed). */
function sieve(args, env = {}) {
  const base = { ...process.env };
  for (const k of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy', 'NO_PROXY', 'no_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR']) {
    delete base[k];
  }
  return new Promise((resolve) => {
    execFile(BIN, args, { env: { ...base, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A certificate signed by the test CA: `name.pem` and `name.key` in the temp folder. */
const sign = (name, opts) => signWith(dir, name, opts);

/** The MCP handler of a tiny upstream (plain JSON answers); `seen` records each request's HTTP version. */
function mcpHandler(seen, tools = ['hello']) {
  return async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      res.writeHead(400).end();
      return;
    }
    seen.push({ version: req.httpVersion, method: msg.method, cert: req.socket.getPeerCertificate?.()?.subject?.CN });
    if (msg.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const ok = (result) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    };
    switch (msg.method) {
      case 'initialize':
        return ok({ protocolVersion: msg.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'tls-upstream', version: '1.0.0' } });
      case 'tools/list':
        return ok({ tools: tools.map((name) => ({ name, description: `The tool ${name}`, inputSchema: { type: 'object' } })) });
      case 'tools/call':
        return ok({ content: [{ type: 'text', text: `called ${msg.params?.name}` }] });
      default:
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `no method ${msg.method}` } }));
    }
  };
}

/** Listens on a free port of 127.0.0.1; returns the port (the server is closed after the tests). */
async function listen(server) {
  servers.push(server);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server.address().port;
}

/** An https MCP upstream with certificate `cert`; `extra` adds tls options (mTLS). */
async function upstream(cert, extra = {}) {
  const seen = [];
  const opts = { key: readFileSync(file(`${cert}.key`)), cert: readFileSync(file(`${cert}.pem`)), ...extra };
  const server = https.createServer(opts, mcpHandler(seen));
  const handshakes = { count: 0 };
  server.on('secureConnection', () => handshakes.count++);
  const port = await listen(server);
  return { port, url: `https://127.0.0.1:${port}/mcp`, seen, handshakes };
}

/** A catalog document with upstream `gh` at `url` (and its other fields), in the temp folder. */
function doc(name, entry) {
  writeFileSync(file(name), JSON.stringify({ upstreams: { gh: entry } }));
  return file(name);
}

let good;
before(async () => {
  if (!native) return;
  dir = mkdtempSync(path.join(tmpdir(), 'sieve-tls-'));
  makeCa(dir);
  sign('server');
  sign('other', { san: 'DNS:other.example' });
  sign('old', { days: -1 });
  sign('client', { san: 'DNS:client', eku: 'clientAuth' });
  good = await upstream('server');
});

after(() => {
  for (const s of servers) s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('caFile: the upstream is reached over TLS and its tools listed', { skip: !native }, async () => {
  const r = await sieve(['tools', '--catalog', doc('ca.json', { url: good.url, caFile: 'ca.pem' })]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /gh_hello/);
  assert.match(r.stderr, /gh \(http\): up, 1 tools/);
});

test('SSL_CERT_FILE adds the CA for every upstream', { skip: !native }, async () => {
  const r = await sieve(['tools', '--catalog', doc('bare.json', { url: good.url })], { SSL_CERT_FILE: file('ca.pem') });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /gh_hello/);
});

test('an unknown issuer: the error names the upstream, the host and the reason', { skip: !native }, async () => {
  const r = await sieve(['tools', '--catalog', doc('bare.json', { url: good.url })]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /upstream "gh": cannot reach https:\/\/127\.0\.0\.1:\d+\/mcp: TLS with 127\.0\.0\.1 failed: the certificate's issuer is unknown \(add its CA with caFile or SSL_CERT_FILE\)/);
  assert.doesNotMatch(r.stderr, /client error \(Connect\)/);
});

test('a certificate for another name: name mismatch', { skip: !native }, async () => {
  const other = await upstream('other');
  const r = await sieve(['tools', '--catalog', doc('other.json', { url: other.url, caFile: 'ca.pem' })]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /upstream "gh": .*TLS with 127\.0\.0\.1 failed: name mismatch: the certificate is not valid for 127\.0\.0\.1 \(it is for other\.example\)/);
});

test('an expired certificate: expired', { skip: !native }, async () => {
  const old = await upstream('old');
  const r = await sieve(['tools', '--catalog', doc('old.json', { url: old.url, caFile: 'ca.pem' })]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /upstream "gh": .*TLS with 127\.0\.0\.1 failed: the certificate has expired/);
});

test('mTLS: clientCert and clientKey are shown to a server that requires them; without, a clear failure', { skip: !native }, async () => {
  const strict = await upstream('server', { ca: readFileSync(file('ca.pem')), requestCert: true, rejectUnauthorized: true });
  const ok = await sieve(['tools', '--catalog', doc('mtls.json', { url: strict.url, caFile: 'ca.pem', clientCert: 'client.pem', clientKey: 'client.key' })]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /gh_hello/);
  assert.ok(strict.seen.length > 0 && strict.seen.every((s) => s.cert === 'client'), JSON.stringify(strict.seen));
  const without = await sieve(['tools', '--catalog', doc('nomtls.json', { url: strict.url, caFile: 'ca.pem' })]);
  assert.notEqual(without.code, 0);
  assert.match(without.stderr, /upstream "gh": .*TLS with 127\.0\.0\.1 failed: .*client certificate \(set clientCert and clientKey\)/);
});

test('HTTP/2: a server offering h2 is spoken to over h2', { skip: !native }, async () => {
  const seen = [];
  const opts = { key: readFileSync(file('server.key')), cert: readFileSync(file('server.pem')), allowHTTP1: true };
  const port = await listen(http2.createSecureServer(opts, mcpHandler(seen)));
  const r = await sieve(['tools', '--catalog', doc('h2.json', { url: `https://127.0.0.1:${port}/mcp`, caFile: 'ca.pem' })]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(seen.length > 0 && seen.every((s) => s.version === '2.0'), JSON.stringify(seen));
  // An http/1.1-only server (node:https) is spoken to in 1.1.
  assert.ok(good.seen.length > 0 && good.seen.every((s) => s.version === '1.1'));
});

test('HTTPS_PROXY: the connection goes through a CONNECT tunnel; NO_PROXY bypasses it', { skip: !native }, async () => {
  const targets = [];
  // Plain http through the proxy comes in absolute form and is forwarded as is.
  const proxy = http.createServer((req, res) => {
    targets.push(req.url);
    const fwd = http.request(req.url, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    fwd.on('error', () => res.writeHead(502).end());
    req.pipe(fwd);
  });
  proxy.on('connect', (req, socket, head) => {
    targets.push(req.url);
    const [host, port] = req.url.split(':');
    const up = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  const proxyPort = await listen(proxy);
  const catalog = doc('proxied.json', { url: good.url, caFile: 'ca.pem' });
  const via = await sieve(['tools', '--catalog', catalog], { HTTPS_PROXY: `http://127.0.0.1:${proxyPort}` });
  assert.equal(via.code, 0, via.stderr);
  assert.match(via.stdout, /gh_hello/);
  assert.ok(targets.includes(`127.0.0.1:${good.port}`), JSON.stringify(targets));
  // Loopback is proxied too, as curl does, unless NO_PROXY names it.
  targets.length = 0;
  const direct = await sieve(['tools', '--catalog', catalog], { https_proxy: `http://127.0.0.1:${proxyPort}`, NO_PROXY: 'example.com,127.0.0.1' });
  assert.equal(direct.code, 0, direct.stderr);
  assert.deepEqual(targets, []);
  // NO_PROXY=* bypasses every host, an IP address too (as in curl).
  const star = await sieve(['tools', '--catalog', catalog], { HTTPS_PROXY: `http://127.0.0.1:${proxyPort}`, NO_PROXY: '*' });
  assert.equal(star.code, 0, star.stderr);
  assert.deepEqual(targets, []);
  // HTTP_PROXY: a plain http upstream is asked through the proxy in absolute form.
  targets.length = 0;
  const plainPort = await listen(http.createServer(mcpHandler([])));
  const plainUrl = `http://127.0.0.1:${plainPort}/mcp`;
  const plain = await sieve(['tools', '--catalog', doc('plain-proxied.json', { url: plainUrl })], { HTTP_PROXY: `http://127.0.0.1:${proxyPort}` });
  assert.equal(plain.code, 0, plain.stderr);
  assert.ok(targets.length > 0 && targets.every((t) => t === plainUrl), JSON.stringify(targets));
  // A proxy that refuses the tunnel is named with its answer.
  const refusing = http.createServer();
  refusing.on('connect', (req, socket) => socket.end('HTTP/1.1 403 Forbidden\r\n\r\n'));
  const refusingPort = await listen(refusing);
  const refused = await sieve(['tools', '--catalog', catalog], { HTTPS_PROXY: `http://127.0.0.1:${refusingPort}` });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, new RegExp(`upstream "gh": .*the proxy 127\\.0\\.0\\.1:${refusingPort} did not open a tunnel to 127\\.0\\.0\\.1:${good.port}: it answered "HTTP/1.1 403 Forbidden"`));
});

test('check: a file that would work passes; unreadable TLS files and a bad proxy URL are errors', { skip: !native }, async () => {
  const fine = await sieve(['check', doc('fine.json', { url: good.url, caFile: 'ca.pem', clientCert: 'client.pem', clientKey: 'client.key' })]);
  assert.equal(fine.code, 0, fine.stdout + fine.stderr);
  assert.match(fine.stdout, /a valid catalog document/);
  const missing = await sieve(['check', doc('missing.json', { url: good.url, caFile: 'nope.pem', clientCert: 'client.pem', clientKey: 'server.key' })]);
  assert.equal(missing.code, 1);
  assert.match(missing.stdout, /upstreams\.gh\.caFile: cannot read .*nope\.pem/);
  const mismatch = await sieve(['check', doc('mismatch.json', { url: good.url, clientCert: 'client.pem', clientKey: 'server.key' })]);
  assert.equal(mismatch.code, 1);
  assert.match(mismatch.stdout, /upstreams\.gh: clientKey is not the private key of the certificate in clientCert/);
  const proxy = await sieve(['check', doc('fine.json', { url: good.url, caFile: 'ca.pem' })], { HTTPS_PROXY: 'http://user:secret@bad host:3128' });
  assert.equal(proxy.code, 1);
  assert.match(proxy.stdout, /HTTPS_PROXY: not a proxy URL such as http:\/\/proxy\.example:3128/);
  assert.doesNotMatch(proxy.stdout, /secret/);
  // The document names a field the catalog checks itself.
  const plain = await sieve(['check', doc('plain.json', { url: 'http://127.0.0.1:9/mcp', caFile: 'ca.pem' })]);
  assert.equal(plain.code, 1);
  assert.match(plain.stdout, /upstreams\.gh\.caFile is only for an upstream reached at an https:\/\/ url/);
});

test('serve: tools/call through an https upstream, connections reused (p50 printed)', { skip: !native }, async () => {
  const plainSeen = [];
  const plainPort = await listen(http.createServer(mcpHandler(plainSeen)));
  const catalog = file('both.json');
  writeFileSync(catalog, JSON.stringify({ upstreams: {
    tls: { url: good.url, caFile: 'ca.pem' },
    plain: { url: `http://127.0.0.1:${plainPort}/mcp` },
  } }));
  const srv = await startNative({ extraArgs: ['--catalog', catalog] });
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const call = async (name) => {
      const r = await stateless(srv.url, 'tools/call', { name, arguments: {} }, { agent });
      assert.equal(r.status, 200, r.body);
      assert.equal(JSON.parse(r.body).result?.content?.[0]?.text, `called hello`, r.body);
    };
    await call('tls_hello');
    await call('plain_hello');
    const p50 = async (name) => {
      const ms = [];
      for (let i = 0; i < 200; i++) {
        const t = performance.now();
        await call(name);
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      return ms[100];
    };
    const before = good.handshakes.count;
    const viaTls = await p50('tls_hello');
    // Connections are reused: not a handshake per call.
    assert.ok(good.handshakes.count - before <= 2, `${good.handshakes.count - before} handshakes for 200 calls`);
    const viaPlain = await p50('plain_hello');
    agent.destroy();
    console.log(`tools/call p50 over 200 sequential calls: https upstream ${viaTls.toFixed(2)} ms, http upstream ${viaPlain.toFixed(2)} ms`);
  } finally {
    await srv.stop();
  }
});
