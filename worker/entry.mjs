//! The Worker's entry: the module worker-build generates (build/index.js) with one guard added.
//! A Rust panic aborts the wasm instance, and the requests it was serving would then never
//! settle: the runtime reports the trap as an uncaught error, and workers-rs starts a fresh
//! instance only for the next request. The guard answers those requests with a JSON-RPC 500 (the
//! same answer as `http::failed` in the core); workers-rs logs the panic itself. Each request
//! notices the trap from a timer of its own, because a promise of one request may not be
//! settled from another request's context (the trap happens in the context of the request that
//! panicked).
import Generated, { SessionObject as GeneratedSessionObject } from './build/index.js';

const FAILED = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32603, message: 'internal error: the request failed inside the server and was not completed; it was logged, retry it' },
});
/** How often a request in flight checks whether the instance trapped, in ms. */
const CHECK_MS = 25;

let traps = 0;
const trapped = (error) => {
  if (error instanceof WebAssembly.RuntimeError) traps += 1;
};
addEventListener('error', (event) => trapped(event.error));
addEventListener('unhandledrejection', (event) => trapped(event.reason));

function guarded(run) {
  const seen = traps;
  let timer;
  const failed = new Promise((resolve) => {
    timer = setInterval(() => {
      if (traps !== seen) resolve(new Response(FAILED, { status: 500, headers: { 'Content-Type': 'application/json' } }));
    }, CHECK_MS);
  });
  return Promise.race([run(), failed]).finally(() => clearInterval(timer));
}

export default class Worker extends Generated {
  fetch(request) {
    return guarded(() => super.fetch(request));
  }
}

export class SessionObject extends GeneratedSessionObject {
  fetch(request) {
    return guarded(() => super.fetch(request));
  }
}
