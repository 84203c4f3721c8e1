//! What both runners share: how a script calls a tool, how it fails, what
//! it logged, and what it gives back.

/// Most bytes of console output a script keeps. What it logs is returned
/// to the model with its result; a script that logs in a loop must not
/// flood the context (the host bounds the whole result again).
pub const MAX_CONSOLE_BYTES: usize = 64 * 1024;

/// The code of every failure the script itself causes (syntax, an
/// uncaught exception, a result that is not JSON, a promise that never
/// settles). The host's own stops (fuel, deadline, memory) keep theirs.
pub const SCRIPT_ERROR: &str = "script_error";

/// Why a script failed, or why a tool call did.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Stable snake_case code.
    pub code: String,
    /// What happened, for the model.
    pub message: String,
    /// Details (JSON), if any.
    pub info: Option<serde_json::Value>,
}

impl Failure {
    /// A failure the script caused, with its details.
    pub(crate) fn script(message: String, info: serde_json::Value) -> Failure {
        Failure {
            code: SCRIPT_ERROR.into(),
            message,
            info: Some(info),
        }
    }
}

/// A script that ran to its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// What it returned, as JSON (`null` for nothing).
    pub result: String,
    /// What it logged, line by line (bounded by [`MAX_CONSOLE_BYTES`]).
    pub console: Vec<String>,
}

/// How a script reaches the host's tools: a call is started at once (the
/// host takes it in, in the order the script makes its calls, and may run
/// several together), and its outcome waited for when the script needs it.
pub trait Host {
    /// Starts calling tool `name` with `arguments` (a JSON object as
    /// text); the call's handle.
    fn start(&mut self, name: &str, arguments: &str) -> u32;

    /// Waits until at least one of `handles` has ended; every one that
    /// has, with its value (JSON) or failure.
    fn wait(&mut self, handles: &[u32]) -> Vec<(u32, Result<String, Failure>)>;
}

/// The host a runner is given.
pub type Caller = dyn Host;

/// What a script logged, bounded.
#[derive(Debug, Default)]
pub(crate) struct Console {
    lines: Vec<String>,
    bytes: usize,
    dropped: usize,
}

impl Console {
    /// One line at `level` (`log` lines are kept as they are, the others
    /// marked with their level).
    pub(crate) fn push(&mut self, level: &str, text: &str) {
        let line = if level == "log" {
            text.to_owned()
        } else {
            format!("[{level}] {text}")
        };
        if self.dropped > 0 || self.bytes + line.len() > MAX_CONSOLE_BYTES {
            self.dropped += 1;
            return;
        }
        self.bytes += line.len();
        self.lines.push(line);
    }

    /// Whether nothing more is kept.
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    pub(crate) fn full(&self) -> bool {
        self.dropped > 0
    }

    /// The lines kept, then one saying how many were not.
    pub(crate) fn finish(&mut self) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.lines);
        if self.dropped > 0 {
            lines.push(format!(
                "… {} more console lines not kept (the console keeps {MAX_CONSOLE_BYTES} bytes)",
                self.dropped
            ));
        }
        lines
    }
}

/// `outcome`, or the failure with what the script logged before it in its
/// details (how its author finds out why).
pub(crate) fn with_console(
    outcome: Result<String, Failure>,
    console: &mut Console,
) -> Result<Outcome, Failure> {
    let lines = console.finish();
    match outcome {
        Ok(result) => Ok(Outcome {
            result,
            console: lines,
        }),
        Err(mut f) => {
            if !lines.is_empty()
                && let Some(serde_json::Value::Object(o)) = &mut f.info
            {
                o.insert("console".into(), lines.into());
            }
            Err(f)
        }
    }
}

/// What the runners' tests share: tools that answer from a function, and
/// the outcome read back.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Caller, Failure, Host, Outcome};
    use serde_json::{Value as Json, json};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Tools that answer from a function when a call starts; a wait gets
    /// one outcome at a time, the latest started first (so a runner that
    /// settled calls in the order they ended, not the order they were
    /// made, would show it).
    struct Answering<F> {
        answer: F,
        seen: Rc<RefCell<Vec<(String, Json)>>>,
        ended: Vec<(u32, Result<String, Failure>)>,
    }

    impl<F: Fn(&str, &Json) -> Result<Json, Failure>> Host for Answering<F> {
        fn start(&mut self, name: &str, arguments: &str) -> u32 {
            let args: Json = serde_json::from_str(arguments).expect("the bridge sends JSON");
            self.seen.borrow_mut().push((name.to_owned(), args.clone()));
            let handle = u32::try_from(self.seen.borrow().len()).expect("few calls");
            let outcome = (self.answer)(name, &args).map(|v| v.to_string());
            self.ended.push((handle, outcome));
            handle
        }

        fn wait(&mut self, handles: &[u32]) -> Vec<(u32, Result<String, Failure>)> {
            let at = self
                .ended
                .iter()
                .rposition(|(h, _)| handles.contains(h))
                .expect("a runner waits only for calls it started and has not had back");
            vec![self.ended.remove(at)]
        }
    }

    /// Runs `code` with `run` against tools that answer from `answer`,
    /// recording the calls made.
    pub(crate) fn run_with(
        run: fn(&str, Box<Caller>) -> Result<Outcome, Failure>,
        code: &str,
        answer: impl Fn(&str, &Json) -> Result<Json, Failure> + 'static,
    ) -> (Result<Outcome, Failure>, Vec<(String, Json)>) {
        let calls = Rc::new(RefCell::new(Vec::new()));
        let host = Answering {
            answer,
            seen: calls.clone(),
            ended: Vec::new(),
        };
        let out = run(code, Box::new(host));
        let calls = calls.borrow().clone();
        (out, calls)
    }

    /// What the script gave.
    pub(crate) fn result(out: &Result<Outcome, Failure>) -> Json {
        let o = out.as_ref().expect("the script succeeds");
        serde_json::from_str(&o.result).expect("JSON")
    }

    /// Why the script failed.
    pub(crate) fn failure(out: &Result<Outcome, Failure>) -> &Failure {
        out.as_ref().expect_err("the script fails")
    }

    /// A tool that answers with its name and arguments.
    pub(crate) fn echo(name: &str, args: &Json) -> Result<Json, Failure> {
        Ok(json!({"tool": name, "args": args}))
    }

    /// A tool that refuses the path.
    pub(crate) fn denied(_: &str, _: &Json) -> Result<Json, Failure> {
        Err(Failure {
            code: "path_denied".into(),
            message: "`/etc/passwd` is outside the granted directories".into(),
            info: Some(json!({"pointer": "/path"})),
        })
    }
}
