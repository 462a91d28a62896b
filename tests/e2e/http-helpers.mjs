// Raw Streamable HTTP helpers for the Worker tests that look at statuses, headers and every SSE
// message (the harness's rpc() returns only the first one).

export const LEGACY = '2025-11-25';
export const MODERN = '2026-07-28';

/** The JSON-RPC messages of a response body: the JSON, or each `data:` line of an SSE stream. */
export function messagesOf(text, contentType) {
  if (text.trim() === '') return [];
  if ((contentType ?? '').includes('text/event-stream')) {
    return text.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  }
  return [JSON.parse(text)];
}

/**
 * POSTs one message. Returns { status, headers, messages, response (the message with an id),
 * notifications }.
 */
export async function post(url, message, { sessionId, headers = {}, method = 'POST' } = {}) {
  const res = await fetch(url, {
    method,
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(sessionId ? { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY } : {}),
      ...headers,
    },
    body: message === undefined ? undefined : JSON.stringify(message),
  });
  const text = await res.text();
  const messages = messagesOf(text, res.headers.get('content-type'));
  return {
    status: res.status,
    headers: res.headers,
    text,
    messages,
    response: messages.find((m) => 'id' in m && m.id !== undefined && !('method' in m)),
    notifications: messages.filter((m) => 'method' in m),
  };
}

let nextId = 1;

/** A legacy-era session: initialize (with `concerns`) and notifications/initialized. */
export async function openSession(url, { concerns, headers = {} } = {}) {
  const init = await post(url, {
    jsonrpc: '2.0', id: nextId++, method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'e2e', version: '1' }, ...(concerns ? { concerns } : {}) },
  }, { headers });
  if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status} ${init.text}`);
  const sessionId = init.headers.get('mcp-session-id');
  const note = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { sessionId, headers });
  if (note.status !== 202) throw new Error(`initialized: HTTP ${note.status} ${note.text}`);
  return { sessionId, init };
}

/** A request in a session; returns post()'s answer. */
export function call(url, sessionId, method, params = {}, headers = {}) {
  return post(url, { jsonrpc: '2.0', id: nextId++, method, params }, { sessionId, headers });
}

/** A stateless 2026-07-28 request (version, client info and capabilities in `_meta`). */
export function stateless(url, method, params = {}) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'e2e', version: '1' },
  };
  const name = params.name ?? params.uri;
  return post(url, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } }, {
    headers: { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}) },
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
