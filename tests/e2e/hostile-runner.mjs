// The hostile-input catalogue runner, shared by tests/e2e/hostile.test.mjs (cases that pass) and
// tests/security/hostile.test.mjs (issue 13's cases, moved here as their fixes land). Every case
// names its expected HTTP status and JSON-RPC code (and optionally a `message` regex and
// `limitBelow`: the message must name a limit smaller than that number); after each case the
// server must still answer a normal request correctly.
//
// Special bodies: {"$long": n} a tools/call echo with a string of n bytes, {"$huge": n} a ping
// body of n bytes, {"$cursorReuse": method} a real tools/list cursor replayed on `method` with
// another filter. Anywhere inside a body: {"$str": n} a string of n "x", {"$array": [n, item]}
// n copies of item ("#" in its strings becomes the index), {"$keys": [n, prefix, value]} an
// object with keys prefix0..prefix(n-1). Sessions: "none", "forged" ("forged-0000"),
// "forgedUuid" (a well-formed UUID never issued); `client` uses the restricted-hostile session.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTarget } from './harness.mjs';

const VERSION = '2025-11-25';

/** `v` with the generators above expanded. */
export function expand(v) {
  if (Array.isArray(v)) return v.map(expand);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === '$str') return 'x'.repeat(v.$str);
  if (keys.length === 1 && keys[0] === '$array') {
    const [n, item] = v.$array;
    const text = JSON.stringify(item);
    return Array.from({ length: n }, (_, i) => expand(JSON.parse(text.replaceAll('#', String(i)))));
  }
  if (keys.length === 1 && keys[0] === '$keys') {
    const [n, prefix, value] = v.$keys;
    return Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, expand(value)]));
  }
  return Object.fromEntries(keys.map((k) => [k, expand(v[k])]));
}

/** The numbers a message names ("10,000" and "10_000" read as 10000). */
export const numbersIn = (text) => [...text.matchAll(/\d[\d,_]*/g)].map((m) => Number(m[0].replace(/[,_]/g, '')));

/**
 * Runs `cases` against a fresh server (startTarget: the Worker, or the native server with
 * SIEVE_TARGET=native) as subtests of `t`; returns how many passed.
 */
export async function runCatalogue(t, cases) {
  const server = await startTarget();
  try {
    return await runAgainst(t, server, cases);
  } finally {
    await server.stop();
  }
}

async function runAgainst(t, server, cases) {
  async function send(method, body, headers) {
    const res = await fetch(server.url, { method, headers, body });
    const text = await res.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: checked by the caller */ }
    return { status: res.status, json, text };
  }

  const baseHeaders = (session) => ({
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...(session ? { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': VERSION } : {}),
  });

  async function newSession(clientName = 'hostile') {
    const init = { jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: clientName, version: '1' } } };
    const res = await fetch(server.url, { method: 'POST', headers: baseHeaders(), body: JSON.stringify(init) });
    await res.text();
    const id = res.headers.get('mcp-session-id');
    assert.ok(id, 'initialize must issue a session id');
    const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
    await send('POST', JSON.stringify(note), baseHeaders(id));
    return id;
  }

  async function body(c, session) {
    const b = c.body;
    if (b === undefined) return undefined;
    if (typeof b === 'string') return b;
    if (b.$long) return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x'.repeat(b.$long) } } });
    if (b.$huge) return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(b.$huge) } });
    if (b.$cursorReuse) {
      const first = await send('POST', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), baseHeaders(session));
      const cursor = first.json?.result?.nextCursor;
      assert.ok(cursor, 'the default catalog has more than one page of tools');
      return JSON.stringify({ jsonrpc: '2.0', id: 2, method: b.$cursorReuse, params: { cursor, filter: { tags: ['beta'] } } });
    }
    return JSON.stringify(expand(b));
  }

  /** A normal request answered correctly: the server keeps serving. */
  async function stillServing(session) {
    const r = await send('POST', JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: { filter: { groups: ['calendar'] } } }), baseHeaders(session));
    assert.equal(r.status, 200);
    assert.ok(r.json.result.tools.length > 0);
    assert.ok(r.json.result.tools.every((tool) => tool.groups.includes('calendar')));
  }

  const session = await newSession();
  const restricted = await newSession('restricted-hostile');
  let passed = 0;
  for (const c of cases) {
    await t.test(c.name, async () => {
      const sid = c.session === 'none' ? null
        : c.session === 'forged' ? 'forged-0000'
          : c.session === 'forgedUuid' ? randomUUID()
            : c.client ? restricted : session;
      const headers = { ...baseHeaders(sid), ...(c.headers ?? {}) };
      const r = await send(c.method ?? 'POST', await body(c, sid), headers);
      assert.equal(r.status, c.status, `${c.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
      if (c.code !== undefined) {
        assert.equal(r.json?.error?.code, c.code, `${c.name}: ${r.text.slice(0, 300)}`);
        assert.ok(r.json.error.message.length > 10, 'the message says what was wrong');
      }
      if (c.message !== undefined) {
        assert.match(r.json?.error?.message ?? '', new RegExp(c.message), `${c.name}: ${r.text.slice(0, 300)}`);
      }
      if (c.limitBelow !== undefined) {
        const named = numbersIn(r.json?.error?.message ?? '');
        assert.ok(named.some((n) => n > 0 && n < c.limitBelow),
          `${c.name}: the message names the limit (a number below ${c.limitBelow}): ${r.text.slice(0, 300)}`);
      }
      await stillServing(session);
      passed += 1;
    });
  }
  return passed;
}
