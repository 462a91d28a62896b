//! The one raw MCP Streamable HTTP client of the JS tests, the soak and the load bench: a request
//! over node:http (optionally a keep-alive Agent, so the bench measures the server and not
//! connection set-up), its answer read as JSON or as an SSE stream, a 2025-11-25 session opened,
//! and 2026-07-28 stateless requests built. No dependencies, no SDK: the tests that use it look at
//! statuses, headers and every message the SDK would hide or refuse to send.
import http from 'node:http';

/** The session era's protocol version (initialize, Mcp-Session-Id). */
export const LEGACY = '2025-11-25';
/** The stateless era's protocol version (version, client info and capabilities in `_meta`). */
export const MODERN = '2026-07-28';

/**
 * The JSON-RPC messages of a response body: `[json]` for a JSON body, the `data` of every event
 * for a text/event-stream, `[]` for an empty body, `null` for a body that is neither (an HTML
 * error page, a truncated stream): callers that expect JSON fail on that with the body in hand.
 */
export function parseMessages(body, contentType) {
  if (body.trim() === '') return [];
  try {
    if (!(contentType ?? '').includes('text/event-stream')) return [JSON.parse(body)];
    // Events are separated by a blank line; an event's `data:` lines join with "\n" (SSE spec).
    return body.split(/\r?\n\r?\n/).flatMap((event) => {
      const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith('data: ') ? 6 : 5));
      return data.length ? [JSON.parse(data.join('\n'))] : [];
    });
  } catch {
    return null;
  }
}

/** A response's headers: `get(name)` as on a fetch Response (null when absent), `raw` as node gives them. */
class ResponseHeaders {
  constructor(raw) { this.raw = raw; }

  /** The value of header `name` (any case), arrays joined with ", "; null when absent. */
  get(name) {
    const v = this.raw[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  }
}

/**
 * An answer: status, headers, body, and its messages parsed on first use only, so that the load
 * bench, which reads only the status and the body, pays no JSON parse per request.
 */
class Answer {
  #messages;

  constructor(status, headers, body) {
    /** The HTTP status. */
    this.status = status;
    /** The headers (get(name)). */
    this.headers = new ResponseHeaders(headers);
    /** The body as text. */
    this.body = body;
  }

  /** Every JSON-RPC message of the body (see parseMessages). */
  get messages() {
    if (this.#messages === undefined) this.#messages = parseMessages(this.body, this.headers.get('content-type'));
    return this.#messages;
  }

  /** The body as text (the name fetch's Response uses). */
  get text() { return this.body; }

  /** The message with an id and no method: the answer to the request. */
  get response() { return this.messages?.find((m) => m && 'id' in m && !('method' in m)); }

  /** The messages with a method: notifications (and requests) sent along with the answer. */
  get notifications() { return this.messages?.filter((m) => m && 'method' in m) ?? []; }
}

/**
 * Sends `message` to `url`: an object is sent as JSON, a string as it is, `undefined` as no body.
 * Options: `headers` (over the defaults Content-Type: application/json and Accept: JSON or SSE),
 * `method` (POST), `agent` (a node:http Agent, e.g. keep-alive), `timeoutMs`, `sessionId` (adds the
 * headers of a 2025-11-25 session).
 * Resolves an Answer: { status, headers (get(name)), body (text), messages (see parseMessages),
 * response (the message with an id and no method), notifications (the messages with a method) }.
 */
export async function post(url, message, opts = {}) {
  if (opts.sessionId) opts = { ...opts, headers: { ...sessionHeaders(opts.sessionId), ...(opts.headers ?? {}) } };
  const body = message === undefined ? undefined : typeof message === 'string' ? message : JSON.stringify(message);
  try {
    return await send(url, body, opts);
  } catch (err) {
    // A kept-alive connection the server closed as we reused it: the server has not read this
    // request, so it is sent once more (the agent has dropped the closed connection).
    if (err.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return send(url, body, opts);
    throw err;
  }
}

/** One attempt of post(): `body` is a string or undefined. */
function send(url, body, { headers = {}, method = 'POST', agent, timeoutMs } = {}) {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(url, {
      method, agent,
      headers: {
        'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        ...(body === undefined ? {} : { 'Content-Length': Buffer.byteLength(body) }),
        ...headers,
      },
    }, (res) => {
      answered = true;
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve(new Answer(res.statusCode, res.headers, Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', (err) => {
      // A server may answer (413) and close before reading all of a large body: the failed write
      // after its answer is not the request's outcome, the answer is.
      if (answered) return;
      err.reusedSocket = req.reusedSocket;
      reject(err);
    });
    if (timeoutMs) req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${url}: no answer in ${timeoutMs} ms`)));
    req.end(body);
  });
}

/** Request ids: unique across everything this module sends in one process, as a server expects within a session. */
let nextId = 1;

/** The headers every request of a 2025-11-25 session carries. */
export const sessionHeaders = (sessionId) => ({ 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY });

/**
 * Opens a 2025-11-25 session: initialize (with `concerns` if given), then
 * notifications/initialized (with `initializedParams` if given). `headers` and `agent` go with
 * both requests. Throws, with the body, unless initialize is a 200 with an Mcp-Session-Id and the
 * notification a 202. Resolves { sessionId, headers (to send with every later request, `headers`
 * included), init (initialize's answer) }.
 */
export async function initialize(url, {
  clientInfo = { name: 'e2e', version: '1' }, capabilities = {}, concerns, initializedParams,
  headers = {}, agent, id = nextId++,
} = {}) {
  const init = await post(url, {
    jsonrpc: '2.0', id, method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities, clientInfo, ...(concerns ? { concerns } : {}) },
  }, { headers, agent });
  const sessionId = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !sessionId) {
    throw new Error(`initialize: HTTP ${init.status}, session ${sessionId}: ${init.body.slice(0, 300)}`);
  }
  const all = { ...headers, ...sessionHeaders(sessionId) };
  const note = await post(url, {
    jsonrpc: '2.0', method: 'notifications/initialized', ...(initializedParams ? { params: initializedParams } : {}),
  }, { headers: all, agent });
  if (note.status !== 202) throw new Error(`notifications/initialized: HTTP ${note.status} ${note.body.slice(0, 300)}`);
  return { sessionId, headers: all, init };
}

/**
 * A 2026-07-28 stateless request: `params` with the version, client info and capabilities in
 * `_meta` (params._meta's own entries kept), and the headers that must match it:
 * MCP-Protocol-Version, Mcp-Method, and Mcp-Name (params.uri for resources/read, else params.name).
 * Returns { message, headers } for post(); `headers` are added last (a test may contradict them).
 */
/** Client capabilities that declare SEP-2663's tasks extension, as a 2026-07-28 client must to get a task or use tasks/*. */
export const TASKS_CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

export function statelessRequest(method, params = {}, { id = nextId++, clientInfo = { name: 'e2e', version: '1' }, capabilities = {}, headers = {} } = {}) {
  const message = {
    jsonrpc: '2.0', id, method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': clientInfo,
        'io.modelcontextprotocol/clientCapabilities': capabilities,
        ...(params._meta ?? {}),
      },
    },
  };
  const name = method === 'resources/read' ? params.uri : params.name;
  return {
    message,
    headers: { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}), ...headers },
  };
}

/** Posts statelessRequest(method, params, opts) to `url` (over `opts.agent` if given); resolves post()'s Answer. */
export function stateless(url, method, params = {}, opts = {}) {
  const { message, headers } = statelessRequest(method, params, opts);
  return post(url, message, { headers, agent: opts.agent });
}

/**
 * A request in the 2025-11-25 session `sessionId` (its headers, then `headers`); resolves post()'s
 * Answer.
 */
export function call(url, sessionId, method, params = {}, { headers = {}, agent, id = nextId++ } = {}) {
  return post(url, { jsonrpc: '2.0', id, method, params }, { headers: { ...sessionHeaders(sessionId), ...headers }, agent });
}

/** A 2025-11-25 session with `concerns` (see initialize): resolves { sessionId, headers, init }. */
export const openSession = (url, { concerns, headers = {} } = {}) => initialize(url, { concerns, headers });

/** POSTs `body` in two chunks, without a Content-Length: { status, headers, body }. */
export function postChunked(url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    const half = Math.floor(body.length / 2);
    req.write(body.slice(0, half));
    req.end(body.slice(half));
  });
}

/**
 * POSTs with a Content-Length to the Worker's fast paths, which mark their answers with
 * `X-Sieve-Path` (MCP_SIEVE_DIAGNOSTICS). Every 5 s an isolate's next request re-reads the catalog's
 * KV key on the full path (worker/src/config.rs, `watch`), so when a `marked` answer is expected and
 * the first came unmarked, the request is sent once more. `body` is a string or makes one per send.
 */
export async function postMarked(url, body, headers, marked = true) {
  const send = () => post(url, typeof body === 'function' ? body() : body, { headers });
  const first = await send();
  return marked && !first.headers.get('x-sieve-path') ? send() : first;
}

/** What must agree between the two paths: status, content type, and the messages (or the text). */
export const outcome = (status, contentType, body) => ({
  status,
  contentType: contentType ?? null,
  messages: parseMessages(body, contentType) ?? body,
});
