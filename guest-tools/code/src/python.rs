//! Python: one script, run in a fresh Monty interpreter. `tools` is a host
//! object whose methods are the tools, `ToolError` is `OSError`, `print`
//! writes the console, and the value of the script's last expression is
//! its result, as JSON.
//!
//! Monty suspends at every call of a host method and hands the call here.
//! The call is started at once (the host takes calls in the order the
//! script makes them, which is what makes its run repeatable) and the
//! script gets a future of its value: `await tools.read(path="a")` gives
//! the value, and `asyncio.gather(...)` of several calls runs them
//! together. When every task of the script waits, the runner waits for
//! the host and hands Monty the outcomes that came. A script ends only
//! once every call it started has.
//!
//! What Monty cannot do shapes two things here. A script's classes cannot
//! inherit, and an exception carries its type and message only, so a
//! failed call raises `OSError` (bound as `ToolError`, the family of
//! failed I/O, which a tool call is) with the code, the tool and the
//! message in its text: `[path_denied] tools.read: …`. And a script has
//! no files, clock or environment of its own: what would reach the
//! operating system raises `PermissionError`, so every effect goes through
//! a tool.

use std::borrow::Cow;
use std::collections::HashMap;

use monty::{MontyRepl, ReplProgress};
use monty_types::{
    CompileOptions, DictPairs, ExcType, ExtFunctionResult, MontyClassInstance, MontyClassType,
    MontyException, MontyObject, MontyUuid, NameLookupResult, PrintWriter, PrintWriterCallback,
    ResourceLimits, ResourceTracker,
};

use crate::outcome::{Caller, Console, Failure, Outcome, with_console};

/// What the model reads first; the host appends the API.
pub const DESCRIPTION: &str = "Runs Python that calls the tools declared below and returns one result. \
The script is a module with top-level `await`; its last expression is the result (a JSON value). \
`await tools.NAME(arg=...)` gives a tool's value (the dict declared below, never text); \
a failed call raises `ToolError`, its message starting `[code] tools.NAME:` (catch it to go on). \
`print()` lines come back with the result. \
Every call is checked, limited and approved exactly as if made directly; \
file changes of the whole script are committed together when it ends, and none when it raises. \
This is Monty, a Python subset: no class inheritance or `yield`, no files or clock but the tools, \
imports only of asyncio, json, re, math, datetime, itertools, functools, collections. \
Prefer one script over many calls: read, filter and summarize inside it, and end with only what you need.";

/// The input schema: the script.
pub const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{"code":{"type":"string","description":"Python: a module with top-level `await`. Use `await tools.NAME(arg=...)`; the last expression is the result (a JSON value).","minLength":1}},"required":["code"],"additionalProperties":false}"#;

/// The name the script's frames have in tracebacks.
const SCRIPT_FILE: &str = "script.py";

/// Run before the script, in its module: `ToolError` as a name of the
/// script's own (it may rebind it).
const PRELUDE: &str = "ToolError = OSError";

/// The identity of the `tools` object (any fixed value: the script's
/// interpreter holds one host object).
const TOOLS_ID: MontyUuid = MontyUuid::from_u128(0x7001_5000_0000_0000_0000_0000_0000_0001);

/// Deepest nesting of a value converted to or from JSON: a script can
/// build a list a million deep, and the conversion must not overflow the
/// stack (the host would stop it as `stack_overflow`, naming no cause).
const MAX_DEPTH: usize = 256;

/// Python's own call depth limit: a deeply recursive script gets a
/// catchable `RecursionError`.
const MAX_RECURSION: usize = 400;

/// Runs `code` (a module with top-level `await`) with `call` behind
/// `tools.NAME(...)`.
pub fn run(code: &str, mut call: Box<Caller>) -> Result<Outcome, Failure> {
    let mut console = PrintLines::default();
    let outcome = evaluate(code, &mut call, &mut console);
    console.flush();
    with_console(outcome, &mut console.console)
}

/// Runs the prelude and then the script, answering its suspensions.
fn evaluate(code: &str, host: &mut Box<Caller>, out: &mut PrintLines) -> Result<String, Failure> {
    let mut calls = Calls::default();
    let outcome = interpret(code, host, &mut calls, out);
    // Calls it started and never awaited end before it does.
    calls.drain(host);
    outcome
}

/// A call of the script's, by Monty's id for it.
enum Call {
    /// Started in the host: its handle, and the tool's name.
    Started(u32, String),
    /// Ended without reaching the host (its arguments were refused).
    Ended(ExtFunctionResult),
}

/// The calls of a script whose outcome Monty has not had yet.
#[derive(Default)]
struct Calls(HashMap<u32, Call>);

impl Calls {
    /// The outcomes of the pending calls `ids` that have ended, waiting
    /// for the host when none has yet (empty: none of them is known).
    fn settle(&mut self, ids: &[u32], host: &mut Box<Caller>) -> Vec<(u32, ExtFunctionResult)> {
        let ready: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|id| matches!(self.0.get(id), Some(Call::Ended(_))))
            .collect();
        if !ready.is_empty() {
            return ready
                .into_iter()
                .filter_map(|id| match self.0.remove(&id) {
                    Some(Call::Ended(r)) => Some((id, r)),
                    _ => None,
                })
                .collect();
        }
        let started: Vec<(u32, u32)> = ids
            .iter()
            .filter_map(|id| match self.0.get(id) {
                Some(Call::Started(handle, _)) => Some((*id, *handle)),
                _ => None,
            })
            .collect();
        if started.is_empty() {
            return Vec::new();
        }
        let handles: Vec<u32> = started.iter().map(|(_, h)| *h).collect();
        let mut out = Vec::new();
        for (handle, outcome) in host.wait(&handles) {
            let Some(&(id, _)) = started.iter().find(|(_, h)| *h == handle) else {
                continue;
            };
            if let Some(Call::Started(_, name)) = self.0.remove(&id) {
                out.push((id, answered(&name, outcome)));
            }
        }
        out
    }

    /// Waits for every call still started.
    fn drain(&mut self, host: &mut Box<Caller>) {
        loop {
            let handles: Vec<u32> = self
                .0
                .values()
                .filter_map(|c| match c {
                    Call::Started(h, _) => Some(*h),
                    Call::Ended(_) => None,
                })
                .collect();
            if handles.is_empty() {
                return;
            }
            let ended = host.wait(&handles);
            if ended.is_empty() {
                return;
            }
            self.0.retain(|_, c| match c {
                Call::Started(h, _) => !ended.iter().any(|(e, _)| e == h),
                Call::Ended(_) => true,
            });
        }
    }
}

/// Runs the prelude and then the script, answering its suspensions.
fn interpret(
    code: &str,
    host: &mut Box<Caller>,
    calls: &mut Calls,
    out: &mut PrintLines,
) -> Result<String, Failure> {
    let limits = ResourceLimits::default().max_recursion_depth(MAX_RECURSION);
    let mut repl = MontyRepl::new(
        SCRIPT_FILE,
        ResourceTracker::new(limits),
        CompileOptions::default(),
    );
    repl.feed_run(PRELUDE, Vec::new(), PrintWriter::Disabled)
        .map_err(|e| {
            Failure::script(
                format!("the script's globals could not be set up: {e}"),
                serde_json::json!({}),
            )
        })?;
    let tools = MontyObject::ClassInstance(Box::new(MontyClassInstance {
        class_type: MontyClassType {
            name: "Tools".into(),
            id: TOOLS_ID,
            host_defined: true,
            is_dataclass: false,
            attrs: DictPairs::default(),
        },
        instance_id: TOOLS_ID,
        attrs: DictPairs::default(),
    }));
    let mut progress = repl.feed_start(
        code,
        vec![("tools".into(), tools)],
        PrintWriter::Callback(out),
    );
    loop {
        let step = match progress {
            Err(e) => return Err(uncaught(&e.error)),
            Ok(step) => step,
        };
        progress = match step {
            ReplProgress::Complete { value, .. } => return result(&value),
            ReplProgress::FunctionCall(c) => {
                let tool = match (&c.object_id, c.function_name.as_str()) {
                    (Some(id), name) if *id == TOOLS_ID => Some(name.to_owned()),
                    // A tool method taken as a value (`f = tools.read`) and
                    // called later.
                    (None, name) => name.strip_prefix(TOOL_PREFIX).map(str::to_owned),
                    _ => None,
                };
                match tool {
                    Some(name) => {
                        let call = match arguments(&c.args, &c.kwargs) {
                            Ok(args) => Call::Started(host.start(&name, &args.to_string()), name),
                            Err(message) => {
                                Call::Ended(tool_error(&name, "invalid_arguments", &message, None))
                            }
                        };
                        calls.0.insert(c.call_id, call);
                        c.resume_pending(PrintWriter::Callback(out))
                    }
                    // A name Monty would leave to the host (`eval`, say):
                    // nothing here is one.
                    None => {
                        let missing = MontyException::new(
                            ExcType::NameError,
                            Some(format!("name '{}' is not defined", c.function_name)),
                        );
                        c.resume(
                            ExtFunctionResult::Error(missing),
                            PrintWriter::Callback(out),
                        )
                    }
                }
            }
            ReplProgress::ResolveFutures(f) => {
                let results = calls.settle(f.pending_call_ids(), host);
                if results.is_empty() {
                    return Err(Failure::script(
                        "the script never finished: it awaits what nothing settles".into(),
                        serde_json::json!({}),
                    ));
                }
                f.resume(results, PrintWriter::Callback(out))
            }
            ReplProgress::NameLookup(l) => {
                let answer = match l.object_id() {
                    // `tools.NAME` read as a value: a function that calls it.
                    Some(id) if id == TOOLS_ID && !l.name.starts_with('_') => {
                        NameLookupResult::Value(MontyObject::Function {
                            name: format!("{TOOL_PREFIX}{}", l.name),
                            docstring: None,
                        })
                    }
                    _ => NameLookupResult::Undefined,
                };
                l.resume(answer, PrintWriter::Callback(out))
            }
            ReplProgress::OsCall(o) => {
                let denied = MontyException::new(
                    ExcType::PermissionError,
                    Some(
                        "a script has no files, clock or environment of its own: \
                         call the tools for them"
                            .into(),
                    ),
                );
                o.resume(ExtFunctionResult::Error(denied), PrintWriter::Callback(out))
            }
        };
    }
}

/// The name a tool method has when it is taken as a value.
const TOOL_PREFIX: &str = "tools.";

/// A call's outcome as its future's: the value, or a `ToolError`.
fn answered(name: &str, outcome: Result<String, Failure>) -> ExtFunctionResult {
    match outcome {
        Ok(value) => match serde_json::from_str::<serde_json::Value>(&value) {
            Ok(v) => ExtFunctionResult::Return(from_json(&v, 0)),
            Err(e) => tool_error(
                name,
                "output_invalid",
                &format!("the host's answer is not JSON: {e}"),
                None,
            ),
        },
        Err(f) => tool_error(name, &f.code, &f.message, f.info.as_ref()),
    }
}

/// Most bytes of a failure's details in a `ToolError`'s message.
const MAX_INFO_BYTES: usize = 1024;

/// A failed call as the script sees it: `ToolError` (`OSError`) with
/// `[code] tools.NAME: message`, and the details as compact JSON when
/// there are any (cut at [`MAX_INFO_BYTES`]).
fn tool_error(
    name: &str,
    code: &str,
    message: &str,
    info: Option<&serde_json::Value>,
) -> ExtFunctionResult {
    let mut text = format!("[{code}] tools.{name}: {message}");
    if let Some(info) = info.filter(|i| !i.is_null()) {
        let mut details = info.to_string();
        if details.len() > MAX_INFO_BYTES {
            let mut cut = MAX_INFO_BYTES;
            while !details.is_char_boundary(cut) {
                cut -= 1;
            }
            details.truncate(cut);
            details.push('…');
        }
        text.push_str(&format!(" (info: {details})"));
    }
    ExtFunctionResult::Error(MontyException::new(ExcType::OSError, Some(text)))
}

/// A call's arguments as one JSON object: its keywords, or one dict
/// passed alone (as in JavaScript), or nothing.
fn arguments(
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Result<serde_json::Value, String> {
    match (args, kwargs) {
        ([], kwargs) => {
            let mut object = serde_json::Map::new();
            for (k, v) in kwargs {
                let MontyObject::String(key) = k else {
                    return Err("keyword names are strings".into());
                };
                object.insert(key.clone(), to_json(v, 0)?);
            }
            Ok(serde_json::Value::Object(object))
        }
        ([dict @ MontyObject::Dict(_)], []) => to_json(dict, 0),
        _ => Err("a tool takes keyword arguments (or one dict of them)".into()),
    }
}

/// A JSON value as a Python one.
fn from_json(v: &serde_json::Value, depth: usize) -> MontyObject {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return MontyObject::None;
    }
    match v {
        J::Null => MontyObject::None,
        J::Bool(b) => MontyObject::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => MontyObject::Int(i),
            (None, Some(u), _) => MontyObject::BigInt(u.into()),
            (None, None, Some(f)) => MontyObject::Float(f),
            _ => MontyObject::None,
        },
        J::String(s) => MontyObject::String(s.clone()),
        J::Array(items) => {
            MontyObject::List(items.iter().map(|i| from_json(i, depth + 1)).collect())
        }
        J::Object(o) => MontyObject::Dict(
            o.iter()
                .map(|(k, v)| (MontyObject::String(k.clone()), from_json(v, depth + 1)))
                .collect::<Vec<_>>()
                .into(),
        ),
    }
}

/// A Python value as JSON, or why it is not one.
fn to_json(v: &MontyObject, depth: usize) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return Err(format!("it is nested deeper than {MAX_DEPTH}"));
    }
    let list = |items: &[MontyObject]| -> Result<J, String> {
        items
            .iter()
            .map(|i| to_json(i, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(J::Array)
    };
    Ok(match v {
        MontyObject::None => J::Null,
        MontyObject::Bool(b) => J::Bool(*b),
        MontyObject::Int(i) => J::from(*i),
        MontyObject::BigInt(b) => match u64::try_from(b) {
            Ok(u) => J::from(u),
            Err(_) => {
                return Err(format!(
                    "the integer {} does not fit JSON's numbers (give it as str())",
                    clip(&b.to_string())
                ));
            }
        },
        MontyObject::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => J::Number(n),
            None => return Err(format!("the float {f} is not a JSON number")),
        },
        MontyObject::String(s) => J::String(s.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => list(items)?,
        MontyObject::NamedTuple { values, .. } => list(values)?,
        MontyObject::Dict(pairs) => {
            let mut object = serde_json::Map::new();
            for (k, v) in pairs {
                let MontyObject::String(key) = k else {
                    return Err(format!(
                        "a dict key is {} (JSON's keys are strings)",
                        clip(&k.to_string())
                    ));
                };
                object.insert(key.clone(), to_json(v, depth + 1)?);
            }
            J::Object(object)
        }
        other => {
            return Err(format!("{} is not a JSON value", clip(&other.to_string())));
        }
    })
}

/// At most 60 characters of `s`, for a message.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// The script's last value as the result's JSON.
fn result(value: &MontyObject) -> Result<String, Failure> {
    to_json(value, 0).map(|v| v.to_string()).map_err(|why| {
        Failure::script(
            format!("the script's result is not JSON: {why}"),
            serde_json::json!({}),
        )
    })
}

/// What an exception that left the script says, for the model: its type
/// and message, and the line of the script it was raised on.
fn uncaught(e: &MontyException) -> Failure {
    let mut info = serde_json::Map::new();
    let line = e
        .traceback()
        .iter()
        .rev()
        // The REPL names its snippets `<python-input-N>`; the prelude
        // raises nothing, so a snippet's frame is the script's.
        .find(|f| f.filename == SCRIPT_FILE || f.filename.starts_with("<python-input"))
        .map(|f| f.start.line);
    if let Some(line) = line {
        info.insert("line".into(), line.into());
    }
    let text = e.message().unwrap_or_default();
    let message = match (e.exc_type(), tool_failure(text)) {
        (ExcType::OSError, Some((code, tool))) => {
            info.insert("toolCode".into(), code.into());
            info.insert("tool".into(), tool.into());
            format!("the script did not catch a failed tool call: {text}")
        }
        _ => format!("uncaught {}", e.summary()),
    };
    let message = match line {
        Some(line) => format!("{message} (script line {line})"),
        None => message,
    };
    Failure::script(message, serde_json::Value::Object(info))
}

/// The code and the tool of a `ToolError`'s message, `[code] tools.NAME: …`.
fn tool_failure(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix('[')?;
    let (code, rest) = rest.split_once("] tools.")?;
    let (tool, _) = rest.split_once(':')?;
    Some((code, tool))
}

/// `print()` as console lines: text is gathered up to a newline.
#[derive(Default)]
struct PrintLines {
    console: Console,
    line: String,
}

impl PrintLines {
    /// Ends the line being written, if any.
    fn flush(&mut self) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.console.push("log", &line);
        }
    }
}

impl PrintWriterCallback for PrintLines {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        for (i, part) in output.split('\n').enumerate() {
            if i > 0 {
                self.end_line();
            }
            self.append(part);
        }
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        if end == '\n' {
            self.end_line();
        } else {
            let mut buf = [0u8; 4];
            self.append(end.encode_utf8(&mut buf));
        }
        Ok(())
    }
}

impl PrintLines {
    /// Adds to the line being written: nothing once the console is full
    /// (a script printing in a loop holds no memory for it), and no more
    /// of one line than the console keeps.
    fn append(&mut self, text: &str) {
        if self.console.full() || self.line.len() > crate::outcome::MAX_CONSOLE_BYTES {
            return;
        }
        self.line.push_str(text);
    }

    /// A newline: the line goes to the console (an empty one too).
    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.console.push("log", &line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::testing::{self, denied, echo, failure, result};
    use crate::outcome::{MAX_CONSOLE_BYTES, SCRIPT_ERROR};
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
    fn the_last_expression_is_the_result_and_tools_give_their_values() {
        let (out, calls) = run_with(
            "r = await tools.read(path='a.txt')\n{'got': r['tool'], 'n': 1 + 1}",
            echo,
        );
        assert_eq!(result(&out), json!({"got": "read", "n": 2}));
        assert_eq!(calls, [("read".to_owned(), json!({"path": "a.txt"}))]);
    }

    #[test]
    fn a_statement_last_is_null_and_calls_default_to_no_arguments() {
        let (out, calls) = run_with("x = await tools.list()", echo);
        assert_eq!(result(&out), json!(null));
        assert_eq!(calls, [("list".to_owned(), json!({}))]);
        let (out, calls) = run_with("(await tools.read({'path': 'b'}))['args']", echo);
        assert_eq!(result(&out), json!({"path": "b"}));
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn a_failed_call_is_a_catchable_tool_error_with_its_code() {
        let (out, _) = run_with(
            "try:\n    await tools.read(path='/etc/passwd')\n    r = 'read it'\n\
             except ToolError as e:\n    r = [isinstance(e, OSError), str(e)]\nr",
            denied,
        );
        assert_eq!(
            result(&out),
            json!([
                true,
                "[path_denied] tools.read: `/etc/passwd` is outside the granted directories \
                 (info: {\"pointer\":\"/path\"})"
            ])
        );
    }

    #[test]
    fn an_uncaught_failure_fails_the_script_naming_the_call_and_line() {
        let (out, _) = run_with("x = 1\nawait tools.read(path='/etc/passwd')", denied);
        let f = failure(&out);
        assert_eq!(f.code, SCRIPT_ERROR);
        assert!(
            f.message.contains("[path_denied] tools.read:"),
            "{}",
            f.message
        );
        assert!(f.message.contains("script line 2"), "{}", f.message);
        let info = f.info.as_ref().expect("info");
        assert_eq!(info["toolCode"], "path_denied");
        assert_eq!(info["tool"], "read");
        assert_eq!(info["line"], 2);
    }

    #[test]
    fn syntax_errors_and_exceptions_are_script_errors() {
        for (code, want) in [
            ("return (", "SyntaxError"),
            ("None.x", "AttributeError"),
            ("raise ValueError('too far')", "ValueError: too far"),
            ("undefined_name", "NameError"),
        ] {
            let (out, _) = run_with(code, echo);
            let f = failure(&out);
            assert_eq!(f.code, SCRIPT_ERROR, "{code}");
            assert!(f.message.contains(want), "{code}: {}", f.message);
        }
    }

    #[test]
    fn print_is_the_console_and_it_is_bounded() {
        let (out, _) = run_with("print('a', 1, {'b': 2})\nprint('x\\ny', end='')\n3", echo);
        let o = out.expect("ok");
        assert_eq!(o.console, ["a 1 {'b': 2}", "x", "y"]);
        let (out, _) = run_with("for i in range(100000):\n    print('x' * 100)\n1", echo);
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
    fn a_failed_script_keeps_what_it_printed() {
        let (out, _) = run_with("print('step 1')\nraise RuntimeError('boom')", echo);
        let f = failure(&out);
        assert_eq!(f.info.as_ref().expect("info")["console"], json!(["step 1"]));
    }

    #[test]
    fn a_result_that_is_not_json_is_refused() {
        for (code, want) in [
            ("{1: 2}", "dict key"),
            ("2 ** 200", "does not fit"),
            ("float('nan')", "not a JSON number"),
            ("{1, 2}", "not a JSON value"),
        ] {
            let (out, _) = run_with(code, echo);
            assert!(
                failure(&out).message.contains(want),
                "{code}: {:?}",
                failure(&out)
            );
        }
        let (out, _) = run_with("(1, [2.5, None, True])", echo);
        assert_eq!(result(&out), json!([1, [2.5, null, true]]));
    }

    #[test]
    fn arguments_that_are_not_keywords_or_one_dict_never_reach_the_host() {
        let (out, calls) = run_with(
            "codes = []\n\
             for a in [1, 'x', [1]]:\n\
             \x20   try:\n\
             \x20       await tools.read(a)\n\
             \x20   except ToolError as e:\n\
             \x20       codes.append(str(e).split(']')[0])\n\
             try:\n\
             \x20   await tools.read(path={1, 2})\n\
             except ToolError as e:\n\
             \x20   codes.append(str(e).split(']')[0])\n\
             codes",
            echo,
        );
        assert_eq!(result(&out), json!(vec!["[invalid_arguments"; 4]));
        assert!(calls.is_empty());
    }

    #[test]
    fn deep_recursion_is_a_catchable_recursion_error() {
        let (out, _) = run_with(
            "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n\
             try:\n    f(10 ** 7)\n    r = 'no limit'\nexcept RecursionError:\n    r = 'RecursionError'\nr",
            echo,
        );
        assert_eq!(result(&out), json!("RecursionError"));
    }

    #[test]
    fn calls_run_in_the_order_the_script_makes_them() {
        let (out, calls) = run_with(
            "import asyncio\n\
             a, b = await asyncio.gather(tools.one(), tools.two())\n\
             await tools.three(after=[a['tool'], b['tool']])\n\
             'ok'",
            echo,
        );
        assert_eq!(result(&out), json!("ok"));
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["one", "two", "three"]);
        assert_eq!(calls[2].1, json!({"after": ["one", "two"]}));
    }

    #[test]
    fn a_tool_taken_as_a_value_is_still_a_tool() {
        let (out, calls) = run_with("f = tools.read\n(await f(path='c'))['tool']", echo);
        assert_eq!(result(&out), json!("read"));
        assert_eq!(calls, [("read".to_owned(), json!({"path": "c"}))]);
    }

    #[test]
    fn the_operating_system_is_not_reachable() {
        let (out, calls) = run_with(
            "from pathlib import Path\n\
             try:\n    Path('/etc/passwd').read_text()\n    r = 'read'\n\
             except PermissionError as e:\n    r = 'denied'\nr",
            echo,
        );
        assert_eq!(result(&out), json!("denied"));
        assert!(calls.is_empty());
    }

    #[test]
    fn values_cross_as_json_both_ways() {
        let (out, _) = run_with(
            "v = await tools.t(a=1, b=2.5, c=None, d=[True, 'x'], e={'k': (1, 2)}, big=2**63)\nv['args']",
            echo,
        );
        assert_eq!(
            result(&out),
            json!({"a": 1, "b": 2.5, "c": null, "d": [true, "x"], "e": {"k": [1, 2]}, "big": 9223372036854775808u64})
        );
    }
}
