//! Around-dispatch wrappers: middleware around one dispatch of a tool body.
//!
//! Wrappers are applied in order, the first added is the outermost (as in
//! tower's `ServiceBuilder`). A wrapper sees the frozen call and the tool
//! read-only; it may change the [`Budget`] (fuel, deadline), the
//! cancellation signal and the metrics it records, nothing else. The signal
//! a wrapper installs is restored after it returns, and the body always
//! receives a signal re-joined with the caller's, so no wrapper can detach
//! the caller's cancellation.

use crate::body::ToolBody;
use crate::call::FrozenCall;
use crate::determinism::CallEnv;
use crate::registry::RegisteredTool;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::Clock;
use toolhost_contract::{ErrorCode, FailureCode};
use toolhost_runtime::{Budget, Execution, Invocation, Scope};
use tracing::Instrument;

/// The mutable part of one dispatch, as wrappers see it.
pub struct DispatchCtx<'a> {
    call: &'a FrozenCall,
    tool: &'a RegisteredTool,
    arguments: &'a str,
    env: &'a CallEnv,
    /// Fuel and deadline for the body.
    pub budget: Budget,
    /// The signal the body will observe (joined with the caller's).
    pub signal: CancellationToken,
    /// Facts for the result's `meta.extra`.
    pub metrics: Map<String, Value>,
    /// Where the body's own tool calls go and the script it is part of:
    /// the pipeline's, never a wrapper's to change.
    scope: Scope,
    /// What the caller may call (its front end said), for a body that
    /// lists tools.
    reach: Option<Arc<dyn crate::Reach>>,
    /// Whether the pipeline issues baseline handles (for a body that lists
    /// tools).
    handles: bool,
}

impl<'a> DispatchCtx<'a> {
    /// The frozen call.
    pub fn call(&self) -> &FrozenCall {
        self.call
    }
    /// The tool being dispatched.
    pub fn tool(&self) -> &RegisteredTool {
        self.tool
    }
    /// The call's clock (virtual in deterministic mode): measure with it.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.env.clock
    }
}

/// An around-dispatch wrapper.
#[async_trait::async_trait]
pub trait Wrapper: Send + Sync {
    /// Name, for traces.
    fn name(&self) -> &str;
    /// Runs around `next` (call `next.run(ctx)` zero or more times). The
    /// execution comes back boxed, so each level of the chain passes a
    /// pointer up rather than copying the whole execution.
    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution>;
}

/// The rest of the chain.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    wrappers: &'a [Arc<dyn Wrapper>],
    body: &'a dyn ToolBody,
    caller: &'a CancellationToken,
}

impl Next<'_> {
    /// Runs the remaining wrappers and the body.
    pub async fn run(self, ctx: &mut DispatchCtx<'_>) -> Box<Execution> {
        match self.wrappers.split_first() {
            Some((w, rest)) => {
                let saved = ctx.signal.clone();
                let next = Next {
                    wrappers: rest,
                    ..self
                };
                // Instrumented, not entered: a guard held across the
                // await would stay on this thread while the task moves.
                let span = tracing::debug_span!("wrapper", name = w.name());
                let out = w.around(ctx, next).instrument(span).await;
                ctx.signal = saved; // restored whatever the wrapper did
                out
            }
            None => {
                let input = |cancel| Invocation {
                    tool: ctx.tool.descriptor.name.as_str(),
                    arguments: ctx.arguments,
                    policy: &ctx.tool.policy,
                    budget: ctx.budget,
                    cancel,
                    entropy: ctx.env.entropy,
                    clock: ctx.env.guest_clock.clone(),
                    sink: ctx.env.sink.clone(),
                    scope: ctx.scope.clone(),
                    reach: ctx.reach.clone(),
                    handles: ctx.handles,
                    retire: ctx.env.retire.clone(),
                };
                if ctx.signal == *self.caller {
                    // No wrapper installed a signal of its own: the caller's
                    // is the body's (a child token would add a node to the
                    // caller's tree, locked twice, for nothing to relay).
                    return Box::new(self.body.execute(input(self.caller.clone())).await);
                }
                // Re-join the caller's signal: the body is cancelled when the
                // caller cancels, whatever signal the wrappers installed.
                // The wrappers' signal is relayed into it in this task (no
                // spawned relay: a task per call cost a thread wake-up).
                let joined = self.caller.child_token();
                let wrappers_signal = ctx.signal.clone();
                let body = self.body.execute(input(joined.clone()));
                tokio::pin!(body);
                tokio::select! {
                    biased;
                    out = &mut body => Box::new(out),
                    () = wrappers_signal.cancelled() => {
                        joined.cancel();
                        Box::new(body.await)
                    }
                }
            }
        }
    }
}

/// Runs `wrappers` around `body` for one call; the wrappers' metrics are
/// added to `metrics`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn dispatch(
    wrappers: &[Arc<dyn Wrapper>],
    call: &FrozenCall,
    tool: &RegisteredTool,
    arguments: &str,
    env: &CallEnv,
    caller: &CancellationToken,
    metrics: Map<String, Value>,
    scope: Scope,
    reach: Option<Arc<dyn crate::Reach>>,
    handles: bool,
) -> (Box<Execution>, Map<String, Value>) {
    let mut ctx = DispatchCtx {
        call,
        tool,
        arguments,
        env,
        budget: Budget::default(),
        signal: caller.clone(),
        metrics,
        scope,
        reach,
        handles,
    };
    let next = Next {
        wrappers,
        body: tool.body.as_ref(),
        caller,
    };
    let out = next.run(&mut ctx).await;
    (out, ctx.metrics)
}

/// Sets the body's budget from the tool's policy: CPU fuel (`fuel`) and the
/// wall-clock deadline (`timeout_ms`). Without it the budget stays empty and
/// the sandbox runs nothing (fail closed).
#[derive(Debug, Default)]
pub struct BudgetWrapper;

#[async_trait::async_trait]
impl Wrapper for BudgetWrapper {
    fn name(&self) -> &str {
        "budget"
    }
    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution> {
        let limits = &ctx.tool.policy.limits;
        ctx.budget = Budget {
            fuel: limits.fuel,
            deadline: Duration::from_millis(limits.timeout_ms),
        };
        next.run(ctx).await
    }
}

/// Retries idempotent tools after a transient failure (`timeout`, or a
/// tool-reported `unavailable`), at most `max_attempts` times in all.
#[derive(Debug)]
pub struct RetryWrapper {
    /// Attempts in all, including the first.
    pub max_attempts: u32,
}

impl Default for RetryWrapper {
    fn default() -> Self {
        RetryWrapper { max_attempts: 2 }
    }
}

fn transient(e: &Execution) -> bool {
    match &e.outcome {
        Err(f) => match &f.code {
            ErrorCode::Host(c) => *c == FailureCode::Timeout,
            ErrorCode::Tool(c) => c == "unavailable",
        },
        Ok(_) => false,
    }
}

#[async_trait::async_trait]
impl Wrapper for RetryWrapper {
    fn name(&self) -> &str {
        "retry"
    }
    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution> {
        let idempotent = ctx.tool.descriptor.annotations.idempotent;
        let mut attempt = 1;
        loop {
            let out = next.run(ctx).await;
            let retry = idempotent
                && attempt < self.max_attempts
                && transient(&out)
                && !ctx.signal.is_cancelled();
            if !retry {
                ctx.metrics.insert("attempts".into(), attempt.into());
                return out;
            }
            tracing::info!(attempt, "retrying idempotent tool after transient failure");
            attempt += 1;
        }
    }
}

/// Records elapsed time, fuel and output sizes into the result's meta.
#[derive(Debug, Default)]
pub struct MetricsWrapper;

#[async_trait::async_trait]
impl Wrapper for MetricsWrapper {
    fn name(&self) -> &str {
        "metrics"
    }
    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution> {
        // The env outlives `ctx`'s borrow by `next`: no clone of the clock.
        let clock = &ctx.env.clock;
        let t = clock.monotonic_ns();
        let out = next.run(ctx).await;
        let r = &out.report;
        let mut sandbox = Map::with_capacity(5);
        let elapsed = clock.monotonic_ns().saturating_sub(t) / 1000;
        sandbox.insert("elapsedUs".into(), elapsed.into());
        let instantiate = u64::try_from(r.instantiate.as_micros()).unwrap_or(u64::MAX);
        sandbox.insert("instantiateUs".into(), instantiate.into());
        sandbox.insert("fuelConsumed".into(), r.fuel_consumed.into());
        sandbox.insert("stdoutBytes".into(), r.stdout.len().into());
        sandbox.insert("stderrBytes".into(), r.stderr.len().into());
        ctx.metrics.insert("sandbox".into(), Value::Object(sandbox));
        out
    }
}

/// The standard chain, outermost first: metrics, retry, budget.
pub fn standard() -> Vec<Arc<dyn Wrapper>> {
    vec![
        Arc::new(MetricsWrapper),
        Arc::new(RetryWrapper::default()),
        Arc::new(BudgetWrapper),
    ]
}
