// Shared parts of the HTTPS tests (tls-upstream, desktop-internet): a CA and certificates made
// with the openssl CLI in a temp folder, and a `fetch` that trusts that CA (Node 20's global
// fetch reads its CAs once at startup, so a CA made by the test needs its own client).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';

/** A CA in `dir`: `ca.pem` and `ca.key` (P-256, two days). */
export function makeCa(dir) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', path.join(dir, 'ca.key'), '-out', path.join(dir, 'ca.pem'), '-days', '2', '-subj', '/CN=sieve-test-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], { stdio: 'ignore' });
}

/** A certificate signed by the CA of `dir`: `name.pem` and `name.key` there. */
export function sign(dir, name, { san = 'IP:127.0.0.1', days = 2, eku = 'serverAuth' } = {}) {
  const file = (f) => path.join(dir, f);
  execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`), '-subj', `/CN=${name}`], { stdio: 'ignore' });
  writeFileSync(file(`${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=${eku}\nbasicConstraints=CA:FALSE\n`);
  execFileSync('openssl', ['x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
    '-CAcreateserial', '-out', file(`${name}.pem`), '-days', String(days), '-extfile', file(`${name}.ext`)], { stdio: 'ignore' });
}

/**
 * A `fetch` (url, { method, headers, body }) over node:http/https that trusts `ca` (PEM) and
 * follows no redirect; it answers a real `Response` (every Set-Cookie kept).
 */
export function fetchWithCa(ca) {
  return (url, init = {}) => new Promise((resolve, reject) => {
    const u = new URL(url);
    const lib = u.protocol === 'https:' ? https : http;
    const headers = new Headers(init.headers);
    const req = lib.request(u, { method: init.method ?? 'GET', headers: Object.fromEntries(headers), ca, signal: init.signal }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const out = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          for (const one of Array.isArray(v) ? v : [v]) out.append(k, one);
        }
        const empty = [204, 304].includes(res.statusCode);
        resolve(new Response(empty ? null : Buffer.concat(chunks), { status: res.statusCode, headers: out }));
      });
    });
    req.on('error', reject);
    req.end(init.body === undefined ? undefined : String(init.body));
  });
}
