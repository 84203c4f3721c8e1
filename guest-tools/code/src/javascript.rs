//! JavaScript: one script, run in a fresh QuickJS runtime: the prelude sets up
//! `tools`, `ToolError` and `console`, the script runs as the body of an
//! async function, and its result comes back as JSON with what it logged.
//!
//! The runtime and its context live for one call: nothing a script leaves
//! behind reaches the next one (the host also gives every call a fresh
//! instance). `tools.NAME(args)` starts the call at once and returns a
//! promise of its outcome: calls start in the order the script makes them
//! (which is what makes its run repeatable) and run together while the
//! script goes on. When the script has nothing left to do but wait, the
//! runner waits for the host and settles the promises of the calls that
//! ended. A script ends only once every call it started has.

use rquickjs::context::EvalOptions;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Module, Object, Runtime, Value,
};
use std::cell::RefCell;
use std::rc::Rc;

use crate::outcome::{Caller, Console, Failure, Outcome, SCRIPT_ERROR, with_console};

/// The calls started and not yet settled, in the order they started.
type Outstanding = Rc<RefCell<Vec<u32>>>;

/// The prelude (`prelude.js`): a function of the two native functions
/// that defines the script's globals, as the bytecode of a module whose
/// default export it is (compiled by the build script with QuickJS of this
/// same version).
const PRELUDE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/prelude.qjsbc"));

/// QuickJS's own stack limit. A deeply recursive script gets a catchable
/// `RangeError` while the limit is well inside the runtime's 1 MiB C stack
/// (the host's wasm stack bound still stops anything deeper as
/// `stack_overflow`).
const MAX_STACK_BYTES: usize = 256 * 1024;

/// What the model reads first; the host appends the API.
pub const DESCRIPTION: &str = "Runs JavaScript that calls the tools declared below and returns one result. \
The script is the body of an async function: `return` gives the result (any JSON value), \
`await tools.NAME({...})` calls a tool and gives its value (the typed object declared below, \
never text), and a failed call throws a `ToolError` with `code`, `message` and `tool` \
(catch it to go on). `console.log` lines come back with the result. \
Every call is checked, limited and approved exactly as if made directly; \
file changes of the whole script are committed together when it returns, and none when it throws. \
Prefer one script over many calls: read, filter and summarize inside it, and return only what you need.";

/// The input schema: the script.
pub const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{"code":{"type":"string","description":"JavaScript: the body of an async function. Use `await tools.NAME({...})` and `return` a JSON value.","minLength":1}},"required":["code"],"additionalProperties":false}"#;

/// Runs `code` (the body of an async function) with `call` behind
/// `tools.NAME(args)`.
pub fn run(code: &str, call: Box<Caller>) -> Result<Outcome, Failure> {
    let engine = |e: rquickjs::Error| Failure {
        code: SCRIPT_ERROR.into(),
        message: format!("the JavaScript engine could not start: {e}"),
        info: None,
    };
    let rt = Runtime::new().map_err(engine)?;
    rt.set_max_stack_size(MAX_STACK_BYTES);
    let cx = Context::full(&rt).map_err(engine)?;
    let console = Rc::new(RefCell::new(Console::default()));
    let host = Rc::new(RefCell::new(call));
    let outstanding = Outstanding::default();
    let outcome =
        cx.with(|ctx| {
            let settle = install(&ctx, host.clone(), outstanding.clone(), console.clone())
                .map_err(|e| Failure {
                    code: SCRIPT_ERROR.into(),
                    message: format!("the script's globals could not be set up: {e}"),
                    info: None,
                })?;
            let waiter = Waiter {
                host: &host,
                outstanding: &outstanding,
                settle,
            };
            evaluate(&ctx, code, &waiter)
        });
    let outcome = with_console(outcome, &mut console.borrow_mut());
    // A component's instance serves one call and is then dropped whole:
    // freeing every object of the runtime first (a tenth of an empty
    // script's time) would be work for nothing.
    #[cfg(target_arch = "wasm32")]
    {
        std::mem::forget(cx);
        std::mem::forget(rt);
    }
    outcome
}

/// Runs the prelude with the two native functions; its `settle`.
fn install<'js>(
    ctx: &Ctx<'js>,
    host: Rc<RefCell<Box<Caller>>>,
    outstanding: Outstanding,
    console: Rc<RefCell<Console>>,
) -> rquickjs::Result<Function<'js>> {
    let native_start = Function::new(ctx.clone(), move |name: String, arguments: String| {
        let handle = host.borrow_mut().start(&name, &arguments);
        outstanding.borrow_mut().push(handle);
        handle
    })?;
    let native_console = Function::new(ctx.clone(), move |level: String, text: String| {
        console.borrow_mut().push(&level, &text);
    })?;
    // SAFETY: the bytecode is this crate's own, written by the build script
    // with the QuickJS this crate links (the same rquickjs version), never
    // anything a script or the host supplies.
    let module = unsafe { Module::load(ctx.clone(), PRELUDE) }?;
    let (module, evaluated) = module.eval()?;
    evaluated.finish::<()>()?;
    let prelude: Function = module.get("default")?;
    prelude.call::<_, Function>((native_start, native_console))
}

/// The name the script's frames have in stack traces.
const SCRIPT_FILE: &str = "script.js";

/// Global, sloppy code named `file` (a script is the body of a function
/// the model wrote: it may opt into strict mode itself).
fn options(file: &str) -> EvalOptions {
    let mut o = EvalOptions::default();
    o.global = true;
    o.strict = false;
    o.backtrace_barrier = true;
    o.promise = false;
    o.filename = Some(file.into());
    o
}

/// What waits for the host: the calls outstanding, and the prelude's
/// `settle` for their outcomes.
struct Waiter<'a, 'js> {
    host: &'a Rc<RefCell<Box<Caller>>>,
    outstanding: &'a Outstanding,
    settle: Function<'js>,
}

impl Waiter<'_, '_> {
    /// Waits for the host until some outstanding calls have ended, and
    /// settles their promises; `false` when none was outstanding.
    fn wait(&self) -> rquickjs::Result<bool> {
        let handles = self.outstanding.borrow().clone();
        if handles.is_empty() {
            return Ok(false);
        }
        let ended = self.host.borrow_mut().wait(&handles);
        if ended.is_empty() {
            return Ok(false);
        }
        for (handle, outcome) in ended {
            self.outstanding.borrow_mut().retain(|h| *h != handle);
            let (ok, text) = match outcome {
                Ok(value) => (true, value),
                Err(f) => {
                    let failure = serde_json::json!({
                        "code": f.code,
                        "message": f.message,
                        "info": f.info,
                    });
                    (false, failure.to_string())
                }
            };
            self.settle.call::<_, ()>((handle, ok, text))?;
        }
        Ok(true)
    }
}

/// Evaluates the script and settles its promise (waiting for the host
/// whenever only its calls are left to wait for), then waits for every
/// call it started and left behind; its result as JSON.
fn evaluate(ctx: &Ctx<'_>, code: &str, waiter: &Waiter<'_, '_>) -> Result<String, Failure> {
    // The body goes right after the brace: line N of the script is line N
    // of what QuickJS reports.
    let source = format!("(async () => {{{code}\n}})()");
    let value: Value = ctx
        .eval_with_options(source, options(SCRIPT_FILE))
        .catch(ctx)
        .map_err(uncaught)?;
    let settled = match value.as_promise() {
        Some(p) => loop {
            match p.finish::<Value>() {
                Err(rquickjs::Error::WouldBlock) => {
                    if !waiter.wait().catch(ctx).map_err(uncaught)? {
                        return Err(Failure::script(
                            "the script never finished: it awaits a promise that nothing settles \
                             (only tool calls are asynchronous here; there are no timers)"
                                .into(),
                            serde_json::json!({}),
                        ));
                    }
                }
                other => break other.catch(ctx).map_err(uncaught)?,
            }
        },
        None => value,
    };
    // Calls it started and never awaited end before it does: what they
    // change is the script's, and a script's changes are all known when
    // it ends.
    while waiter.wait().catch(ctx).map_err(uncaught)? {
        while ctx.execute_pending_job() {}
    }
    if settled.is_undefined() {
        return Ok("null".into());
    }
    match ctx.json_stringify(settled).catch(ctx) {
        Ok(Some(s)) => s.to_string().map_err(|e| {
            Failure::script(
                format!("the script's result could not be read: {e}"),
                serde_json::json!({}),
            )
        }),
        // A function or a symbol: nothing JSON can hold.
        Ok(None) => Ok("null".into()),
        Err(e) => Err(Failure::script(
            format!("the script's result is not JSON: {}", describe(&e)),
            serde_json::json!({}),
        )),
    }
}

/// What an exception that left the script says, for the model.
fn uncaught(e: CaughtError<'_>) -> Failure {
    let mut info = serde_json::Map::new();
    let message = match &e {
        CaughtError::Exception(x) => {
            let obj: &Object = x.as_object();
            let name: String = obj.get("name").unwrap_or_default();
            let text = x.message().unwrap_or_default();
            if let Some(line) = x.stack().as_deref().and_then(script_line) {
                info.insert("line".into(), line.into());
            }
            if name == "ToolError" {
                let code: String = obj.get("code").unwrap_or_default();
                let tool: String = obj.get("tool").unwrap_or_default();
                info.insert("toolCode".into(), code.clone().into());
                info.insert("tool".into(), tool.clone().into());
                format!(
                    "the script did not catch a failed tool call: tools.{tool} failed [{code}]: {text}"
                )
            } else {
                format!("uncaught {name}: {text}")
            }
        }
        other => format!("uncaught exception: {}", describe(other)),
    };
    let message = match info.get("line") {
        Some(line) => format!("{message} (script line {line})"),
        None => message,
    };
    Failure::script(message, serde_json::Value::Object(info))
}

/// A caught error in one line.
fn describe(e: &CaughtError<'_>) -> String {
    match e {
        CaughtError::Error(e) => e.to_string(),
        CaughtError::Exception(x) => x.message().unwrap_or_else(|| "an exception".into()),
        CaughtError::Value(v) => match v.as_string().and_then(|s| s.to_string().ok()) {
            Some(s) => format!("{s:?}"),
            None => format!("a {} value", v.type_name()),
        },
    }
}

/// The script line of the innermost frame of `stack` that is in the
/// script (`script.js:LINE:COLUMN`; the prelude's frames are another
/// file's).
fn script_line(stack: &str) -> Option<u64> {
    let marker = format!("{SCRIPT_FILE}:");
    let at = stack.find(&marker)? + marker.len();
    let rest = &stack[at..];
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::MAX_CONSOLE_BYTES;
    use crate::outcome::testing::{self, denied, echo, failure, result};
    use serde_json::{Value as Json, json};

    /// Runs `code` against tools that answer from `answer`, recording the
    /// calls made.
    fn run_with(
        code: &str,
        answer: impl Fn(&str, &Json) -> Result<Json, Failure> + 'static,
    ) -> (Result<Outcome, Failure>, Vec<(String, Json)>) {
        testing::run_with(run, code, answer)
    }

    #[test]
    fn return_gives_the_result_and_tools_give_their_values() {
        let (out, calls) = run_with(
            "const r = await tools.read({path: 'a.txt'});\nreturn {got: r.tool, n: 1 + 1};",
            echo,
        );
        assert_eq!(result(&out), json!({"got": "read", "n": 2}));
        assert_eq!(calls, [("read".to_owned(), json!({"path": "a.txt"}))]);
    }

    #[test]
    fn nothing_returned_is_null_and_calls_default_to_no_arguments() {
        let (out, calls) = run_with("await tools.list();", echo);
        assert_eq!(result(&out), json!(null));
        assert_eq!(calls, [("list".to_owned(), json!({}))]);
    }

    #[test]
    fn a_failed_call_is_a_catchable_tool_error_with_its_code() {
        let (out, _) = run_with(
            "try { await tools.read({path: '/etc/passwd'}); return 'read it'; } \
             catch (e) { return [e instanceof ToolError, e.name, e.code, e.tool, e.info.pointer, e.message]; }",
            denied,
        );
        assert_eq!(
            result(&out),
            json!([
                true,
                "ToolError",
                "path_denied",
                "read",
                "/path",
                "`/etc/passwd` is outside the granted directories"
            ])
        );
    }

    #[test]
    fn an_uncaught_failure_fails_the_script_naming_the_call_and_line() {
        let (out, _) = run_with(
            "const x = 1;\nawait tools.read({path: '/etc/passwd'});",
            denied,
        );
        let f = failure(&out);
        assert_eq!(f.code, SCRIPT_ERROR);
        assert!(
            f.message.contains("tools.read failed [path_denied]"),
            "{}",
            f.message
        );
        assert!(f.message.contains("script line 2"), "{}", f.message);
        let info = f.info.as_ref().expect("info");
        assert_eq!(info["toolCode"], "path_denied");
        assert_eq!(info["line"], 2);
    }

    #[test]
    fn syntax_errors_and_exceptions_are_script_errors() {
        for (code, want) in [
            ("return (;", "SyntaxError"),
            ("null.x;", "TypeError"),
            ("throw 'plain';", "\"plain\""),
            ("throw new RangeError('too far');", "RangeError: too far"),
        ] {
            let (out, _) = run_with(code, echo);
            let f = failure(&out);
            assert_eq!(f.code, SCRIPT_ERROR, "{code}");
            assert!(f.message.contains(want), "{code}: {}", f.message);
        }
    }

    #[test]
    fn the_console_is_returned_and_bounded() {
        let (out, _) = run_with(
            "console.log('a', 1, {b: 2}); console.warn('careful'); return 3;",
            echo,
        );
        let o = out.expect("ok");
        assert_eq!(o.console, ["a 1 {\"b\":2}", "[warn] careful"]);
        let (out, _) = run_with(
            "for (let i = 0; i < 100000; i++) console.log('x'.repeat(100)); return 1;",
            echo,
        );
        let o = out.expect("ok");
        let kept: usize = o.console.iter().map(String::len).sum();
        assert!(kept <= MAX_CONSOLE_BYTES + 200, "{kept}");
        assert!(
            o.console
                .last()
                .is_some_and(|l| l.contains("more console lines not kept"))
        );
    }

    #[test]
    fn a_failed_script_keeps_what_it_logged() {
        let (out, _) = run_with("console.log('step 1'); throw new Error('boom');", echo);
        let f = failure(&out);
        assert_eq!(f.info.as_ref().expect("info")["console"], json!(["step 1"]));
    }

    #[test]
    fn a_script_that_never_settles_says_so() {
        let (out, _) = run_with("await new Promise(() => {});", echo);
        assert!(failure(&out).message.contains("never finished"));
    }

    #[test]
    fn a_result_that_is_not_json_is_refused() {
        let (out, _) = run_with("const a = {}; a.a = a; return a;", echo);
        assert!(
            failure(&out).message.contains("not JSON"),
            "{:?}",
            failure(&out)
        );
        let (out, _) = run_with("return 10n;", echo);
        assert!(failure(&out).message.contains("not JSON"));
    }

    #[test]
    fn the_bridge_survives_a_script_that_rewrites_the_builtins() {
        // The script poisons what a naive bridge would use; the host still
        // receives the name and the arguments as written.
        let (out, calls) = run_with(
            "JSON.stringify = () => '{\"path\":\"/etc/shadow\"}';\n\
             Object.prototype.toJSON = undefined;\n\
             Promise.prototype.then = function () { throw new Error('hijacked'); };\n\
             Array.prototype.map = () => [];\n\
             try { tools.read = () => 'forged'; } catch (e) {}\n\
             try { globalThis.tools = null; } catch (e) {}\n\
             const p = tools.read({path: 'a.txt'});\n\
             return typeof p;",
            echo,
        );
        assert_eq!(result(&out), json!("object"));
        assert_eq!(calls, [("read".to_owned(), json!({"path": "a.txt"}))]);
    }

    #[test]
    fn arguments_that_are_not_an_object_never_reach_the_host() {
        let (out, calls) = run_with(
            "const codes = [];\n\
             for (const a of [1, 'x', [1], null]) {\n\
               try { await tools.read(a); } catch (e) { codes.push(e.code); }\n\
             }\n\
             const c = {}; c.c = c;\n\
             try { await tools.read(c); } catch (e) { codes.push(e.code); }\n\
             return codes;",
            echo,
        );
        assert_eq!(result(&out), json!(vec!["invalid_arguments"; 5]));
        assert!(calls.is_empty());
    }

    #[test]
    fn deep_recursion_is_a_catchable_range_error() {
        let (out, _) = run_with(
            "function f(n) { return n === 0 ? 0 : 1 + f(n - 1); }\n\
             try { f(1e7); return 'no limit'; } catch (e) { return e.name; }",
            echo,
        );
        assert_eq!(result(&out), json!("RangeError"));
    }

    #[test]
    fn calls_run_in_the_order_the_script_makes_them() {
        let (out, calls) = run_with(
            "const [a, b] = await Promise.all([tools.one({}), tools.two({})]);\n\
             await tools.three({after: [a.tool, b.tool]});\n\
             return 'ok';",
            echo,
        );
        assert_eq!(result(&out), json!("ok"));
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["one", "two", "three"]);
        assert_eq!(calls[2].1, json!({"after": ["one", "two"]}));
    }

    #[test]
    fn script_lines_come_from_the_innermost_script_frame() {
        assert_eq!(
            script_line(
                "    at call (prelude.js:40:9)\n    at f (script.js:12:5)\n    at <anonymous> (script.js:3:1)"
            ),
            Some(12)
        );
        assert_eq!(script_line("    at <native>"), None);
    }
}
