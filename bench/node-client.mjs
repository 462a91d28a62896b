//! A Node load client standing in for wrk (scripts/bench-lib.sh's `run` with CLIENT=node): the
//! shape issue 43 was filed with ("4 sessions sharing 32 connections, a Node load client").
//! CONNECTIONS loops over keep-alive connections on 127.0.0.1 for SECONDS, each sending one
//! JSON-RPC body of $BODIES at a time (picked at random; its "id" replaced by a fresh one), with
//! the 2025-11-25 headers and the Mcp-Session-Id of $SESSIONS (comma-separated; loop i uses
//! session i mod their count) or, with none, the 2026-07-28 headers. Prints one JSON line as
//! bench/wrk-list.lua does: requests, rps, mean/p50/p99 ms, errors, mean bytes a response.
//!   SESSIONS=a,b BODIES=legacy.txt node bench/node-client.mjs CONNECTIONS SECONDS URL
import fs from 'node:fs';
import http from 'node:http';

const [conns, seconds, url] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
if (!(conns > 0) || !(seconds >= 0) || !url) {
  console.error('usage: node bench/node-client.mjs CONNECTIONS SECONDS URL (env BODIES, SESSIONS)');
  process.exit(2);
}
const bodies = fs
  .readFileSync(process.env.BODIES, 'utf8')
  .split('\n')
  .filter((l) => /"id":\d+/.test(l));
if (!bodies.length) throw new Error('no body with an "id" in $BODIES');
const sessions = (process.env.SESSIONS || '').split(',').filter(Boolean);
const agent = new http.Agent({ keepAlive: true, maxSockets: conns });
const target = new URL(url);
let nextId = 1;

/** One request; resolves to [status, bytes]. */
function send(session) {
  const body = bodies[Math.floor(Math.random() * bodies.length)].replace(/"id":\d+/, `"id":${nextId++}`);
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Content-Length': Buffer.byteLength(body),
  };
  if (session) {
    headers['MCP-Protocol-Version'] = '2025-11-25';
    headers['Mcp-Session-Id'] = session;
  } else {
    headers['MCP-Protocol-Version'] = '2026-07-28';
    headers['Mcp-Method'] = JSON.parse(body).method;
  }
  return new Promise((resolve) => {
    const req = http.request(
      { agent, host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers },
      (res) => {
        let bytes = 0;
        res.on('data', (c) => (bytes += c.length));
        res.on('end', () => resolve([res.statusCode, bytes]));
        res.on('error', () => resolve([0, bytes]));
      },
    );
    req.setTimeout(5000, () => req.destroy());
    req.on('error', () => resolve([0, 0]));
    req.end(body);
  });
}

const latencies = [];
let [errors, bytes] = [0, 0];
const end = Date.now() + seconds * 1000;
const started = performance.now();
await Promise.all(
  Array.from({ length: conns }, async (_, i) => {
    const session = sessions.length ? sessions[i % sessions.length] : undefined;
    while (Date.now() < end) {
      const t = performance.now();
      const [status, n] = await send(session);
      latencies.push(performance.now() - t);
      bytes += n;
      if (status === 0 || status >= 400) errors++;
    }
  }),
);
const elapsed = (performance.now() - started) / 1000;
agent.destroy();
latencies.sort((a, b) => a - b);
const at = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : 0);
const mean = latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length);
const r3 = (x) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify({
    requests: latencies.length,
    rps: Math.round((latencies.length / elapsed) * 10) / 10,
    mean: r3(mean),
    p50: r3(at(0.5)),
    p99: r3(at(0.99)),
    errors,
    bytes: Math.round(bytes / Math.max(1, latencies.length)),
  }),
);
