//! Code mode's engine (issue 62): one QuickJS runtime (rquickjs) per program, on the thread that
//! calls [`run`], with a memory limit, a stack limit and an interrupt handler that stops it past
//! its wall time or when its client goes away. The context has the language's intrinsics only:
//! no quickjs-libc (no `std`/`os` modules), no module loader (`import` fails), no timers, no I/O;
//! `eval` compiles inside the same context. Two globals are added, frozen and not replaceable:
//! `tools` (a proxy: `tools.<name>(args)` and `tools.call(name, args)`) and `console` (`log`,
//! `info`, `warn`, `error`, collected within bounds). Everything crosses the bridge as JSON text,
//! so nothing of the program's objects (prototypes, getters) reaches this side. A call does not
//! block the program: it answers a promise, handed over as [`Calls::send`] and settled when its
//! answer comes back, so the calls of a `Promise.all` are made at once (as at the edge).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::promise::PromiseState;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Promise, Runtime, Value as JsValue};
use serde_json::Value;

use super::CallError;

/// Stack the engine may use (its own check, below the thread's: a deep recursion is a
/// `RangeError`, not a crash).
const STACK_BYTES: usize = 1024 * 1024;
/// Stack of the thread a program runs on (`crate::code` spawns it with this).
pub(crate) const THREAD_STACK_BYTES: usize = 8 * 1024 * 1024;
/// Most lines `console.log` keeps, and most bytes of all of them.
const MAX_LOG_LINES: usize = 1000;
const MAX_LOG_BYTES: usize = 64 * 1024;
/// Longest line kept, in bytes (cut at a character boundary).
const MAX_LOG_LINE: usize = 4096;
/// How often a program waiting on its calls looks at its deadline and its cancellation.
const TICK: Duration = Duration::from_millis(50);

/// The limits of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub wall: Duration,
    pub memory_bytes: usize,
    pub max_calls: u64,
    pub max_answer_bytes: usize,
}

impl From<&mcp_sieve::protocol::code::Limits> for Limits {
    fn from(l: &mcp_sieve::protocol::code::Limits) -> Self {
        Limits {
            wall: Duration::from_secs(l.timeout_seconds),
            memory_bytes: (l.memory_mb as usize).saturating_mul(1024 * 1024),
            max_calls: l.max_calls,
            max_answer_bytes: l.max_answer_bytes as usize,
        }
    }
}

/// Why a run ended without an answer.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum RunError {
    #[error("the program ran past its time limit of {0} s (code.timeoutSeconds)")]
    Timeout(u64),
    #[error("the program used more than its memory limit of {0} MB (code.memoryMb)")]
    Memory(usize),
    #[error("the run was cancelled: its client went away")]
    Cancelled,
    #[error("the program's promise never settles: nothing is left to run (a promise nobody resolves?)")]
    NeverSettles,
    #[error("the program's answer is {0} bytes, more than {1} (code.maxAnswerBytes)")]
    TooLarge(usize, usize),
    #[error("the program returned a value that is not JSON ({0})")]
    NotJson(String),
    #[error("{0}")]
    Thrown(String),
    #[error("the engine could not start: {0}")]
    Engine(String),
}

/// What a run produced.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The returned value, as JSON (`undefined`: `null`), or why there is none.
    pub result: Result<Value, RunError>,
    /// What `console` wrote (bounded).
    pub logs: Vec<String>,
    /// Tool calls made.
    pub calls: u64,
}

/// The program's tool calls, made without waiting for one another: `send` hands call `n` (the
/// tool's name and its arguments, a JSON object) to the host, which answers each on `answers` as
/// it comes, in any order — what the call resolves to (the result's `structuredContent`, else its
/// `content`), or the error it throws.
pub(crate) struct Calls {
    pub send: SendCall,
    pub answers: Receiver<(u32, Result<Value, CallError>)>,
}

/// [`Calls::send`].
pub(crate) type SendCall = Box<dyn FnMut(u32, &str, Value) -> Result<(), CallError> + Send>;

struct State {
    send: SendCall,
    calls: u64,
    /// Calls handed over and not answered yet.
    pending: usize,
    max_calls: u64,
    logs: Vec<String>,
    log_bytes: usize,
    logs_cut: bool,
}

impl State {
    fn log(&mut self, line: String) {
        if self.logs_cut {
            return;
        }
        let mut line = line;
        if line.len() > MAX_LOG_LINE {
            let mut end = MAX_LOG_LINE;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push('…');
        }
        if self.logs.len() >= MAX_LOG_LINES || self.log_bytes + line.len() > MAX_LOG_BYTES {
            self.logs_cut = true;
            self.logs.push(format!(
                "… more logs left out (at most {MAX_LOG_LINES} lines, {MAX_LOG_BYTES} bytes)"
            ));
            return;
        }
        self.log_bytes += line.len();
        self.logs.push(line);
    }
}

/// Installs `tools` and `console` over the host functions, which it then removes from the
/// global object (the program sees only the frozen wrappers, which keep the originals of what
/// they use: a program that replaces `JSON` or `Object.prototype` changes only its own world).
const PRELUDE: &str = r#"(() => {
  'use strict';
  const call = globalThis.__sieve_call, log = globalThis.__sieve_log;
  delete globalThis.__sieve_call; delete globalThis.__sieve_log;
  const stringify = JSON.stringify, parse = JSON.parse, freeze = Object.freeze;
  const define = Object.defineProperty, String_ = String, Promise_ = Promise, Error_ = Error;
  // Each call's promise by its number, until its answer settles it (`settle`, below).
  const waiting = Object.create(null);
  const callTool = async (name, args) => {
    if (typeof name !== 'string') throw new TypeError('tools.call(name, args): name must be a string');
    const text = args === undefined ? '{}' : stringify(args);
    if (typeof text !== 'string') throw new TypeError('the arguments of ' + name + ' must be an object');
    const n = call(name, text);
    return parse(await new Promise_((resolve, reject) => { waiting[n] = { resolve, reject }; }));
  };
  const methods = freeze(Object.create(null));
  const tools = new Proxy(methods, {
    get(_, p) {
      if (p === 'call') return callTool;
      if (typeof p !== 'string' || p === 'then') return undefined;
      return (args) => callTool(p, args);
    },
    set() { return false; }, defineProperty() { return false; }, deleteProperty() { return false; },
    setPrototypeOf() { return false; },
  });
  const show = (v) => {
    if (typeof v === 'string') return v;
    try { const s = stringify(v); return s === undefined ? String_(v) : s; } catch (_) { return String_(v); }
  };
  // No Array.prototype methods: a program may have replaced them.
  const write = (...a) => { let line = ''; for (let i = 0; i < a.length; i++) line += (i ? ' ' : '') + show(a[i]); log(line); };
  const console = freeze({ log: write, info: write, warn: write, error: write, debug: write });
  define(globalThis, 'tools', { value: tools, writable: false, configurable: false, enumerable: false });
  define(globalThis, 'console', { value: console, writable: false, configurable: false, enumerable: false });
  // For the host only: call n's answer (JSON text), or the message of the error it throws.
  return (n, ok, text) => {
    const w = waiting[n];
    delete waiting[n];
    if (ok) w.resolve(text); else w.reject(new Error_(text));
  };
})()"#;

/// Runs `code` (the body of an async function) under `limits`, its tool calls made over
/// `calls`; `cancelled` stops it from outside (checked by the interrupt handler, and while it
/// waits on its calls). Blocking: run it on a thread of its own.
pub(crate) fn run(code: &str, limits: Limits, cancelled: Arc<AtomicBool>, calls: Calls) -> Ran {
    let state = Rc::new(RefCell::new(State {
        send: calls.send,
        calls: 0,
        pending: 0,
        max_calls: limits.max_calls,
        logs: Vec::new(),
        log_bytes: 0,
        logs_cut: false,
    }));
    let result = run_in(code, limits, &cancelled, &state, &calls.answers);
    let s = state.borrow();
    Ran {
        result,
        logs: s.logs.clone(),
        calls: s.calls,
    }
}

fn run_in(
    code: &str,
    limits: Limits,
    cancelled: &Arc<AtomicBool>,
    state: &Rc<RefCell<State>>,
    answers: &Receiver<(u32, Result<Value, CallError>)>,
) -> Result<Value, RunError> {
    let started = Instant::now();
    let rt = Runtime::new().map_err(|e| RunError::Engine(e.to_string()))?;
    rt.set_memory_limit(limits.memory_bytes);
    rt.set_max_stack_size(STACK_BYTES);
    // Why the handler stopped the program, read once it has.
    let stopped: Rc<RefCell<Option<RunError>>> = Rc::default();
    {
        let (stopped, cancelled, wall) = (stopped.clone(), cancelled.clone(), limits.wall);
        rt.set_interrupt_handler(Some(Box::new(move || {
            if stopped.borrow().is_some() {
                return true;
            }
            let why = if cancelled.load(Ordering::Relaxed) {
                RunError::Cancelled
            } else if started.elapsed() > wall {
                RunError::Timeout(wall.as_secs())
            } else {
                return false;
            };
            *stopped.borrow_mut() = Some(why);
            true
        })));
    }
    let ctx = Context::full(&rt).map_err(|e| RunError::Engine(e.to_string()))?;
    let outcome = ctx.with(|ctx| -> Result<Value, RunError> {
        let settle = install(&ctx, state).map_err(|e| RunError::Engine(e.to_string()))?;
        let source = format!("(async () => {{\n{code}\n}})()");
        let promise: Promise = ctx
            .eval(source)
            .catch(&ctx)
            .map_err(|e| thrown(e, limits.memory_bytes))?;
        // Read in a call of its own: no borrow of it is held while the program runs (the
        // interrupt handler writes it).
        let running = || stopped.borrow().is_none();
        loop {
            // The program's jobs (its code after each `await`) until none is left.
            while running() && ctx.execute_pending_job() {}
            if !running() || promise.state() != PromiseState::Pending {
                break;
            }
            if state.borrow().pending == 0 {
                return Err(RunError::NeverSettles);
            }
            // Waiting on its calls: the next answer settles its call's promise.
            let (n, answer) = match answers.recv_timeout(TICK) {
                Ok(got) => got,
                Err(e) => {
                    let why = if cancelled.load(Ordering::Relaxed) || e == RecvTimeoutError::Disconnected {
                        RunError::Cancelled
                    } else if started.elapsed() > limits.wall {
                        RunError::Timeout(limits.wall.as_secs())
                    } else {
                        continue;
                    };
                    *stopped.borrow_mut() = Some(why);
                    break;
                }
            };
            state.borrow_mut().pending -= 1;
            let (ok, text) = match answer {
                Ok(v) => (true, v.to_string()),
                Err(e) => (false, e.to_string()),
            };
            settle
                .call::<_, ()>((n, ok, text))
                .catch(&ctx)
                .map_err(|e| thrown(e, limits.memory_bytes))?;
        }
        if stopped.borrow().is_some() {
            return Err(RunError::Cancelled); // replaced below by why it stopped
        }
        let value: JsValue = match promise.result::<JsValue>() {
            None => return Err(RunError::NeverSettles),
            Some(r) => r.catch(&ctx).map_err(|e| thrown(e, limits.memory_bytes))?,
        };
        let text = match ctx.json_stringify(value).catch(&ctx) {
            Ok(Some(s)) => s.to_string().map_err(|e| RunError::NotJson(e.to_string()))?,
            Ok(None) => "null".to_string(),
            Err(e) => return Err(RunError::NotJson(thrown(e, limits.memory_bytes).to_string())),
        };
        if text.len() > limits.max_answer_bytes {
            return Err(RunError::TooLarge(text.len(), limits.max_answer_bytes));
        }
        serde_json::from_str(&text).map_err(|e| RunError::NotJson(e.to_string()))
    });
    // What stopped it from outside says why, whatever the program made of the interruption.
    if let Some(why) = stopped.borrow_mut().take() {
        return Err(why);
    }
    outcome
}

/// Adds the host functions and runs the prelude: the function that settles a call's promise
/// with its answer (`n`, `ok`, the answer's JSON text or the error's message).
fn install<'js>(ctx: &Ctx<'js>, state: &Rc<RefCell<State>>) -> rquickjs::Result<Function<'js>> {
    let g = ctx.globals();
    let s = state.clone();
    let call = Function::new(ctx.clone(), move |ctx: Ctx<'js>, name: String, args: String| {
        let args: Value = match serde_json::from_str(&args) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(Exception::throw_type(
                    &ctx,
                    &format!("the arguments of {name} must be an object"),
                ))
            }
        };
        let mut st = s.borrow_mut();
        if st.calls >= st.max_calls {
            let most = st.max_calls;
            return Err(Exception::throw_range(
                &ctx,
                &format!("too many tool calls: a run may make {most} (code.maxCalls)"),
            ));
        }
        st.calls += 1;
        let n = st.calls as u32; // at most code.maxCalls
        match (st.send)(n, &name, args) {
            Ok(()) => {
                st.pending += 1;
                Ok(n)
            }
            Err(why) => Err(Exception::throw_message(&ctx, &why.to_string())),
        }
    })?;
    let s = state.clone();
    let log = Function::new(ctx.clone(), move |line: String| {
        s.borrow_mut().log(line);
    })?;
    g.set("__sieve_call", call)?;
    g.set("__sieve_log", log)?;
    ctx.eval::<Function, _>(PRELUDE)
}

/// A caught error as the run's: an out-of-memory exception as [`RunError::Memory`], another as
/// its name and message.
fn thrown(e: CaughtError<'_>, memory_bytes: usize) -> RunError {
    let text = match &e {
        CaughtError::Exception(x) => {
            let message = x.message().unwrap_or_default();
            let name = x
                .get::<_, Option<String>>("name")
                .ok()
                .flatten()
                .unwrap_or_else(|| "Error".into());
            format!("{name}: {message}")
        }
        // Out of memory while throwing, QuickJS throws `null` (its memory is freed by then, so
        // the usage cannot tell): a thrown `null` is read as the memory limit's, a program's own
        // `throw null` too.
        CaughtError::Value(v) if v.is_null() => return RunError::Memory(memory_bytes / (1024 * 1024)),
        CaughtError::Value(v) => match v.as_string().and_then(|s| s.to_string().ok()) {
            Some(s) => format!("the program threw {s}"),
            None => format!("the program threw a {}", v.type_name()),
        },
        CaughtError::Error(e) => e.to_string(),
    };
    if text.contains("out of memory") || matches!(e, CaughtError::Error(rquickjs::Error::Allocation)) {
        return RunError::Memory(memory_bytes / (1024 * 1024));
    }
    RunError::Thrown(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits() -> Limits {
        Limits {
            wall: Duration::from_secs(2),
            memory_bytes: 32 * 1024 * 1024,
            max_calls: 5,
            max_answer_bytes: 10_000,
        }
    }

    /// Tools `add` and `echo` (others unknown), each call answered as it is made.
    fn tools() -> Calls {
        let (tx, answers) = std::sync::mpsc::channel();
        let send = Box::new(move |n, name: &str, args: Value| {
            let answer = match name {
                "add" => Ok(json!({"sum": args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)})),
                "echo" => Ok(args),
                other => Err(CallError::Rpc(format!("Unknown tool: \"{other}\""))),
            };
            tx.send((n, answer)).map_err(|_| CallError::Ended)
        });
        Calls { send, answers }
    }

    fn go(code: &str) -> Ran {
        on_thread(code, limits(), Arc::default())
    }

    fn on_thread(code: &str, limits: Limits, cancelled: Arc<AtomicBool>) -> Ran {
        with_calls(code, limits, cancelled, tools())
    }

    fn with_calls(code: &str, limits: Limits, cancelled: Arc<AtomicBool>, calls: Calls) -> Ran {
        let code = code.to_string();
        std::thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || run(&code, limits, cancelled, calls))
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn the_calls_of_a_promise_all_are_made_at_once_and_settled_as_they_come() {
        // Nothing is answered until three calls are made; then the last one first.
        let (tx, answers) = std::sync::mpsc::channel();
        let mut made = Vec::new();
        let send = Box::new(move |n, _: &str, args: Value| {
            made.push((n, args));
            if made.len() == 3 {
                for (n, args) in made.drain(..).rev() {
                    tx.send((n, Ok(args))).unwrap();
                }
            }
            Ok(())
        });
        let program = "const all = await Promise.all([1, 2, 3].map((i) => tools.echo({i})));\n\
                       return all.map((a) => a.i);";
        let r = with_calls(program, limits(), Arc::default(), Calls { send, answers });
        assert_eq!(r.result.unwrap(), json!([1, 2, 3]));
        assert_eq!(r.calls, 3);
    }

    #[test]
    fn a_loop_after_an_await_ends_at_its_wall_time() {
        let short = Limits {
            wall: Duration::from_millis(300),
            ..limits()
        };
        let r = on_thread("await tools.add({a: 1, b: 1}); for (;;) {}", short, Arc::default());
        assert_eq!(r.result.unwrap_err(), RunError::Timeout(0));
        let r = on_thread(
            "await null; try { for (;;) {} } catch (_) {} return 1",
            short,
            Arc::default(),
        );
        assert_eq!(r.result.unwrap_err(), RunError::Timeout(0));
    }

    #[test]
    fn a_program_waiting_on_its_calls_ends_at_its_wall_time_or_when_cancelled() {
        let unanswered = || {
            let (tx, answers) = std::sync::mpsc::channel::<(u32, Result<Value, CallError>)>();
            let send = Box::new(move |_, _: &str, _| {
                let _keep = &tx; // the host is there, and never answers
                Ok(())
            });
            Calls { send, answers }
        };
        let short = Limits {
            wall: Duration::from_millis(300),
            ..limits()
        };
        let started = Instant::now();
        let r = with_calls("await tools.echo({})", short, Arc::default(), unanswered());
        assert_eq!(r.result.unwrap_err(), RunError::Timeout(0));
        assert!(started.elapsed() < Duration::from_secs(2));
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, Ordering::Relaxed);
        });
        let r = with_calls(
            "try { await tools.echo({}) } catch (_) {} return 1",
            limits(),
            cancelled,
            unanswered(),
        );
        assert_eq!(r.result.unwrap_err(), RunError::Cancelled);
    }

    fn failed(r: &Ran) -> String {
        match &r.result {
            Err(e) => e.to_string(),
            Ok(v) => panic!("expected a failure, got {v}"),
        }
    }

    #[test]
    fn a_program_calls_tools_and_returns_its_answer_with_its_logs() {
        let r = go("const a = await tools.add({a: 1, b: 2});\n\
                    const b = await tools.call('add', {a: a.sum, b: 10});\n\
                    console.log('sums', a.sum, b);\n\
                    return {total: b.sum, echoed: (await tools.echo({x: [1, 'two']})).x};");
        assert_eq!(r.result.unwrap(), json!({"total": 13, "echoed": [1, "two"]}));
        assert_eq!(r.logs, ["sums 3 {\"sum\":13}"]);
        assert_eq!(r.calls, 3);
        assert_eq!(go("return undefined").result.unwrap(), Value::Null);
        assert_eq!(go("console.log('x')").result.unwrap(), Value::Null);
    }

    #[test]
    fn a_failed_call_throws_an_error_the_program_may_catch() {
        let r = go("try { await tools.hidden({}) } catch (e) { return e.message }");
        assert_eq!(r.result.unwrap(), json!("Unknown tool: \"hidden\""));
        let r = go("await tools.hidden({})");
        assert_eq!(failed(&r), "Error: Unknown tool: \"hidden\"");
        let r = go("return await tools.call(42, {})");
        assert!(
            failed(&r).starts_with("TypeError: tools.call(name, args): name must be a string"),
            "{r:?}"
        );
        let r = go("return await tools.add([1])");
        assert!(failed(&r).contains("must be an object"), "{r:?}");
    }

    #[test]
    fn syntax_errors_and_throws_are_reported() {
        assert!(
            failed(&go("return )")).starts_with("SyntaxError"),
            "{:?}",
            go("return )")
        );
        assert_eq!(failed(&go("throw new RangeError('nope')")), "RangeError: nope");
        assert_eq!(failed(&go("throw 'plain'")), "the program threw plain");
        assert!(failed(&go("throw 5")).starts_with("the program threw a "));
    }

    #[test]
    fn an_infinite_loop_ends_at_its_wall_time_even_when_caught() {
        let mut l = limits();
        l.wall = Duration::from_millis(300);
        let started = Instant::now();
        let r = on_thread("while (true) {}", l, Arc::default());
        assert_eq!(r.result.unwrap_err(), RunError::Timeout(0));
        let r = on_thread("for (;;) { try { while (true) {} } catch (e) {} }", l, Arc::default());
        assert_eq!(r.result.unwrap_err(), RunError::Timeout(0));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn cancellation_stops_a_running_program() {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::Relaxed);
        });
        let mut l = limits();
        l.wall = Duration::from_secs(60);
        let started = Instant::now();
        let r = on_thread("while (true) {}", l, cancelled);
        assert_eq!(r.result.unwrap_err(), RunError::Cancelled);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn memory_bombs_and_a_gigabyte_string_end_at_the_memory_limit() {
        for code in [
            "const a = []; while (true) a.push(new Array(100000).fill(1));",
            "return 'x'.repeat((1 << 30) - 1).length",
            "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i, s: 'v' + i});",
        ] {
            // Wall time far off: on a loaded machine the Map's growth took longer than 2 s, and
            // the test is of the memory limit.
            let mut l = limits();
            l.wall = Duration::from_secs(60);
            let r = on_thread(code, l, Arc::default());
            assert_eq!(r.result.unwrap_err(), RunError::Memory(32), "{code}");
        }
        // Doubling a string reaches the engine's longest string first (its ropes cost little memory).
        let r = go("let s = 'x'; while (true) s = s + s; return s.length");
        assert_eq!(failed(&r), "InternalError: string too long");
        // The engine is gone with its memory; a next run starts afresh.
        assert_eq!(go("return 1 + 1").result.unwrap(), json!(2));
    }

    #[test]
    fn deep_recursion_is_a_range_error_not_a_crash() {
        let r = go("const f = (n) => f(n + 1) + 1; return f(0)");
        assert!(failed(&r).contains("stack"), "{r:?}");
        let r = go("return JSON.parse('['.repeat(1000000) + ']'.repeat(1000000))");
        assert!(r.result.is_err(), "{r:?}");
    }

    #[test]
    fn a_promise_nobody_resolves_is_reported_at_once() {
        let started = Instant::now();
        assert_eq!(
            go("await new Promise(() => {})").result.unwrap_err(),
            RunError::NeverSettles
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn too_many_calls_are_refused_past_the_limit() {
        let r = go("for (let i = 0; i < 100; i++) await tools.add({a: i, b: 1}); return 'done'");
        assert_eq!(
            failed(&r),
            "RangeError: too many tool calls: a run may make 5 (code.maxCalls)"
        );
        assert_eq!(r.calls, 5);
        // Caught, the program may still answer, but makes no more calls.
        let r = go("let n = 0; for (let i = 0; i < 100; i++) { try { await tools.add({a: 1, b: 1}); n++ } catch (e) {} } return n");
        assert_eq!(r.result.unwrap(), json!(5));
    }

    #[test]
    fn the_bridge_cannot_be_replaced_or_reached_around() {
        for code in [
            "tools = 1; return typeof tools",
            "globalThis.tools = {call: () => 1}; return typeof tools.call",
            "Object.defineProperty(globalThis, 'tools', {value: 1}); return 1",
            "tools.add = () => 'mine'; return await tools.add({a: 1, b: 1})",
            "return typeof __sieve_call",
            "console.log = null; return 1",
        ] {
            let r = go(code);
            match &r.result {
                Ok(v) => assert!(
                    v == &json!("object")
                        || v == &json!("function")
                        || v == &json!({"sum": 2})
                        || v == &json!("undefined")
                        || v == &json!(1),
                    "{code}: {v}"
                ),
                Err(e) => assert!(e.to_string().contains("TypeError"), "{code}: {e}"),
            }
        }
        assert_eq!(go("return typeof __sieve_call").result.unwrap(), json!("undefined"));
        // Assigning the frozen global fails (a TypeError here); caught, `tools` is still the bridge.
        let r = go("try { tools = 1 } catch (e) {} return typeof tools.call");
        assert_eq!(r.result.unwrap(), json!("function"));
        // Prototype pollution and a replaced JSON change only the program's world.
        let r = go(
            "Object.prototype.sum = 99; JSON.parse = () => ({sum: 1}); JSON.stringify = () => '{}';\n\
                    Array.prototype.map = null; Array.prototype.join = null;\n\
                    const r = await tools.add({a: 2, b: 3}); console.log('still', r.sum); return r.sum",
        );
        assert_eq!(r.result.unwrap(), json!(5));
        assert_eq!(r.logs, ["still 5"]);
        // A `then` on every object makes the program's own awaits hang: reported, nothing else.
        let r = go("Object.prototype.then = () => 'hijacked'; return await tools.add({a: 2, b: 3})");
        assert_eq!(r.result.unwrap_err(), RunError::NeverSettles);
        let r = go("Object.prototype.toJSON = function () { return 'x' }; return {a: 1}");
        assert_eq!(r.result.unwrap(), json!("x"));
        // Nothing outside: no modules, no std/os, no timers, no fetch.
        for (code, word) in [
            ("return await import('os')", "Error"),
            (
                "return typeof std + typeof os + typeof setTimeout + typeof fetch + typeof require",
                "",
            ),
        ] {
            let r = go(code);
            match r.result {
                Ok(v) => assert_eq!(v, json!("undefinedundefinedundefinedundefinedundefined")),
                Err(e) => assert!(e.to_string().contains(word), "{code}: {e}"),
            }
        }
        // eval compiles inside the same sandbox: its calls go through the same bridge.
        let r = go("return await eval('tools.add({a: 1, b: 1})')");
        assert_eq!(r.result.unwrap(), json!({"sum": 2}));
        let r = go("return new Function('return typeof __sieve_call')()");
        assert_eq!(r.result.unwrap(), json!("undefined"));
    }

    #[test]
    fn answers_and_logs_are_bounded_and_control_characters_stay_data() {
        let r = go("return 'y'.repeat(20000)");
        assert_eq!(r.result.unwrap_err(), RunError::TooLarge(20002, 10_000));
        let r = go("for (let i = 0; i < 5000; i++) console.log('line ' + i + ' ' + 'z'.repeat(100)); return 1");
        assert_eq!(r.result.unwrap(), json!(1));
        assert!(r.logs.len() <= MAX_LOG_LINES + 1);
        assert!(r.logs.last().unwrap().starts_with("… more logs left out"));
        assert!(r.logs.iter().map(String::len).sum::<usize>() <= MAX_LOG_BYTES + 200);
        let r = go("console.log('x'.repeat(10000)); return 1");
        assert!(r.logs[0].len() <= MAX_LOG_LINE + 3);
        let r = go("console.log('a\\u0000b\\r\\n\\r\\ndata: {}'); return 'c\\u0001\\u001b[31m\\n\\nevent: x'");
        assert_eq!(r.result.unwrap(), json!("c\u{1}\u{1b}[31m\n\nevent: x"));
        assert_eq!(r.logs, ["a\u{0}b\r\n\r\ndata: {}"]);
        // A value that is not JSON.
        let r = go("const a = {}; a.self = a; return a");
        assert!(matches!(r.result, Err(RunError::NotJson(_))), "{r:?}");
        assert!(go("return 10n").result.is_err());
    }
}
