//! The execution pipeline: every stage of one tool call, in order, here.
//!
//! ```text
//! tool/call session event      written (and synced) before anything runs
//!   → lookup                   unknown tool → `unknown_tool`
//!   → parse                    defensive; unparseable → `invalid_arguments`
//!   → schema                   arguments against the input schema
//!   → path                     grants, create/overwrite/patch, fresh baselines
//!   → network                  declared URL arguments against the allow-list
//!   → repeat                   the identical call that just failed is refused
//!   → pre-execute              waterfall allow | ask | deny (policy first)
//!   → approval                 one-shot, only on ask; no approver = deny
//!   → guards                   deny or abstain, never allow
//!   → wrappers → body          around-dispatch (metrics, retry, deadline, fuel) → sandbox
//!   → output                   value against the output schema
//!   → render                   value → content (in a fresh sandbox, or already
//!                              done in the execute instance when the policy says so)
//!   → post-execute             accept | replace content | block | add context
//!   → normalization            every failure becomes an error result
//!   → bound                    overflow kept as an artifact
//!   → tools/result             in-process listeners see the frozen result
//! tool/result session event
//! ```
//! Validation comes before approval: nobody is asked to approve an invalid call.

use crate::baseline::Baselines;
use crate::bound::{Artifacts, bound};
use crate::call::{ExecutionToken, FrozenCall, ParsedArguments};
use crate::listeners::{
    Approval, ApprovalRequest, Approver, Guard, ListenerError, PostAction, PostExecute,
    PreDecision, PreExecute, ResultListener,
};
use crate::registry::{RegisteredTool, Registry};
use crate::session_log::SessionLog;
use crate::summary::{approval_summary, clip};
use crate::wrappers::{self, Wrapper};
use serde_json::{Map, Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::{Clock, SystemClock};
use toolhost_contract::{
    ContentBlock, DecisionTrace, FailureCode, Meta, SessionEvent, Stage, StageVerdict, Timings,
    ToolCall, ToolCallEvent, ToolFailure, ToolResult, ToolResultEvent, ToolSuccess, sha256_hex,
};
use toolhost_policy::{Decision, Limits};
use toolhost_runtime::Entropy;
use tracing::Instrument;

/// Most schema errors quoted in one `invalid_arguments` message.
const MAX_SCHEMA_ERRORS: usize = 5;

/// Observes each stage as a call enters it (tests, tracing bridges, UIs).
pub trait StageObserver: Send + Sync {
    /// `call` entered `stage`.
    fn on_stage(&self, call: &FrozenCall, stage: Stage);
}

/// Builds a [`Pipeline`].
pub struct PipelineBuilder {
    registry: Registry,
    pre: Vec<Arc<dyn PreExecute>>,
    approver: Option<Arc<dyn Approver>>,
    guards: Vec<Arc<dyn Guard>>,
    wrappers: Vec<Arc<dyn Wrapper>>,
    post: Vec<Arc<dyn PostExecute>>,
    results: Vec<Arc<dyn ResultListener>>,
    observers: Vec<Arc<dyn StageObserver>>,
    log: Option<Arc<SessionLog>>,
    clock: Arc<dyn Clock>,
    seed: Option<u64>,
    session_id: Option<String>,
    artifacts: Option<Arc<Artifacts>>,
}

impl PipelineBuilder {
    /// Names the session (it prefixes every execution token and artifact
    /// id). Default: the seed in hex, else the clock and process id.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }
    /// Keeps truncated results' overflow in this (shared, bounded) store
    /// instead of a store of this pipeline's own.
    pub fn artifacts(mut self, store: Arc<Artifacts>) -> Self {
        self.artifacts = Some(store);
        self
    }
    /// Adds a pre-execute listener (run in the order added, after the policy).
    pub fn pre_execute(mut self, l: Arc<dyn PreExecute>) -> Self {
        self.pre.push(l);
        self
    }
    /// Mounts the approver. Without one, `ask` is denied.
    pub fn approver(mut self, a: Arc<dyn Approver>) -> Self {
        self.approver = Some(a);
        self
    }
    /// Adds a guard.
    pub fn guard(mut self, g: Arc<dyn Guard>) -> Self {
        self.guards.push(g);
        self
    }
    /// Replaces the wrapper chain (default: [`wrappers::standard`]).
    /// Without the deadline and fuel wrappers a call has no budget and fails closed.
    pub fn wrappers(mut self, w: Vec<Arc<dyn Wrapper>>) -> Self {
        self.wrappers = w;
        self
    }
    /// Adds an around-dispatch wrapper inside the existing ones.
    pub fn wrapper(mut self, w: Arc<dyn Wrapper>) -> Self {
        self.wrappers.push(w);
        self
    }
    /// Adds a post-execute listener.
    pub fn post_execute(mut self, l: Arc<dyn PostExecute>) -> Self {
        self.post.push(l);
        self
    }
    /// Adds a `tools/result` listener.
    pub fn on_result(mut self, l: Arc<dyn ResultListener>) -> Self {
        self.results.push(l);
        self
    }
    /// Adds a stage observer.
    pub fn observer(mut self, o: Arc<dyn StageObserver>) -> Self {
        self.observers.push(o);
        self
    }
    /// Records the session to this log.
    pub fn session_log(mut self, log: Arc<SessionLog>) -> Self {
        self.log = Some(log);
        self
    }
    /// Uses this clock for events and timings.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    /// Makes guest randomness deterministic: each call's seed derives from
    /// this seed and its call id.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Builds it.
    pub fn build(self) -> Pipeline {
        let session = match (&self.session_id, self.seed) {
            (Some(id), _) => id.clone(),
            (None, Some(s)) => format!("{s:x}"),
            (None, None) => format!("{:x}{:x}", self.clock.wall_ms(), std::process::id()),
        };
        let artifacts = self.artifacts.clone().unwrap_or_default();
        Pipeline {
            b: self,
            session,
            seq: AtomicU64::new(0),
            baselines: Baselines::default(),
            artifacts,
            last: Mutex::new(None),
        }
    }
}

/// The pipeline. Share it behind an `Arc`; `execute` takes `&self`.
pub struct Pipeline {
    b: PipelineBuilder,
    session: String,
    seq: AtomicU64,
    baselines: Baselines,
    artifacts: Arc<Artifacts>,
    /// The previous call's fingerprint and whether it failed.
    last: Mutex<Option<(String, bool)>>,
}

/// What the stages produce before normalization.
type StageResult = Result<ToolResult, ToolFailure>;

struct Run<'a> {
    call: &'a FrozenCall,
    /// Identity for the repeat check, computed once per call.
    fingerprint: String,
    trace: DecisionTrace,
    extra: Map<String, Value>,
    tool: Option<Arc<RegisteredTool>>,
    dispatch_ns: u64,
}

impl Run<'_> {
    fn pass(&mut self, stage: Stage, by: &str) {
        self.trace.push(stage, StageVerdict::Pass, by, None);
    }
    fn deny(&mut self, stage: Stage, by: &str, f: ToolFailure) -> ToolFailure {
        self.trace
            .push(stage, StageVerdict::Deny, by, Some(clip(&f.message, 300)));
        f
    }
}

impl Pipeline {
    /// Starts building a pipeline over `registry`.
    pub fn builder(registry: Registry) -> PipelineBuilder {
        PipelineBuilder {
            registry,
            pre: Vec::new(),
            approver: None,
            guards: Vec::new(),
            wrappers: wrappers::standard(),
            post: Vec::new(),
            results: Vec::new(),
            observers: Vec::new(),
            log: None,
            clock: SystemClock::shared(),
            seed: None,
            session_id: None,
            artifacts: None,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.b.registry
    }

    /// Stored overflow of truncated results.
    pub fn artifacts(&self) -> &Arc<Artifacts> {
        &self.artifacts
    }

    /// This session's id (the prefix of its execution tokens).
    pub fn session_id(&self) -> &str {
        &self.session
    }

    fn enter(&self, call: &FrozenCall, stage: Stage) {
        tracing::debug!(?stage, call_id = call.call_id(), "stage");
        for o in &self.b.observers {
            o.on_stage(call, stage);
        }
    }

    /// Runs one call through every stage. Never panics and never fails:
    /// every outcome is a [`ToolResult`].
    pub async fn execute(&self, call: ToolCall, signal: CancellationToken) -> ToolResult {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let frozen = FrozenCall::freeze(&call, ExecutionToken::new(&self.session, seq));
        let span = tracing::info_span!("tool_call", call_id = %call.call_id, tool = %call.name);
        self.run(&frozen, signal).instrument(span).await
    }

    async fn run(&self, call: &FrozenCall, signal: CancellationToken) -> ToolResult {
        let clock = &self.b.clock;
        let t0 = clock.monotonic_ns();
        let mut run = Run {
            call,
            fingerprint: fingerprint(call),
            trace: DecisionTrace::default(),
            extra: Map::new(),
            tool: None,
            dispatch_ns: 0,
        };
        // The call is on disk before anything runs; if it cannot be, nothing runs.
        let logged = self.b.log.as_ref().map(|log| {
            let call_event = SessionEvent::ToolCall(ToolCallEvent {
                ts_ms: clock.wall_ms(),
                call_id: call.call_id().to_owned(),
                token: call.token().as_str().to_owned(),
                tool: call.name().to_owned(),
                arguments: call.raw_arguments().to_owned(),
                agent: call.agent().map(str::to_owned),
                parent: call.parent().map(str::to_owned),
            });
            log.append(&call_event)
        });
        let staged = match logged {
            Some(Err(e)) => Err(ToolFailure::new(
                FailureCode::HostError,
                format!("the session log cannot be written, so the call was not run: {e}"),
            )),
            _ => self.stages(&mut run, &signal).await,
        };

        // Normalization: every failure becomes an error result.
        let mut result = match staged {
            Ok(r) => r,
            Err(f) => ToolResult::from_failure(f),
        };

        // Bound.
        self.enter(call, Stage::Bound);
        let limits = run
            .tool
            .as_ref()
            .map_or_else(Limits::default, |t| t.policy.limits.clone());
        let budget = usize::try_from(limits.result_byte_budget()).unwrap_or(usize::MAX);
        let artifact_id = || format!("{}-{}", call.token().as_str(), sanitize(call.call_id()));
        if let Some((bounded, total)) =
            bound(result.content(), budget, artifact_id, &self.artifacts)
        {
            *result.content_mut() = bounded;
            run.trace.push(
                Stage::Bound,
                StageVerdict::Modify,
                "bound",
                Some(format!("{total} bytes cut to {budget}")),
            );
            run.extra.insert(
                "truncated".into(),
                json!({"totalBytes": total, "budgetBytes": budget}),
            );
        }

        // Repeat bookkeeping (cancellations are not the tool's failure).
        if !result.failed_with(FailureCode::Cancelled) {
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((run.fingerprint.clone(), result.is_error()));
        }

        let meta = result.meta_mut();
        meta.trace = run.trace;
        meta.extra = run.extra;
        meta.timings = Timings {
            total_us: clock.monotonic_ns().saturating_sub(t0) / 1000,
            dispatch_us: run.dispatch_ns / 1000,
        };

        // tools/result: in-process listeners see the frozen, final outcome.
        for l in &self.b.results {
            if catch_unwind(AssertUnwindSafe(|| l.on_result(call, &result))).is_err() {
                tracing::error!("a tools/result listener panicked; ignored");
            }
        }
        // tool/result: the durable record.
        if let Some(log) = &self.b.log {
            let ev = ToolResultEvent::from_result(
                clock.wall_ms(),
                call.call_id(),
                call.token().as_str(),
                call.name(),
                &result,
            );
            if let Err(e) = log.append(&SessionEvent::ToolResult(ev)) {
                tracing::error!("could not record tool/result: {e}");
                result
                    .meta_mut()
                    .extra
                    .insert("logError".into(), json!(e.to_string()));
            }
        }
        result
    }

    async fn stages(&self, run: &mut Run<'_>, signal: &CancellationToken) -> StageResult {
        let call = run.call;

        // ── lookup ──────────────────────────────────────────────────────
        self.enter(call, Stage::Lookup);
        let Some(tool) = self.b.registry.resolve(call.name(), call.agent()) else {
            let names: Vec<String> = self
                .b
                .registry
                .visible(call.agent())
                .iter()
                .map(|t| t.descriptor.name.clone())
                .collect();
            return Err(run.deny(
                Stage::Lookup,
                "registry",
                ToolFailure::new(
                    FailureCode::UnknownTool,
                    format!(
                        "there is no tool named `{}`; available tools: {}",
                        clip(call.name(), 64),
                        if names.is_empty() {
                            "none".into()
                        } else {
                            names.join(", ")
                        }
                    ),
                ),
            ));
        };
        run.tool = Some(tool.clone());
        run.pass(Stage::Lookup, "registry");

        // ── parse ───────────────────────────────────────────────────────
        self.enter(call, Stage::Parse);
        let args = match call.arguments() {
            ParsedArguments::Json(v) => v,
            ParsedArguments::Raw(raw) => {
                let why = serde_json::from_str::<Value>(raw)
                    .err()
                    .map_or_else(String::new, |e| e.to_string());
                return Err(run.deny(
                    Stage::Parse,
                    "parser",
                    ToolFailure::new(
                        FailureCode::InvalidArguments,
                        format!(
                            "the arguments are not valid JSON ({why}); send one JSON object matching the `{}` input schema",
                            tool.descriptor.name
                        ),
                    ),
                ));
            }
        };
        run.pass(Stage::Parse, "parser");

        // ── schema ──────────────────────────────────────────────────────
        self.enter(call, Stage::Schema);
        let errors = schema_errors(&tool.input, args, "arguments");
        if !errors.is_empty() {
            return Err(run.deny(
                Stage::Schema,
                "input_schema",
                ToolFailure::new(
                    FailureCode::InvalidArguments,
                    format!(
                        "invalid arguments for `{}`: {}",
                        tool.descriptor.name,
                        errors.join("; ")
                    ),
                )
                .with_info(json!({"errors": errors})),
            ));
        }
        run.pass(Stage::Schema, "input_schema");

        // ── path ────────────────────────────────────────────────────────
        self.enter(call, Stage::Path);
        let paths = crate::paths::check_paths(&tool.descriptor, args, &tool.policy.sandbox)
            .and_then(|p| self.baselines.check(&p).map(|()| p))
            .map_err(|f| run.deny(Stage::Path, "paths", f))?;
        run.pass(Stage::Path, "paths");

        // ── network ─────────────────────────────────────────────────────
        self.enter(call, Stage::Network);
        crate::network::check_urls(&tool.descriptor, args, &tool.policy.sandbox)
            .map_err(|f| run.deny(Stage::Network, "network", f))?;
        run.pass(Stage::Network, "network");

        // ── repeat ──────────────────────────────────────────────────────
        self.enter(call, Stage::Repeat);
        let repeated = matches!(&*self.last.lock().unwrap_or_else(|e| e.into_inner()), Some((last, true)) if *last == run.fingerprint);
        if repeated {
            return Err(run.deny(
                Stage::Repeat,
                "repeat",
                ToolFailure::new(
                    FailureCode::RepeatedFailure,
                    "this exact call just failed; it was not run again. Change the arguments or try something else",
                ),
            ));
        }
        run.pass(Stage::Repeat, "repeat");

        // ── pre-execute (waterfall; the policy speaks first) ────────────
        self.enter(call, Stage::PreExecute);
        let mut decision = match tool.policy.decision {
            Decision::Allow => PreDecision::Allow,
            Decision::Ask => PreDecision::Ask(format!(
                "policy requires approval for `{}`",
                tool.descriptor.name
            )),
            Decision::Deny => {
                PreDecision::Deny(format!("policy denies `{}`", tool.descriptor.name))
            }
        };
        run.trace
            .push(Stage::PreExecute, verdict(&decision), "policy", None);
        for l in &self.b.pre {
            decision = call_listener("pre-execute", l.name(), || {
                l.decide(call, &tool.descriptor, &decision)
            })
            .map_err(|f| run.deny(Stage::PreExecute, l.name(), f))?;
            run.trace
                .push(Stage::PreExecute, verdict(&decision), l.name(), None);
        }
        if let PreDecision::Deny(reason) = &decision {
            return Err(run.deny(
                Stage::PreExecute,
                "decision",
                ToolFailure::new(FailureCode::Denied, reason.clone()),
            ));
        }

        // ── approval (one-shot, fail closed) ────────────────────────────
        self.enter(call, Stage::Approval);
        if let PreDecision::Ask(reason) = decision {
            let Some(approver) = &self.b.approver else {
                return Err(run.deny(
                    Stage::Approval,
                    "no_approver",
                    ToolFailure::new(
                        FailureCode::ApprovalDenied,
                        format!("{reason}, and no approver is available, so the call was denied"),
                    ),
                ));
            };
            let request = ApprovalRequest {
                call_id: call.call_id().to_owned(),
                tool: tool.descriptor.name.clone(),
                summary: approval_summary(&tool.descriptor.name, args, &paths),
                reason,
            };
            // A cancelled call stops waiting for its answer.
            let answer = tokio::select! {
                a = approver.approve(&request) => a,
                () = signal.cancelled() => {
                    return Err(run.deny(
                        Stage::Approval,
                        "approver",
                        ToolFailure::new(
                            FailureCode::Cancelled,
                            "the call was cancelled while waiting for approval",
                        ),
                    ));
                }
            };
            match answer {
                Approval::Approved => {
                    run.trace.push(
                        Stage::Approval,
                        StageVerdict::Approved,
                        "approver",
                        Some(request.summary),
                    );
                }
                Approval::Denied(why) => {
                    return Err(run.deny(
                        Stage::Approval,
                        "approver",
                        ToolFailure::new(
                            FailureCode::ApprovalDenied,
                            format!("the user did not approve this call: {why}"),
                        ),
                    ));
                }
            }
        }

        // ── guards (deny or abstain) ────────────────────────────────────
        self.enter(call, Stage::Guard);
        for g in &self.b.guards {
            match catch_unwind(AssertUnwindSafe(|| g.check(call, &tool.descriptor))) {
                Ok(None) => run
                    .trace
                    .push(Stage::Guard, StageVerdict::Abstain, g.name(), None),
                Ok(Some(denial)) => {
                    return Err(run.deny(
                        Stage::Guard,
                        g.name(),
                        ToolFailure::new(FailureCode::Denied, denial.0),
                    ));
                }
                Err(_) => {
                    // A broken guard fails closed.
                    return Err(run.deny(
                        Stage::Guard,
                        g.name(),
                        ToolFailure::new(
                            FailureCode::Denied,
                            format!("guard `{}` failed, so the call was denied", g.name()),
                        ),
                    ));
                }
            }
        }

        // ── wrappers → body ─────────────────────────────────────────────
        self.enter(call, Stage::Dispatch);
        let args_text = args.to_string();
        let entropy = match self.b.seed {
            Some(seed) => Entropy::Seeded(seed ^ hash64(call.call_id())),
            None => Entropy::Os,
        };
        let d0 = self.b.clock.monotonic_ns();
        let (exec, metrics) =
            wrappers::dispatch(&self.b.wrappers, call, &tool, &args_text, entropy, signal)
                .instrument(tracing::info_span!("dispatch"))
                .await;
        run.dispatch_ns = self.b.clock.monotonic_ns().saturating_sub(d0);
        run.extra.extend(metrics);
        // A render that ran in the execute instance (RenderMode::SameInstance).
        let rendered_in_instance = exec.rendered;
        let value_text = exec.outcome.map_err(|f| {
            let by = if matches!(f.code, toolhost_contract::ErrorCode::Tool(_)) {
                "tool"
            } else {
                "sandbox"
            };
            run.deny(Stage::Dispatch, by, f)
        })?;
        run.pass(Stage::Dispatch, "sandbox");

        // ── output validation ───────────────────────────────────────────
        self.enter(call, Stage::Output);
        let value: Value = serde_json::from_str(&value_text).map_err(|e| {
            run.deny(
                Stage::Output,
                "output_schema",
                ToolFailure::new(
                    FailureCode::OutputInvalid,
                    format!("the tool returned a value that is not JSON: {e}"),
                ),
            )
        })?;
        let errors = schema_errors(&tool.output, &value, "value");
        if !errors.is_empty() {
            return Err(run.deny(
                Stage::Output,
                "output_schema",
                ToolFailure::new(
                    FailureCode::OutputInvalid,
                    format!(
                        "the tool returned a value that violates its output schema: {}",
                        errors.join("; ")
                    ),
                ),
            ));
        }
        run.pass(Stage::Output, "output_schema");
        // The call succeeded: remember what it read or wrote.
        self.baselines.record(&paths);

        // ── render ──────────────────────────────────────────────────────
        self.enter(call, Stage::Render);
        let rendered = match rendered_in_instance {
            Some(r) => r,
            None => {
                tool.body
                    .render(
                        &tool.descriptor.name,
                        &args_text,
                        &value_text,
                        &tool.policy,
                        signal.clone(),
                    )
                    .await
            }
        };
        let content = match rendered {
            Ok(Some(c)) => c,
            Ok(None) => default_render(&value),
            Err(f) => {
                return Err(run.deny(
                    Stage::Render,
                    "render",
                    ToolFailure::new(
                        FailureCode::RenderFailed,
                        format!(
                            "the tool ran, but rendering its result failed: [{}] {}",
                            f.code, f.message
                        ),
                    ),
                ));
            }
        };
        run.pass(Stage::Render, "render");
        let mut result = ToolResult::Success(ToolSuccess {
            value,
            content,
            meta: Meta::default(),
            additional_context: Vec::new(),
            concludes_turn: false,
        });

        // ── post-execute ────────────────────────────────────────────────
        self.enter(call, Stage::PostExecute);
        for l in &self.b.post {
            let action = call_listener("post-execute", l.name(), || l.after(call, &result))
                .map_err(|f| run.deny(Stage::PostExecute, l.name(), f))?;
            match action {
                PostAction::Accept => run.pass(Stage::PostExecute, l.name()),
                PostAction::ReplaceContent(c) => {
                    *result.content_mut() = c;
                    run.trace.push(
                        Stage::PostExecute,
                        StageVerdict::Modify,
                        l.name(),
                        Some("replaced content".into()),
                    );
                }
                PostAction::AddContext(text) => {
                    if let ToolResult::Success(s) = &mut result {
                        s.additional_context.push(text);
                    }
                    run.trace.push(
                        Stage::PostExecute,
                        StageVerdict::Modify,
                        l.name(),
                        Some("added context".into()),
                    );
                }
                PostAction::Block(why) => {
                    return Err(run.deny(
                        Stage::PostExecute,
                        l.name(),
                        ToolFailure::new(FailureCode::Blocked, why),
                    ));
                }
            }
        }
        Ok(result)
    }
}

/// Runs a listener; its error or panic becomes a `listener_failed` failure.
fn call_listener<T>(
    kind: &str,
    name: &str,
    f: impl FnOnce() -> Result<T, ListenerError>,
) -> Result<T, ToolFailure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(ToolFailure::new(
            FailureCode::ListenerFailed,
            format!("{kind} listener `{name}` failed: {e}"),
        )),
        Err(_) => Err(ToolFailure::new(
            FailureCode::ListenerFailed,
            format!("{kind} listener `{name}` panicked"),
        )),
    }
}

/// At most [`MAX_SCHEMA_ERRORS`] schema violations of `instance`, each as
/// `location: message`; the root is named `root`.
fn schema_errors(validator: &jsonschema::Validator, instance: &Value, root: &str) -> Vec<String> {
    if validator.is_valid(instance) {
        // The common case, without collecting error paths.
        return Vec::new();
    }
    validator
        .iter_errors(instance)
        .take(MAX_SCHEMA_ERRORS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { root.to_owned() } else { at };
            format!("{at}: {}", clip(&e.to_string(), 200))
        })
        .collect()
}

fn verdict(d: &PreDecision) -> StageVerdict {
    match d {
        PreDecision::Allow => StageVerdict::Allow,
        PreDecision::Ask(_) => StageVerdict::Ask,
        PreDecision::Deny(_) => StageVerdict::Deny,
    }
}

/// Identity of a call for the repeat check: agent, tool and canonical arguments.
fn fingerprint(call: &FrozenCall) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(call.agent().unwrap_or("").as_bytes());
    h.update([0]);
    h.update(call.name().as_bytes());
    h.update([0]);
    match call.arguments() {
        ParsedArguments::Json(v) => {
            // Serialized straight into the hasher: no string in between.
            let _ = serde_json::to_writer(HashWriter(&mut h), v);
        }
        ParsedArguments::Raw(r) => h.update(r.as_bytes()),
    }
    toolhost_contract::hex(&h.finalize())
}

/// Feeds `io::Write` output into a hasher.
struct HashWriter<'a>(&'a mut sha2::Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(self.0, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn hash64(s: &str) -> u64 {
    let h = sha256_hex(s.as_bytes());
    u64::from_str_radix(&h[..16], 16).unwrap_or(0)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect()
}

/// The host's rendering of a value when the tool leaves it to the host:
/// the value as indented JSON.
pub fn default_render(value: &Value) -> Vec<ContentBlock> {
    let text = match value {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    };
    vec![ContentBlock::text(text)]
}
