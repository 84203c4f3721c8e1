//! One call into a component: a fresh store and instance, the budget
//! applied, every way it can end classified into a stable code.

use crate::bindings::{RawFailure, RawTool, Version};
use crate::calls::{Scope, Suspended};
use crate::component::LoadedComponent;
use crate::entropy::Entropy;
use crate::fs::WriteBudgetExceeded;
use crate::limiter::MemoryLimitExceeded;
use crate::pipe::OutputLimitExceeded;
use crate::sandbox::{HostState, Produced};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::{Clock, SteppingClock, VIRTUAL_EPOCH_MS, VIRTUAL_STEP_NS};
use toolhost_contract::{
    ContentBlock, ContextEvent, ContextSink, ErrorCode, FailureCode, ToolFailure,
};
use toolhost_effects::Staged;
use toolhost_policy::{Policy, RenderMode, ToolPolicy};
use wasmtime::{Store, Trap, UpdateDeadline};

/// Grace after the deadline before the tokio backstop gives up on a guest
/// blocked inside a host call (where epoch interruption cannot reach it).
const BACKSTOP_GRACE: Duration = Duration::from_millis(200);

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

/// What to run.
#[derive(Debug, Clone)]
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
        }
    }
}

/// What the sandbox observed about a call (serializable: a worker process
/// sends it to the serving process).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExecutionReport {
    /// Fuel units used.
    pub fuel_consumed: u64,
    /// The guest's stdout (bounded, lossily decoded).
    pub stdout: String,
    /// The guest's stderr (bounded, lossily decoded).
    pub stderr: String,
    /// Outgoing requests refused by policy, as `host:port`.
    pub network_denied: Vec<String>,
    /// Bytes written into read-write grants (charged to the write budget).
    pub bytes_written: u64,
    /// Files, directories and links created (charged to the write budget).
    pub entries_created: u64,
    /// Time spent instantiating.
    pub instantiate: Duration,
    /// Wall-clock time of the whole call.
    pub elapsed: Duration,
    /// What the tool reported while it ran (contract 0.3.0), in order:
    /// what its policy's bounds let through.
    pub context: Vec<ContextEvent>,
    /// Reports the bounds dropped (rate or byte budget).
    pub context_dropped: u64,
}

/// The outcome of [`LoadedComponent::execute`]: the value as a JSON document,
/// or a failure with a stable code, plus what the sandbox observed.
#[derive(Debug)]
pub struct Execution {
    /// The canonical value's JSON, or why there is none.
    pub outcome: Result<String, ToolFailure>,
    /// `render`'s outcome when it ran in the same instance right after a
    /// successful `execute` (the policy's [`RenderMode::SameInstance`]);
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
}

pub(crate) enum Returned {
    Tools(Vec<RawTool>),
    Executed(Result<String, RawFailure>, Option<Rendered>),
    Rendered(Option<Vec<ContentBlock>>),
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
struct CallCancelled;

impl LoadedComponent {
    /// Runs one tool call in a fresh sandbox built from `inv.policy`.
    pub async fn execute(&self, inv: Invocation<'_>) -> Execution {
        use tracing::Instrument;
        let span = tracing::info_span!("sandbox", tool = inv.tool);
        self.execute_in_span(inv).instrument(span).await
    }

    async fn execute_in_span(&self, inv: Invocation<'_>) -> Execution {
        if let Some(why) = self.import_denial(&inv.policy.sandbox) {
            return Execution::new(
                Err(ToolFailure::new(
                    FailureCode::ImportDenied,
                    format!("the tool's component cannot run under this policy: {why}"),
                )),
                ExecutionReport::default(),
            );
        }
        let call = Call::Execute {
            name: inv.tool,
            args: inv.arguments,
            render: inv.policy.render == RenderMode::SameInstance && !self.host_renders(inv.tool),
        };
        let clock = inv.clock.unwrap_or_else(|| self.rt.config.clock.clone());
        let mut staged = Staged::default();
        let (r, report) = self
            .run(
                call,
                inv.policy,
                inv.budget,
                inv.cancel,
                (inv.entropy, clock, inv.sink, inv.scope),
                &mut staged,
            )
            .await;
        let mut rendered = None;
        let outcome = match r {
            Ok(Returned::Executed(Ok(json), r)) => {
                rendered = r.map(|r| {
                    r.map_err(|e| match e {
                        RenderFailure::Failed(f) => f,
                        RenderFailure::Trap(e) => {
                            ToolFailure::new(FailureCode::Trap, format!("{e:#}"))
                        }
                    })
                });
                Ok(json)
            }
            Ok(Returned::Executed(Err(f), _)) if !report.network_denied.is_empty() => {
                Err(ToolFailure::new(
                    FailureCode::NetworkDenied,
                    format!(
                        "request to {} denied by policy (not on the network allow-list)",
                        report.network_denied.join(", ")
                    ),
                )
                .with_info(
                    serde_json::json!({"denied": report.network_denied, "toolMessage": f.message}),
                ))
            }
            Ok(Returned::Executed(Err(f), _)) => Err(ToolFailure {
                code: ErrorCode::from_tool(&f.code),
                message: f.message,
                info: f.info.and_then(|i| serde_json::from_str(&i).ok()),
            }),
            Ok(_) => Err(ToolFailure::new(
                FailureCode::HostError,
                "unexpected return",
            )),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            // A failed call commits nothing: its staged writes go now.
            staged = Staged::default();
        }
        Execution {
            outcome,
            rendered,
            report,
            staged,
        }
    }

    /// Runs the tool's pure `render` in a fresh sandbox that grants nothing
    /// (only the policy's limits apply). `Ok(None)`: use the host's default.
    /// Nothing it can observe varies: its randomness is a fixed stream and
    /// its clocks start at [`VIRTUAL_EPOCH_MS`] on every call.
    pub async fn render(
        &self,
        tool: &str,
        arguments: &str,
        value: &str,
        policy: &ToolPolicy,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        if self.host_renders(tool) {
            // It said it renders nothing: no instance to find that out.
            return Ok(None);
        }
        let mut pure = Policy::deny_all().component();
        pure.limits = policy.limits.clone();
        let budget = Budget {
            fuel: policy.limits.fuel,
            deadline: Duration::from_millis(policy.limits.timeout_ms),
        };
        let call = Call::Render {
            name: tool,
            args: arguments,
            value,
        };
        match self
            .run(
                call,
                &pure,
                budget,
                cancel,
                pure_environment(),
                &mut Staged::default(),
            )
            .await
            .0?
        {
            Returned::Rendered(blocks) => Ok(blocks),
            _ => Err(ToolFailure::new(
                FailureCode::HostError,
                "unexpected return",
            )),
        }
    }

    pub(crate) async fn run(
        &self,
        call: Call<'_>,
        policy: &ToolPolicy,
        budget: Budget,
        cancel: CancellationToken,
        (entropy, clock, sink, scope): Environment,
        staged: &mut Staged,
    ) -> (Result<Returned, ToolFailure>, ExecutionReport) {
        let mut report = ExecutionReport::default();
        if budget.fuel == 0 {
            return (
                Err(ToolFailure::new(
                    FailureCode::FuelExhausted,
                    "the call has no CPU budget",
                )),
                report,
            );
        }
        if budget.deadline.is_zero() {
            return (
                Err(ToolFailure::new(
                    FailureCode::Timeout,
                    "the call has no time budget",
                )),
                report,
            );
        }
        // Wait for a free pool slot (queue, never fail because the pool is
        // busy); the wait does not count against the deadline.
        if cancel.is_cancelled() {
            return (Err(cancelled()), report);
        }
        // A code runner waits for a runner's turn first (see `runners`).
        let _runner = match &scope.tools {
            None => None,
            Some(_) => {
                let _waiting = Queued::enter(&self.rt.queued);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return (Err(cancelled()), report),
                    permit = self.rt.runners.clone().acquire_owned() => match permit {
                        Ok(p) => Some(p),
                        Err(_) => return (Err(shutting_down()), report),
                    },
                }
            }
        };
        let slot = match self.rt.slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return (Err(shutting_down()), report),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let _waiting = Queued::enter(&self.rt.queued);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return (Err(cancelled()), report),
                    permit = self.rt.slots.clone().acquire_owned() => match permit {
                        Ok(p) => p,
                        Err(_) => return (Err(shutting_down()), report),
                    },
                }
            }
        };
        self.rt
            .instances
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let started = Instant::now();
        let t_start = clock.monotonic_ns();
        let state = match HostState::build(
            policy,
            &self.rt.config,
            entropy,
            clock.clone(),
            cancel.clone(),
            sink,
            scope,
        ) {
            Ok(s) => s,
            Err(e) => {
                return (
                    Err(ToolFailure::new(FailureCode::HostError, e.to_string())),
                    report,
                );
            }
        };
        let moved = state.deadline_moved();
        let mut store = Store::new(&self.rt.engine, state);
        store.limiter(|s| s.limiter());
        if let Err(e) = store.set_fuel(budget.fuel) {
            return (
                Err(ToolFailure::new(FailureCode::HostError, format!("{e:#}"))),
                report,
            );
        }
        // The epoch ticks only say when to look; the deadline itself is the
        // wall clock. Counting ticks instead let a deadline stretch with the
        // ticker's oversleep under load (8 s became up to 8.46 s with four
        // guests spinning on two cores).
        store
            .data_mut()
            .set_deadline(started.checked_add(budget.deadline));
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut ctx| {
            let s = ctx.data_mut();
            if s.cancelled() {
                return Err(wasmtime::Error::new(CallCancelled));
            }
            if s.past_deadline() {
                return Ok(UpdateDeadline::Interrupt);
            }
            // Yield so other tasks (and this call's cancellation) make progress.
            Ok(UpdateDeadline::Yield(1))
        });

        let mut instantiated = None;
        let result: Result<wasmtime::Result<Returned>, FailureCode> = {
            // Boxed: the calls' futures are large, and every future that
            // holds this one (up through the pipeline) would carry and move
            // their bytes.
            let fut = Box::pin(async {
                let t0 = clock.monotonic_ns();
                let ix = &self.pre.exports;
                let instance = self.pre.pre.instantiate_async(&mut store).await?;
                instantiated = Some(clock.monotonic_ns().saturating_sub(t0));
                /// The call through one version's types. Only the functions
                /// called are loaded (each load type-checks its function).
                macro_rules! dispatch {
                    ($v:ident) => {{
                        type Failure = crate::bindings::$v::types::ToolFailure;
                        type Block = crate::bindings::$v::types::ContentBlock;
                        type Descriptor = crate::bindings::$v::types::ToolDescriptor;
                        let execute_fn = |store: &mut Store<HostState>| {
                            instance.get_typed_func::<(&str, &str), (Result<String, Failure>,)>(
                                store,
                                &ix.execute,
                            )
                        };
                        let render_fn = |store: &mut Store<HostState>| {
                            instance.get_typed_func::<(&str, &str, &str), (Option<Vec<Block>>,)>(
                                store, &ix.render,
                            )
                        };
                        let blocks = |b: Option<Vec<Block>>| {
                            b.map(|b| b.into_iter().map(ContentBlock::from).collect())
                        };
                        match call {
                            Call::ListTools => {
                                // At load: every function's type is checked
                                // here once, so a mistyped one fails the load.
                                let list = instance.get_typed_func::<(), (Vec<Descriptor>,)>(
                                    &mut store,
                                    &ix.list_tools,
                                )?;
                                execute_fn(&mut store)?;
                                render_fn(&mut store)?;
                                let (tools,) = list.call_async(&mut store, ()).await?;
                                Returned::Tools(tools.into_iter().map(Into::into).collect())
                            }
                            Call::Execute { name, args, render } => {
                                let execute = execute_fn(&mut store)?;
                                let (out,) = execute.call_async(&mut store, (name, args)).await?;
                                let out: Result<String, RawFailure> = out.map_err(Into::into);
                                let rendered = match (&out, render) {
                                    (Ok(value), true) => Some(
                                        async {
                                            let f = render_fn(&mut store)?;
                                            f.call_async(&mut store, (name, args, value.as_str()))
                                                .await
                                        }
                                        .await
                                        .map(|(b,)| blocks(b))
                                        .map_err(RenderFailure::Trap),
                                    ),
                                    _ => None,
                                };
                                Returned::Executed(out, rendered)
                            }
                            Call::Render { name, args, value } => {
                                let f = render_fn(&mut store)?;
                                let (b,) = f.call_async(&mut store, (name, args, value)).await?;
                                Returned::Rendered(blocks(b))
                            }
                        }
                    }};
                }
                Ok(match self.pre.version {
                    Version::V1 => dispatch!(v1),
                    Version::V2 => dispatch!(v2),
                    Version::V3 => dispatch!(v3),
                    Version::V4 => dispatch!(v4),
                })
            });
            let backstop = started + budget.deadline + BACKSTOP_GRACE;
            tokio::select! {
                biased;
                r = within(backstop, &moved, fut) => r.ok_or(FailureCode::Timeout),
                () = cancel.cancelled() => Err(FailureCode::Cancelled),
            }
        };

        report.fuel_consumed = budget.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let produced = store.data_mut().finish();
        report.instantiate = Duration::from_nanos(instantiated.unwrap_or_default());
        report.elapsed = Duration::from_nanos(clock.monotonic_ns().saturating_sub(t_start));
        let outcome = match result {
            Ok(Ok(Returned::Executed(out, Some(Err(RenderFailure::Trap(e)))))) => {
                let f = classify(&e, &produced, budget, policy);
                Ok(Returned::Executed(out, Some(Err(RenderFailure::Failed(f)))))
            }
            // A tool that failed after `context.cancelled` told it to stop
            // stopped as asked: the call was cancelled, or timed out, as if
            // the host had stopped it (its own code would say `cancelled`
            // for a deadline, and a retry wrapper could take it for the
            // tool's own failure).
            Ok(Ok(Returned::Executed(Err(_), _))) if produced.told_to_stop => {
                Err(if cancel.is_cancelled() {
                    cancelled()
                } else {
                    timeout(budget)
                })
            }
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(classify(&e, &produced, budget, policy)),
            Err(FailureCode::Cancelled) => Err(cancelled()),
            Err(_) => Err(timeout(budget)),
        };
        report.stdout = produced.stdout;
        report.stderr = produced.stderr;
        report.network_denied = produced.network_denied;
        report.bytes_written = produced.bytes_written;
        report.entries_created = produced.entries_created;
        (report.context, report.context_dropped) = produced.context;
        if let Err(f) = &outcome {
            tracing::info!(code = %f.code, fuel = report.fuel_consumed, "call failed in sandbox");
        } else {
            *staged = produced.staged;
        }
        // The store, and the pool slot after it (a tuple drops in order),
        // end now or once the response is out (see `retire`).
        crate::retire::retire((store, slot));
        (outcome, report)
    }
}

/// What a call observes and where it reports: its randomness, its clocks,
/// and the sink of its progress and log messages.
/// (A code runner's call also brings where its tool calls go, and a
/// script's call the script's transaction: its [`Scope`].)
pub(crate) type Environment = (Entropy, Arc<dyn Clock>, Option<Arc<dyn ContextSink>>, Scope);

/// The randomness and clocks of a pure call (`render`, `list-tools`): the
/// same fixed stream and the same virtual time on every call, and no one
/// to report to.
pub(crate) fn pure_environment() -> Environment {
    (
        Entropy::Seeded(0),
        Arc::new(SteppingClock::new(VIRTUAL_EPOCH_MS, 0, VIRTUAL_STEP_NS)),
        None,
        Scope::default(),
    )
}

/// `fut`'s output, or `None` once `until` (moved on by `moved`
/// nanoseconds, which may grow meanwhile) has passed. The timer is armed
/// only when `fut` does not finish in its first poll: most calls never
/// yield, and registering a timer and removing it again took the timer
/// wheel's lock twice per call for nothing.
async fn within<F: std::future::Future>(
    until: Instant,
    moved: &std::sync::atomic::AtomicU64,
    fut: F,
) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(out) = first {
        return Some(out);
    }
    let at = || until + Duration::from_nanos(moved.load(std::sync::atomic::Ordering::Relaxed));
    loop {
        let deadline = at();
        match tokio::time::timeout_at(deadline.into(), fut.as_mut()).await {
            Ok(out) => return Some(out),
            // Moved on while it waited (a person was answering): wait on.
            Err(_) if at() > deadline => {}
            Err(_) => return None,
        }
    }
}

fn shutting_down() -> ToolFailure {
    ToolFailure::new(FailureCode::HostError, "the runtime is shutting down")
}

fn cancelled() -> ToolFailure {
    ToolFailure::new(
        FailureCode::Cancelled,
        "the call was cancelled by its caller",
    )
}

fn timeout(budget: Budget) -> ToolFailure {
    ToolFailure::new(
        FailureCode::Timeout,
        format!(
            "the tool did not finish within its {} ms deadline",
            budget.deadline.as_millis()
        ),
    )
}

/// Maps how a guest died to a stable code and a message the model can read.
fn classify(
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

/// Counts a call as waiting for a pool slot until dropped.
struct Queued<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Queued<'a> {
    fn enter(count: &'a std::sync::atomic::AtomicUsize) -> Queued<'a> {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Queued(count)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn within_gives_the_output_of_a_future_that_finishes_in_time() {
        let soon = Instant::now() + Duration::from_secs(5);
        let moved = std::sync::atomic::AtomicU64::new(0);
        assert_eq!(within(soon, &moved, async { 7 }).await, Some(7));
        // Pending at the first poll, done after a yield: the timer path.
        let yielded = async {
            tokio::task::yield_now().await;
            8
        };
        assert_eq!(within(soon, &moved, yielded).await, Some(8));
    }

    #[tokio::test]
    async fn within_gives_up_on_a_future_that_never_finishes() {
        let t = Instant::now();
        let until = t + Duration::from_millis(30);
        let moved = std::sync::atomic::AtomicU64::new(0);
        assert_eq!(
            within(until, &moved, std::future::pending::<()>()).await,
            None
        );
        assert!(t.elapsed() >= Duration::from_millis(30));
    }

    #[tokio::test]
    async fn within_waits_on_when_the_deadline_moves() {
        let t = Instant::now();
        let moved = std::sync::atomic::AtomicU64::new(0);
        let slow = async {
            // Past the first deadline, and before the moved one.
            moved.fetch_add(200_000_000, std::sync::atomic::Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(60)).await;
            9
        };
        let out = within(t + Duration::from_millis(30), &moved, slow).await;
        assert_eq!(out, Some(9));
    }
}
