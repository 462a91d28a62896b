//! The Worker's entry, around the module worker-build generates (build/index.js).
//!
//! Fast path: a stateless POST with a `Content-Length` within the body limit and no session is
//! read here and answered by one synchronous call into the wasm (`sieve_fast`, worker/src/serve/fast.rs),
//! which returns nothing for a request it does not take; that request, with its body, then takes
//! the full path: the Rust `fetch` handler (worker/src/lib.rs). An isolate's first POST loads the
//! configuration first (`sieve_fast_prepare`), so it takes the fast path too: V8 compiles a wasm
//! function on its first call, and the full path's code is not compiled for a first `tools/list`. A session's plain POST is checked
//! by one such call (`sieve_fast_session`) and sent by this code to its object, where another
//! (`SessionObject.sieve_fast`) answers it (worker/src/sessions/fast.rs). In gateway mode a stateless use of
//! an upstream's item comes back as the upstream POST to send: this code sends it with the
//! platform's `fetch` and hands the answer back in another synchronous call (`settle`, `upstream`;
//! worker/src/serve/fast/forward.rs), so a forwarded call costs no Rust futures, timers or Request copies. The default export is a plain
//! handler object, not worker-build's entrypoint class, whose Proxy wrappers allocate on every
//! request.
//!
//! Panics. A Rust panic aborts the wasm instance. In the synchronous fast path the trap is thrown
//! to this code, which answers it with a JSON-RPC 500 (the same answer as `http::failed` in the
//! core). A request on the full path may be awaiting when the instance dies, and would then never
//! settle: the guard answers it with the same 500. Each such request notices the trap from a
//! timer of its own, because a promise of one request may not be settled from another request's
//! context (the trap happens in the context of the request that panicked). The next request
//! starts a fresh instance, as worker-build's entrypoint class does; workers-rs logs the panic.
import Generated, {
  SessionObject as GeneratedSessionObject,
  TaskLedger as GeneratedTaskLedger,
  RateLimiter as GeneratedRateLimiter,
  UpstreamTokens as GeneratedUpstreamTokens,
} from './build/index.js';
import { env } from 'cloudflare:workers';
import { runCode } from './code/run.mjs';
import { cancel as cancelRun, isRunsRequest, RunLedger } from './code/runs.mjs';

/** The handlers worker-build attaches to its entrypoint: `fetch` and the wasm-bindgen exports. */
const rust = Generated.prototype;
/** worker-build's record of a trapped instance, which its entrypoint's constructor resets. */
const init = globalThis.__worker_init_state;
if (typeof rust.fetch !== 'function' || typeof rust.sieve_fast !== 'function' || typeof rust.sieve_fast_prepare !== 'function' || typeof rust.sieve_preload !== 'function' || typeof init !== 'object') {
  throw new Error('worker/build/index.js is not the shape entry.mjs expects (worker-build 0.8.7); rebuild with scripts/build.sh');
}

// The server over the document that needs no I/O to read (the MCP_SIEVE_CONFIG variable, else
// the embedded catalog), built now, at the module's load: on Cloudflare an isolate starts while the
// client's TLS handshake runs (worker/src/config.rs `preload`). A failure here (a trap, or an
// error thrown through the wasm's frames) does not stop the script from loading: it is logged, and
// the instance is started afresh by the first request, which then builds the server itself.
try {
  rust.sieve_preload(env);
} catch (error) {
  console.error('mcp-sieve: building the server at load failed; the first request builds it', error);
  init.criticalError = true;
}

const FAILED = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32603, message: 'internal error: the request failed inside the server and was not completed; it was logged, retry it' },
});
const failed = () => new Response(FAILED, { status: 500, headers: { 'Content-Type': 'application/json' } });
/**
 * When a request in flight checks whether the instance trapped: after 25 ms, then at doubling
 * intervals up to 400 ms. A check every 25 ms for as long as a request waits cost a timer callback
 * each time: a session request waits in the front and again in its Durable Object, and one queued
 * behind its session's other requests made about twenty.
 */
const CHECK_MS = 25;
const CHECK_MAX_MS = 400;

let traps = 0;
const trapped = (error) => {
  if (error instanceof WebAssembly.RuntimeError) traps += 1;
};
addEventListener('error', (event) => trapped(event.error));
addEventListener('unhandledrejection', (event) => trapped(event.reason));

function guarded(run) {
  const seen = traps;
  let timer;
  let wait = CHECK_MS;
  const lost = new Promise((resolve) => {
    const check = () => {
      if (traps !== seen) return resolve(failed());
      wait = Math.min(2 * wait, CHECK_MAX_MS);
      timer = setTimeout(check, wait);
    };
    timer = setTimeout(check, wait);
  });
  return Promise.race([run(), lost]).finally(() => clearTimeout(timer));
}

/** A fresh wasm instance after a trap (worker-build's entrypoint constructor does the reset). */
function restartIfTrapped(env, ctx) {
  if (init.criticalError) Reflect.construct(Generated, [ctx, env]);
}

/** The result of a synchronous call into the wasm, or a 500 when the instance trapped in it. */
function sync(call) {
  try {
    return call();
  } catch (error) {
    if (!(error instanceof WebAssembly.RuntimeError)) throw error;
    console.error('mcp-sieve: the fast path trapped', error);
    init.criticalError = true;
    return failed();
  }
}

/** The headers of a JSON answer the wasm gives as its body alone (worker/src/serve/fast/forward.rs). */
const JSON_ANSWER = { 'Content-Type': 'application/json' };

/**
 * The response to what the fast path answered: a Response; a promise of one (the rest runs in
 * the wasm, guarded); or, in gateway mode, a POST to an upstream (a string, worker/src/serve/fast/forward.rs)
 * that this code sends, handing the answer back to the wasm, which answers the same way again;
 * or the body of a JSON answer of status 200 (a string starting with `{`).
 */
async function settle(answer) {
  for (;;) {
    if (answer instanceof Response) return answer;
    if (typeof answer !== 'string') return guarded(() => answer);
    if (answer.charCodeAt(0) === 123) return new Response(answer, { headers: JSON_ANSWER });
    answer = await upstream(answer);
  }
}

/**
 * Sends the upstream POST `plan` (worker/src/serve/fast/forward.rs `plan`: the exchange's number, URL,
 * deadline, answer cap and headers, a line each, then the body) within its deadline, and hands
 * its answer to the wasm: a JSON body of known length within the cap read whole here, an SSE
 * stream (or a body of unknown length) read there, or the failure.
 */
async function upstream(plan) {
  // Its lines, read in place (no closure per call: the bundler names each one).
  const fields = [];
  let at = 0;
  for (let n = 5, end; n > 0; n--, at = end + 1) {
    end = plan.indexOf('\n', at);
    fields.push(plan.slice(at, end));
    if (fields.length === 5) n += 2 * Number(fields[4]);
  }
  const [handle, url, deadline, cap] = [Number(fields[0]), fields[1], Number(fields[2]), Number(fields[3])];
  const headers = new Headers();
  for (let i = 5; i < fields.length; i += 2) headers.set(fields[i], fields[i + 1]);
  const signal = AbortSignal.timeout(deadline);
  let response;
  let body;
  try {
    response = await fetch(url, { method: 'POST', headers, body: plan.slice(at), signal });
    const type = response.headers.get('content-type') ?? '';
    const length = response.headers.get('content-length')?.trim();
    if (length && Number(length) <= cap && !/^text\/event-stream/i.test(type)) {
      body = new Uint8Array(await response.arrayBuffer());
    }
  } catch (error) {
    return sync(() => rust.sieve_fast_failed(handle, error, signal.aborted));
  }
  if (body === undefined) return guarded(() => sync(() => rust.sieve_fast_stream(handle, response, signal)));
  const type = response.headers.get('content-type') ?? '';
  const session = response.headers.get('mcp-session-id') ?? undefined;
  return sync(() => rust.sieve_fast_answer(handle, response.status, session, type, body));
}

/**
 * Code mode's runs (worker/code/run.mjs), asked for by worker/src/serve/code.rs with the run's
 * `ask` (JSON text), the run_code request's headers, env, context and signal (aborted when its
 * client goes away): each call its program makes is served by the Rust `fetch`, as a request is,
 * with the env run.mjs gives it (the run's id in it), guarded like every request.
 */
globalThis.__sieve_run_code = (ask, headers, env, ctx, signal) =>
  runCode({ ...JSON.parse(ask), headers: [...headers] }, env, (request, runEnv) =>
    guarded(() => rust.fetch.call({ env: runEnv, ctx }, request)), { ctx, signal });
/** A client's `notifications/cancelled` of a run (worker/src/serve/code.rs `cancel`): `ask` is
 * `{owner, session, request}` as JSON text; resolves how many runs it ended (worker/code/runs.mjs). */
globalThis.__sieve_cancel_run = (ask, env) => cancelRun(env, JSON.parse(ask));

/** Where the front's session fast path sends a request (worker/src/sessions/fast.rs `OBJECT_ORIGIN`). */
const FAST_OBJECT = 'https://fast.session.internal/';

/** The body limit of the fast path (0: not yet known, or no fast path in this configuration). */
let fastLimit = 0;
/**
 * Whether this isolate's first POST has loaded the configuration for the fast path
 * (`sieve_fast_prepare`, worker/src/serve/fast.rs). Without it that request took the full path,
 * whose code V8 then compiled (lazily, on first call) before the first answer.
 */
let prepared = false;

export default {
  async fetch(request, env, ctx) {
    restartIfTrapped(env, ctx);
    if (!prepared && fastLimit === 0 && request.method === 'POST') {
      prepared = true;
      const limit = await guarded(() => rust.sieve_fast_prepare(env, request.url));
      // A Response: the instance trapped while loading (the 500 the full path would give).
      if (typeof limit !== 'number') return limit;
      fastLimit = limit;
    }
    if (fastLimit > 0 && request.method === 'POST') {
      // The headers as one string for sieve_fast, and the two this code routes by.
      let head = '';
      let length = NaN;
      let session = false;
      for (const [name, value] of request.headers) {
        head += `${name}\n${value}\n`;
        if (name === 'content-length') length = Number(value);
        else if (name === 'mcp-session-id') session = true;
      }
      if (length <= fastLimit) {
        const body = new Uint8Array(await request.arrayBuffer());
        if (!session) {
          const answer = sync(() => rust.sieve_fast(request.url, head, body));
          if (answer) return settle(answer);
        } else {
          // A session's plain request (worker/src/sessions/fast.rs): checked here, then sent to
          // its object, whose answer goes back as it comes.
          const plan = sync(() => rust.sieve_fast_session(request.url, head, body));
          if (typeof plan === 'string') {
            const at = plan.indexOf('\n');
            const init = { method: 'POST', headers: request.headers, body };
            return env.SESSIONS.getByName(plan.slice(0, at)).fetch(plan.slice(at + 1), init)
              .catch((error) => sync(() => rust.sieve_fast_session_failed(request.url, head, body, error)));
          }
          if (plan) return plan;
        }
        request = new Request(request, { body });
      }
    }
    const response = await guarded(() => rust.fetch.call({ env, ctx }, request));
    if (fastLimit === 0) fastLimit = rust.sieve_fast_limit();
    return response;
  },
};

export class SessionObject extends GeneratedSessionObject {
  async fetch(request) {
    if (request.url.startsWith(FAST_OBJECT)) {
      // Sent by the front's fast path: served in one synchronous call (worker/src/sessions/fast.rs).
      let head = '';
      for (const [name, value] of request.headers) head += `${name}\n${value}\n`;
      const body = new Uint8Array(await request.arrayBuffer());
      const answer = sync(() => super.sieve_fast(request.url, head, body));
      if (answer instanceof Response) return answer;
      if (answer) return guarded(() => answer);
      request = new Request(request, { body });
    }
    return guarded(() => super.fetch(request));
  }
}

/** The budget of 2026-07-28 tasks (worker/src/serve/ledger.rs), guarded like the session objects. */
export class TaskLedger extends GeneratedTaskLedger {
  fetch(request) {
    return guarded(() => super.fetch(request));
  }
}

/** The ledger of runs of each object serving them (worker/code/runs.mjs), by the object: kept
 * here and not on the object, whose fields worker-build's wrapper drops with a trapped instance. */
const ledgers = new WeakMap();

/**
 * One limited key's token bucket (worker/src/operate/limiter.rs), guarded like the session
 * objects; and, under `/runs/`, one owner's code-mode runs at once (worker/code/runs.mjs).
 */
export class RateLimiter extends GeneratedRateLimiter {
  constructor(state, env) {
    super(state, env);
    ledgers.set(this, new RunLedger(state.storage));
  }

  fetch(request) {
    if (isRunsRequest(request)) return ledgers.get(this).serve(request);
    return guarded(() => super.fetch(request));
  }
}

/** One principal's upstream sign-ins and tokens (worker/src/oauth/upstream_tokens.rs), guarded likewise. */
export class UpstreamTokens extends GeneratedUpstreamTokens {
  fetch(request) {
    return guarded(() => super.fetch(request));
  }
}
