//! One call into a component: what it runs with, what it returns, and
//! every way it can end classified into a stable code.

use crate::bindings::{RawFailure, RawTool};
use crate::calls::{Scope, Suspended};
use crate::entropy::Entropy;
use crate::fs::WriteBudgetExceeded;
use crate::limiter::MemoryLimitExceeded;
use crate::pipe::OutputLimitExceeded;
use crate::retire::Retirement;
use crate::sandbox::Produced;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::{Clock, SteppingClock, VIRTUAL_EPOCH_MS, VIRTUAL_STEP_NS};
use toolhost_contract::{ContentBlock, ContextSink, FailureCode, ToolFailure};
use toolhost_effects::Staged;
use toolhost_policy::ToolPolicy;
use toolhost_worker_wire::ExecutionReport;
use wasmtime::Trap;

/// How wasmtime says a guest passed its bound on the data the host copies
/// out of it in one call (its error type is private).
const HOSTCALL_FUEL: &str = "fuel allocated for hostcalls has been exhausted";

/// Most bytes of a guest's stderr quoted in a crash message.
const STDERR_TAIL: usize = 1024;

/// The limits one call runs under. The default budget is empty and cannot
/// run anything (fail closed): the pipeline's around-dispatch wrappers fill
/// it in from the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// CPU fuel units.
    pub fuel: u64,
    /// Wall-clock time from the start of instantiation.
    pub deadline: Duration,
}

/// What one caller may call, as its front end knows it (an OAuth access
/// token's scopes): handed down with a call, checked right after lookup,
/// and inherited by every call a script makes, so a script reaches no
/// tool its caller could not. Like a guard, it can only refuse.
pub trait Reach: Send + Sync {
    /// Why this caller may not call `tool`, if so.
    fn refuse(&self, tool: &str) -> Option<ToolFailure>;
    /// Whether this caller may see and call `tool` (what a listing keeps).
    fn allows(&self, tool: &str) -> bool {
        self.refuse(tool).is_none()
    }
}

/// What to run: everything a tool body gets for one attempt.
#[derive(Clone)]
pub struct Invocation<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The arguments as a JSON document (already validated by the pipeline).
    pub arguments: &'a str,
    /// The policy the sandbox is built from.
    pub policy: &'a ToolPolicy,
    /// Fuel and deadline.
    pub budget: Budget,
    /// Cancels the call.
    pub cancel: CancellationToken,
    /// Source of the guest's randomness.
    pub entropy: Entropy,
    /// The clocks the guest sees (`None`: the runtime's clock). The
    /// report's timings are read from it too, so a virtual clock makes them
    /// virtual.
    pub clock: Option<Arc<dyn Clock>>,
    /// Where what the tool reports while it runs goes live (`None`: it is
    /// only recorded in the report).
    pub sink: Option<Arc<dyn ContextSink>>,
    /// A code runner's tool calls, and the script the call is part of.
    pub scope: Scope,
    /// What the caller may call, when its front end limits it (OAuth
    /// scopes): a body that lists tools (`search_tools`) lists only those.
    /// The sandbox does not read it.
    pub reach: Option<Arc<dyn Reach>>,
    /// Whether the front end issues baseline handles: a body that lists
    /// tools (`search_tools`) shows their `baseline` argument only then,
    /// as the caller's `tools/list` does. The sandbox does not read it.
    pub handles: bool,
    /// Where the call's sandbox ends when the front end writes the
    /// response itself (`None`: where the call ends).
    pub retire: Option<Retirement>,
}

impl std::fmt::Debug for Invocation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("tool", &self.tool)
            .field("arguments", &self.arguments)
            .field("policy", &self.policy)
            .field("budget", &self.budget)
            .field("cancel", &self.cancel)
            .field("entropy", &self.entropy)
            .field("clock", &self.clock)
            .field("sink", &self.sink)
            .field("scope", &self.scope)
            .field("reach", &self.reach.is_some())
            .field("handles", &self.handles)
            .field("retire", &self.retire)
            .finish()
    }
}

impl<'a> Invocation<'a> {
    /// An invocation with an empty budget, a fresh cancellation token and OS entropy.
    pub fn new(tool: &'a str, arguments: &'a str, policy: &'a ToolPolicy) -> Invocation<'a> {
        Invocation {
            tool,
            arguments,
            policy,
            budget: Budget::default(),
            cancel: CancellationToken::new(),
            entropy: Entropy::Os,
            clock: None,
            sink: None,
            scope: Scope::default(),
            reach: None,
            handles: false,
            retire: None,
        }
    }
}

/// The outcome of [`crate::LoadedComponent::execute`]: the value as a JSON document,
/// or a failure with a stable code, plus what the sandbox observed.
#[derive(Debug)]
pub struct Execution {
    /// The canonical value's JSON, or why there is none.
    pub outcome: Result<String, ToolFailure>,
    /// `render`'s outcome when it ran in the same instance right after a
    /// successful `execute` (the policy's [`toolhost_policy::RenderMode::SameInstance`]);
    /// `None` otherwise. `Ok(None)`: the host renders.
    pub rendered: Option<Result<Option<Vec<ContentBlock>>, ToolFailure>>,
    /// What the sandbox observed.
    pub report: ExecutionReport,
    /// The call's writes to its read-write grants, staged and not yet
    /// applied: the pipeline commits them (or drops them, discarding them).
    /// Empty when the call failed.
    pub staged: Staged,
}

impl Execution {
    /// An execution that did not render in its instance.
    pub fn new(outcome: Result<String, ToolFailure>, report: ExecutionReport) -> Execution {
        Execution {
            outcome,
            rendered: None,
            report,
            staged: Staged::default(),
        }
    }
}

pub(crate) enum Call<'a> {
    ListTools,
    Execute {
        name: &'a str,
        args: &'a str,
        /// Render in the same instance after a successful execute.
        render: bool,
    },
    Render {
        name: &'a str,
        args: &'a str,
        value: &'a str,
    },
    /// A plain component's function, with its arguments converted.
    Plain {
        function: &'a crate::plain::Function,
        params: Vec<wasmtime::component::Val>,
    },
}

pub(crate) enum Returned {
    Tools(Vec<RawTool>),
    Executed(Result<String, RawFailure>, Option<Rendered>),
    Rendered(Option<Vec<ContentBlock>>),
    /// A plain component's function's value, or its `err` as a failure.
    Plain(Result<String, ToolFailure>),
}

/// A same-instance render: its blocks, or how it failed.
pub(crate) type Rendered = Result<Option<Vec<ContentBlock>>, RenderFailure>;

/// A same-instance render failed: trapped (classified once the store's
/// state can be read) or classified already.
pub(crate) enum RenderFailure {
    Trap(wasmtime::Error),
    Failed(ToolFailure),
}

/// Cancellation observed by the epoch callback.
#[derive(Debug, thiserror::Error)]
#[error("the call was cancelled by its caller")]
pub(crate) struct CallCancelled;

/// What a call observes and where it reports: its randomness, its clocks,
/// and the sink of its progress and log messages.
/// (A code runner's call also brings where its tool calls go, and a
/// script's call the script's transaction: its [`Scope`].)
pub(crate) type Environment = (
    Entropy,
    Arc<dyn Clock>,
    Option<Arc<dyn ContextSink>>,
    Scope,
    Option<Retirement>,
);

/// The randomness and clocks of a pure call (`render`, `list-tools`): the
/// same fixed stream and the same virtual time on every call, and no one
/// to report to.
pub(crate) fn pure_environment() -> Environment {
    (
        Entropy::Seeded(0),
        Arc::new(SteppingClock::new(VIRTUAL_EPOCH_MS, 0, VIRTUAL_STEP_NS)),
        None,
        Scope::default(),
        None,
    )
}

pub(crate) fn shutting_down() -> ToolFailure {
    ToolFailure::new(FailureCode::HostError, "the runtime is shutting down")
}

pub(crate) fn cancelled() -> ToolFailure {
    ToolFailure::new(
        FailureCode::Cancelled,
        "the call was cancelled by its caller",
    )
}

pub(crate) fn timeout(budget: Budget) -> ToolFailure {
    ToolFailure::new(
        FailureCode::Timeout,
        format!(
            "the tool did not finish within its {} ms deadline",
            budget.deadline.as_millis()
        ),
    )
}

/// Maps how a guest died to a stable code and a message the model can read.
pub(crate) fn classify(
    e: &wasmtime::Error,
    state: &Produced,
    budget: Budget,
    policy: &ToolPolicy,
) -> ToolFailure {
    if state.output_overflowed || e.downcast_ref::<OutputLimitExceeded>().is_some() {
        return ToolFailure::new(
            FailureCode::OutputLimit,
            format!(
                "the tool wrote more than {} bytes to stdout/stderr and was stopped",
                policy.limits.max_stdout_bytes
            ),
        );
    }
    if state.memory_limit_hit || e.downcast_ref::<MemoryLimitExceeded>().is_some() {
        return ToolFailure::new(
            FailureCode::MemoryLimit,
            format!(
                "the tool tried to use more than its {} bytes of memory and was stopped",
                policy.limits.memory_bytes
            ),
        );
    }
    if let Some(exceeded) = state
        .write_budget_exceeded
        .or_else(|| e.downcast_ref::<WriteBudgetExceeded>().copied())
    {
        return ToolFailure::new(
            FailureCode::WriteBudgetExceeded,
            format!(
                "the tool was stopped: {exceeded} in its read-write directories \
                 (policy limits max_write_bytes = {}, max_files_created = {})",
                policy.limits.max_write_bytes, policy.limits.max_files_created
            ),
        );
    }
    if e.downcast_ref::<CallCancelled>().is_some() {
        return cancelled();
    }
    if let Some(Suspended(f)) = e.downcast_ref::<Suspended>() {
        // A code runner stopped to wait for an answer (not its failure).
        return f.clone();
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        // `exit`/`std::process::exit` in the guest ends in `wasi:cli/exit`,
        // which wasmtime-wasi reports as this error: the guest's doing.
        let mut f = ToolFailure::new(
            FailureCode::GuestExit,
            format!(
                "the tool exited with status {} instead of returning a result",
                exit.0
            ),
        )
        .with_info(serde_json::json!({ "exitStatus": exit.0 }));
        with_stderr_tail(&mut f, state);
        return f;
    }
    if e.downcast_ref::<Trap>().is_none() && format!("{e}").contains(HOSTCALL_FUEL) {
        // wasmtime's bound on what the host copies out of a guest in one
        // call (a plain component's value is lifted whole).
        return ToolFailure::new(
            FailureCode::ValueTooLarge,
            "the tool returned more data than the host takes from a component in one call",
        );
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => ToolFailure::new(
            FailureCode::FuelExhausted,
            format!(
                "the tool used its whole CPU budget ({} fuel units) and was stopped",
                budget.fuel
            ),
        ),
        Some(Trap::Interrupt) => timeout(budget),
        Some(Trap::StackOverflow) => ToolFailure::new(
            FailureCode::StackOverflow,
            "the tool's call stack overflowed (unbounded or too deep recursion)",
        ),
        Some(trap) => {
            let mut f = ToolFailure::new(FailureCode::Trap, format!("the tool crashed: {trap}"));
            if let Some(frames) = guest_backtrace(e) {
                f = f.with_info(serde_json::json!({ "backtrace": frames }));
            }
            with_stderr_tail(&mut f, state);
            f
        }
        None => ToolFailure::new(FailureCode::HostError, format!("{e:#}")),
    }
}

/// At most this many frames of a trap's backtrace go into its failure.
const BACKTRACE_FRAMES: usize = 24;

/// The guest's frames where it trapped, innermost first (the middle of a
/// deep stack left out): the function's name from the module's name
/// section (`func[index]` when it has none, as stripped builds do),
/// prefixed with `module!` when the module is named. For the tool's
/// author: a trap names no line of their source.
fn guest_backtrace(e: &wasmtime::Error) -> Option<Vec<String>> {
    let bt = e.downcast_ref::<wasmtime::WasmBacktrace>()?;
    let name = |f: &wasmtime::FrameInfo| {
        let func = match f.func_name() {
            Some(name) => name.to_owned(),
            None => format!("func[{}]", f.func_index()),
        };
        match f.module().name() {
            Some(module) => format!("{module}!{func}"),
            None => func,
        }
    };
    let all = bt.frames();
    if all.len() <= BACKTRACE_FRAMES {
        return (!all.is_empty()).then(|| all.iter().map(name).collect());
    }
    // A deep stack (often a recursion): its innermost and outermost
    // frames, where the trap and the cause are.
    let half = BACKTRACE_FRAMES / 2;
    let mut frames: Vec<String> = all[..half].iter().map(name).collect();
    frames.push(format!("… {} frames …", all.len() - 2 * half));
    frames.extend(all[all.len() - half..].iter().map(name));
    Some(frames)
}

/// Appends the end of the guest's stderr (where a panic or `abort` message
/// lands) to a crash message.
fn with_stderr_tail(f: &mut ToolFailure, state: &Produced) {
    let tail = tail(&state.stderr, STDERR_TAIL);
    if !tail.trim().is_empty() {
        f.message.push_str(&format!("\nstderr: {}", tail.trim()));
    }
}

/// The last `max` bytes of `s`, on a char boundary.
fn tail(s: &str, max: usize) -> &str {
    &s[s.ceil_char_boundary(s.len().saturating_sub(max))..]
}
