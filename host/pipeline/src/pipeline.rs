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
//!   → wrappers → body          around-dispatch (metrics, retry, budget) → sandbox
//!   → output                   value within `max_value_bytes`, then against the output schema
//!   → commit                   the call's staged file effects: approved first when the
//!                              policy says `approve = "effects"`, then committed all or
//!                              nothing (a path changed meanwhile → `conflict`)
//!   → render                   value → content (in a fresh sandbox, or already
//!                              done in the execute instance when the policy says so)
//!   → post-execute             accept | replace content | block | add context
//!   → normalization            every failure becomes an error result
//!   → bound                    overflow kept as an artifact
//!   → tools/result             in-process listeners see the frozen result
//! tool/result session event
//! ```
//! Validation comes before approval: nobody is asked to approve an invalid call.

use crate::baseline::{self, Baselines, Presented};
use crate::bound::{Artifacts, bound};
use crate::call::{ExecutionToken, FrozenCall, Handoff, ParsedArguments, parse_arguments};
use crate::determinism::{CallEnv, Finished, InOrder, Record, Turn, Turns};
use crate::listeners::{Approval, ApprovalRequest, ListenerError, PostAction, PreDecision, Reach};
use crate::paths::ResolvedPath;
use crate::registry::{RegisteredTool, Registry};
use crate::repeat::{Fingerprint, OutcomeSender, Previous, fingerprint, outcome};
use crate::replay::{CallKey, Plan};
use crate::script::{Checkpoint, Script, ScriptEnv, TxView};
use crate::summary::{approval_summary, clip};
use crate::wrappers;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{
    ContentBlock, ContextEvent, ContextSink, DecisionTrace, FailureCode, Meta, SPAN_TARGET,
    SessionEvent, Stage, StageVerdict, Timings, ToolCall, ToolCallEvent, ToolFailure, ToolResult,
    ToolResultEvent, ToolSuccess,
};
use toolhost_effects::{Staged, Transaction};
use toolhost_policy::{ApproveMode, Decision, Limits, RenderMode};
use toolhost_runtime::{CallOutcome, CallReply, Scope};
use tracing::Instrument;

pub use crate::builder::PipelineBuilder;
pub use crate::repeat::RepeatScopes;

/// Observes each stage as a call enters it (tests, tracing bridges, UIs).
pub trait StageObserver: Send + Sync {
    /// `call` entered `stage`.
    fn on_stage(&self, call: &FrozenCall, stage: Stage);
}

/// The pipeline. Share it behind an `Arc`; `execute` takes `&self`.
pub struct Pipeline {
    pub(crate) b: PipelineBuilder,
    pub(crate) session: String,
    /// Positions, and the link from each call to the one before it.
    admission: Mutex<Admission>,
    /// Deterministic mode: result events and cassette entries, in position order.
    in_order: InOrder<Finished>,
    /// Calls that reached the tool body.
    dispatches: AtomicU64,
    baselines: Baselines,
    pub(crate) artifacts: Arc<Artifacts>,
    /// Checkpoints of scripts waiting for an answer.
    checkpoints: Arc<Artifacts>,
}

/// The admission counter and the latest admitted call.
#[derive(Default)]
struct Admission {
    /// The last position given out (positions start at 1).
    position: u64,
    /// The latest admitted call, for the next one's repeat check.
    last: Option<Previous>,
}

/// A call taken in: everything decided before its first await.
struct Admitted {
    position: u64,
    call: FrozenCall,
    fingerprint: Fingerprint,
    previous: Option<Previous>,
    done: OutcomeSender,
    /// The replay key and what to do, when a cassette is mounted.
    replay: Option<(CallKey, Plan)>,
    env: CallEnv,
    /// The position `env` derives from (the recorded one when a cassette
    /// entry is re-run): a script's calls derive theirs from it.
    env_position: u64,
    /// The script this call is part of, when a script made it.
    script: Option<Arc<Script>>,
    /// What its caller may call, when the front end said.
    reach: Option<Arc<dyn Reach>>,
    /// Whether the `tool/call` event could be written.
    logged: Result<(), String>,
}

/// Who a call comes from, for its admission.
enum Origin<'a> {
    /// The front end, in a session.
    Session,
    /// The front end, for a stateless request: its repeat check is the
    /// principal's.
    Stateless(&'a RepeatScopes),
    /// Call `index` (from 1) of a script.
    Script(Arc<Script>, u64),
}

/// What the stages produce before normalization.
type StageResult = Result<ToolResult, ToolFailure>;

/// A render that ran in the execute instance: its blocks (`None`: the
/// host renders), or how it failed.
type Rendered = Result<Option<Vec<ContentBlock>>, ToolFailure>;

/// What the dispatch stage hands on to the stages after it.
struct Dispatched {
    /// The arguments as the body got them.
    args_text: String,
    /// The body's value, as JSON text.
    value_text: String,
    /// A render that ran in the execute instance, if one did.
    rendered_in_instance: Option<Rendered>,
    /// The call's file effects, staged (a script's: all its calls').
    staged: Staged,
    /// The script a code runner ran.
    script: Option<Arc<Script>>,
}

/// One call going through the stages: what it decided and collected so far.
pub(crate) struct Run<'a> {
    pub(crate) call: &'a FrozenCall,
    /// Identity for the repeat check, computed once per call.
    pub(crate) fingerprint: Fingerprint,
    /// The call admitted just before this one.
    pub(crate) previous: Option<Previous>,
    /// The call's clock and randomness.
    pub(crate) env: &'a CallEnv,
    pub(crate) trace: DecisionTrace,
    pub(crate) extra: Map<String, Value>,
    pub(crate) tool: Option<Arc<RegisteredTool>>,
    pub(crate) dispatch_ns: u64,
    /// An `ask` deferred to the effects (`approve = "effects"`): its reason.
    pub(crate) ask_effects: Option<String>,
    /// What the tool reported while it ran.
    pub(crate) context: Vec<ContextEvent>,
    /// The script this call is part of, when a script made it.
    pub(crate) script: Option<&'a Script>,
    /// The span of the stage it is in.
    pub(crate) span: tracing::Span,
}

impl Run<'_> {
    /// `stage` passed, as `by` said.
    pub(crate) fn pass(&mut self, stage: Stage, by: impl Into<Cow<'static, str>>) {
        self.trace.push(stage, StageVerdict::Pass, by, None);
    }
    /// `stage` refused, as `by` said: `f`, recorded in the trace.
    pub(crate) fn deny(
        &mut self,
        stage: Stage,
        by: impl Into<Cow<'static, str>>,
        f: ToolFailure,
    ) -> ToolFailure {
        self.trace
            .push(stage, StageVerdict::Deny, by, Some(clip(&f.message, 300)));
        f
    }
}

impl Turns for Pipeline {
    /// Gives up the turn of `position` in the in-order writer (deterministic
    /// mode): its call was abandoned before it finished.
    fn abandon_turn(&self, position: u64) {
        if self.b.seed.is_some() {
            self.in_order
                .finish(position, None, |f| self.write_finished(f));
        }
    }
}

impl Pipeline {
    /// Starts building a pipeline over `registry`.
    pub fn builder(registry: Registry) -> PipelineBuilder {
        PipelineBuilder::new(registry)
    }

    /// The pipeline `b` built, named `session`.
    pub(crate) fn new(
        b: PipelineBuilder,
        session: String,
        artifacts: Arc<Artifacts>,
        checkpoints: Arc<Artifacts>,
    ) -> Pipeline {
        Pipeline {
            checkpoints,
            b,
            session,
            admission: Mutex::new(Admission::default()),
            in_order: InOrder::default(),
            dispatches: AtomicU64::new(0),
            baselines: Baselines::default(),
            artifacts,
        }
    }

    /// Whether this pipeline issues baseline handles.
    pub fn issues_handles(&self) -> bool {
        self.b.handles.is_some()
    }

    /// Whether `tool` takes its `baseline` argument from the host.
    fn takes_handles(&self, tool: &RegisteredTool) -> bool {
        self.b.handles.is_some() && baseline::takes_handles(&tool.descriptor)
    }

    /// How many calls reached a tool body (a cassette replay reaches none).
    pub fn dispatches(&self) -> u64 {
        self.dispatches.load(Ordering::SeqCst)
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

    /// `run` enters `stage`: observers are told, and the stage's span
    /// (which ends when the next one starts) is opened.
    fn enter(&self, run: &mut Run<'_>, stage: Stage) {
        let call = run.call;
        tracing::debug!(?stage, call_id = call.call_id(), "stage");
        for o in &self.b.observers {
            o.on_stage(call, stage);
        }
        // The previous stage ends first.
        drop(std::mem::replace(&mut run.span, tracing::Span::none()));
        run.span = tracing::info_span!(target: SPAN_TARGET, "stage", otel.name = stage.as_str());
    }

    /// Runs one call through every stage. Never panics and never fails:
    /// every outcome is a [`ToolResult`].
    pub async fn execute(&self, call: ToolCall, signal: CancellationToken) -> ToolResult {
        self.execute_with(call, signal, None).await
    }

    /// As [`execute`](Self::execute), with what the tool reports while it
    /// runs (progress, log messages) relayed live to `sink` as well as
    /// recorded in the result's `meta.context`. A call played back from a
    /// cassette relays its recorded reports.
    pub async fn execute_with(
        &self,
        call: ToolCall,
        signal: CancellationToken,
        sink: Option<Arc<dyn ContextSink>>,
    ) -> ToolResult {
        self.execute_handed(
            call,
            signal,
            None,
            Handoff {
                sink,
                ..Handoff::default()
            },
        )
        .await
    }

    /// As [`execute`](Self::execute), for a stateless request: its repeat
    /// check looks at the latest call of the same principal in `repeat`
    /// (shared by the process's requests), not at this pipeline's.
    pub async fn execute_stateless(
        &self,
        call: ToolCall,
        signal: CancellationToken,
        repeat: &RepeatScopes,
        sink: Option<Arc<dyn ContextSink>>,
    ) -> ToolResult {
        let handoff = Handoff {
            sink,
            ..Handoff::default()
        };
        self.execute_handed(call, signal, Some(repeat), handoff)
            .await
    }

    /// As [`execute`](Self::execute), with what the front end hands down
    /// ([`Handoff`]), and, with `repeat`, as
    /// [`execute_stateless`](Self::execute_stateless).
    pub async fn execute_handed(
        &self,
        call: ToolCall,
        signal: CancellationToken,
        repeat: Option<&RepeatScopes>,
        handoff: Handoff,
    ) -> ToolResult {
        let origin = match repeat {
            Some(r) => Origin::Stateless(r),
            None => Origin::Session,
        };
        let admission = tracing::info_span!(target: SPAN_TARGET, "admission");
        let mut admitted = admission.in_scope(|| self.admit(call, origin));
        let span = call_span(&admitted.call);
        drop(admission);
        admitted.env.sink = handoff.sink;
        admitted.env.retire = handoff.retire;
        admitted.reach = handoff.reach;
        self.run(admitted, signal).instrument(span).await
    }

    /// Takes a call in, before anything awaits: its position, its frozen
    /// identity, its link to the previous call, its replay key and
    /// environment, and its `tool/call` event (on disk before anything runs;
    /// if it cannot be, nothing runs). One critical section, so positions,
    /// keys and `tool/call` events agree on the order.
    fn admit(&self, call: ToolCall, origin: Origin<'_>) -> Admitted {
        // Parsed before the critical section: it needs no position.
        let arguments = parse_arguments(&call.arguments);
        let mut adm = self.admission.lock().unwrap_or_else(|e| e.into_inner());
        adm.position += 1;
        let position = adm.position;
        let token = ExecutionToken::new(&self.session, position);
        let frozen = FrozenCall::freeze(call, arguments, token);
        let fingerprint = fingerprint(&frozen);
        let (done, waiter) = outcome();
        let latest = Previous {
            fingerprint,
            outcome: waiter,
        };
        let (previous, script) = match origin {
            Origin::Session => (adm.last.replace(latest), None),
            Origin::Stateless(scopes) => (
                scopes.replace(frozen.principal().unwrap_or_default(), latest),
                None,
            ),
            // A script's calls: checked against the script's previous call.
            Origin::Script(script, index) => {
                (script.replace_previous(latest), Some((script, index)))
            }
        };
        let replay = self.b.cassette.as_ref().map(|c| c.admit(&frozen));
        let env_position = match (self.b.seed, &replay) {
            // Re-run in the recorded call's environment.
            (Some(_), Some((_, Plan::Verify(i)))) => self
                .b
                .cassette
                .as_ref()
                .and_then(|c| c.recorded(*i))
                .map_or(position, |e| e.position),
            _ => position,
        };
        let env = match (self.b.seed, &script) {
            // A script's call: from the script's environment and its index,
            // whatever other calls ran meanwhile.
            (Some(seed), Some((s, index))) => CallEnv::inner(seed, s.env_position, *index),
            (Some(seed), None) => CallEnv::derived(seed, env_position),
            (None, _) => CallEnv::live(self.b.clock.clone()),
        };
        let logged = match &self.b.log {
            None => Ok(()),
            Some(log) => log
                .append(&SessionEvent::ToolCall(ToolCallEvent {
                    ts_ms: env.clock.wall_ms(),
                    call_id: frozen.call_id().to_owned(),
                    token: frozen.token().as_str().to_owned(),
                    tool: frozen.name().to_owned(),
                    arguments: frozen.raw_arguments().to_owned(),
                    agent: frozen.agent().map(str::to_owned),
                    parent: frozen.parent().map(str::to_owned),
                    descriptor: self
                        .b
                        .registry
                        .resolve(frozen.name(), frozen.agent())
                        .map(|t| t.digest.clone()),
                    principal: frozen.principal().map(str::to_owned),
                    trace_id: frozen.trace_id().map(str::to_owned),
                }))
                .map_err(|e| e.to_string()),
        };
        drop(adm);
        Admitted {
            position,
            call: frozen,
            fingerprint,
            previous,
            done,
            replay,
            env,
            env_position,
            reach: script.as_ref().and_then(|(s, _)| s.reach.clone()),
            script: script.map(|(s, _)| s),
            logged,
        }
    }

    async fn run(&self, admitted: Admitted, signal: CancellationToken) -> ToolResult {
        let mut turn = Turn::new(self, admitted.position);
        let call = &admitted.call;
        let plan = admitted.replay.as_ref().map(|(_, p)| *p);
        let recorded = match plan {
            Some(Plan::Cassette(i)) => self.b.cassette.as_ref().and_then(|c| c.recorded(i)),
            _ => None,
        };
        let result = match (recorded, &admitted.logged) {
            // Cassette layer: the recorded result, and nothing runs; what
            // the tool reported is relayed as it was recorded.
            (Some(entry), Ok(())) => {
                if let Some(sink) = &admitted.env.sink {
                    for e in &entry.result.meta().context {
                        sink.emit(e);
                    }
                }
                // A script played back whole: its calls were played too.
                if let (Some(c), Some((key, _))) = (&self.b.cassette, &admitted.replay) {
                    c.children_played(key);
                }
                entry.result.clone()
            }
            _ => self.live(&admitted, &signal).await,
        };
        if let (Some(Plan::Verify(i)), Some(c)) = (plan, &self.b.cassette) {
            c.verify(i, &result);
        }
        // The next call's repeat check (a cancellation is not a failure, nor
        // is a call waiting for its approval: it is sent again once answered).
        let failed = result.is_error()
            && !result.failed_with(FailureCode::Cancelled)
            && !result.failed_with(FailureCode::ApprovalPending);
        admitted.done.send(failed);

        // tools/result: in-process listeners see the frozen, final outcome.
        for l in &self.b.results {
            if catch_unwind(AssertUnwindSafe(|| l.on_result(call, &result))).is_err() {
                tracing::error!("a tools/result listener panicked; ignored");
            }
        }
        // tool/result: the durable record (and the cassette entry).
        let event = self.b.log.as_ref().map(|_| {
            SessionEvent::ToolResult(ToolResultEvent::from_result(
                admitted.env.clock.wall_ms(),
                call.call_id(),
                call.token().as_str(),
                call.name(),
                &result,
            ))
        });
        let record = match (&admitted.replay, plan) {
            (Some((key, _)), Some(Plan::Live { record: true })) => Some(Record {
                position: admitted.position,
                key: key.clone(),
                parent: admitted.script.as_ref().and_then(|s| s.parent_key.clone()),
                call: call.clone(),
                result: result.clone(),
            }),
            _ => None,
        };
        let finished = Finished { event, record };
        turn.done();
        if self.b.seed.is_some() {
            // Deterministic: in position order, whatever order calls end in.
            self.in_order
                .finish(admitted.position, Some(finished), |f| {
                    self.write_finished(f)
                });
            result
        } else {
            self.write_live(finished, result)
        }
    }

    /// Writes a finished call's records (deterministic mode, in order).
    fn write_finished(&self, f: Finished) {
        if let (Some(log), Some(ev)) = (&self.b.log, &f.event)
            && let Err(e) = log.append(ev)
        {
            tracing::error!("could not record tool/result: {e}");
        }
        if let (Some(c), Some(r)) = (&self.b.cassette, f.record) {
            c.write(r.position, r.key, r.parent, &r.call, r.result);
        }
    }

    /// Writes a finished call's records right away (live mode); a log
    /// failure is reported in the result.
    fn write_live(&self, f: Finished, mut result: ToolResult) -> ToolResult {
        if let (Some(log), Some(ev)) = (&self.b.log, &f.event)
            && let Err(e) = log.append(ev)
        {
            tracing::error!("could not record tool/result: {e}");
            result
                .meta_mut()
                .extra
                .insert("logError".into(), json!(e.to_string()));
        }
        if let (Some(c), Some(r)) = (&self.b.cassette, f.record) {
            c.write(r.position, r.key, r.parent, &r.call, r.result);
        }
        result
    }

    /// Runs the stages, normalizes and bounds the outcome.
    async fn live(&self, admitted: &Admitted, signal: &CancellationToken) -> ToolResult {
        let call = &admitted.call;
        let clock = &admitted.env.clock;
        let t0 = clock.monotonic_ns();
        let mut run = Run {
            call,
            fingerprint: admitted.fingerprint,
            previous: admitted.previous.clone(),
            env: &admitted.env,
            trace: DecisionTrace::default(),
            // The standard wrappers' two facts, and room for a truncation.
            extra: Map::with_capacity(3),
            tool: None,
            dispatch_ns: 0,
            ask_effects: None,
            context: Vec::new(),
            script: admitted.script.as_deref(),
            span: tracing::Span::none(),
        };
        // What stops the call before its stages (one `stages` await below:
        // each await of it would hold a copy of its large future).
        let refused = match (&admitted.logged, &admitted.replay, &self.b.cassette) {
            (Err(e), _, _) => Some(ToolFailure::new(
                FailureCode::HostError,
                format!("the session log cannot be written, so the call was not run: {e}"),
            )),
            (Ok(()), Some((key, Plan::Missing)), Some(c)) => {
                Some(c.missing(call, admitted.position, key))
            }
            _ => None,
        };
        let staged = match refused {
            Some(f) => Err(f),
            None => self.stages(&mut run, admitted, signal).await,
        };

        // Normalization: every failure becomes an error result.
        let mut result = match staged {
            Ok(r) => r,
            Err(f) => ToolResult::from_failure(f),
        };

        self.bound(&mut run, &mut result);

        let meta = result.meta_mut();
        meta.trace = run.trace;
        meta.extra = run.extra;
        meta.context = run.context;
        meta.timings = Timings {
            total_us: clock.monotonic_ns().saturating_sub(t0) / 1000,
            dispatch_us: run.dispatch_ns / 1000,
        };
        result
    }

    /// bound: content over the tool's result budget is cut, and the
    /// overflow kept as an artifact.
    fn bound(&self, run: &mut Run<'_>, result: &mut ToolResult) {
        let call = run.call;
        self.enter(run, Stage::Bound);
        let limits = run
            .tool
            .as_ref()
            .map_or_else(Limits::default, |t| t.policy.limits.clone());
        let budget = usize::try_from(limits.result_byte_budget()).unwrap_or(usize::MAX);
        let artifact_id = || format!("{}-{}", call.token().as_str(), sanitize(call.call_id()));
        if let Some((bounded, total)) = bound(
            result.content(),
            budget,
            call.principal().unwrap_or_default(),
            artifact_id,
            &self.artifacts,
        ) {
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
    }

    /// The stages from lookup to post-execute, in the order of the diagram
    /// at the top of this file. The first that refuses ends the call.
    async fn stages(
        &self,
        run: &mut Run<'_>,
        admitted: &Admitted,
        signal: &CancellationToken,
    ) -> StageResult {
        let tool = self.lookup(run, admitted, signal).await?;
        let args = self.parse(run, &tool)?;
        let (args, handles) = self.schema(run, &tool, args)?;
        let args: &Value = &args;
        // A script's call sees the directories as the script's earlier
        // calls left them (staged), as its sandbox will.
        let tx_view = run.script.map(|s| TxView(&s.transaction));
        let view: &dyn crate::paths::GrantView = match &tx_view {
            Some(v) => v,
            None => &crate::paths::RealTree,
        };
        let paths = self.path(run, &tool, args, view, &handles)?;
        self.network(run, &tool, args)?;
        self.repeat(run, signal).await?;
        let decision = self.pre_execute(run, &tool)?;
        self.approval(run, &tool, decision, args, &paths, signal)
            .await?;
        self.guards(run, &tool)?;
        let Dispatched {
            args_text,
            value_text,
            rendered_in_instance,
            staged,
            script,
        } = self.dispatch(run, admitted, &tool, args, signal).await?;
        let value = self.output(run, &tool, &value_text)?;
        let issued = self
            .commit(
                run,
                &tool,
                staged,
                script.as_deref(),
                (view, &paths),
                signal,
            )
            .await?;
        let rendered = (
            rendered_in_instance,
            args_text.as_str(),
            value_text.as_str(),
        );
        let result = self
            .render(run, &tool, rendered, value, &issued, signal)
            .await?;
        self.post_execute(run, result)
    }

    /// lookup: the tool, once its component has loaded; and whether this
    /// caller may call it.
    async fn lookup(
        &self,
        run: &mut Run<'_>,
        admitted: &Admitted,
        signal: &CancellationToken,
    ) -> Result<Arc<RegisteredTool>, ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Lookup);
        let registry = &self.b.registry;
        let mut found = registry.resolve(call.name(), call.agent());
        if found.is_none() && registry.is_loading() {
            // Its component may still be compiling: wait for the load (a
            // cancelled call stops waiting, and says so).
            tokio::select! {
                biased;
                () = registry.settled() => {}
                () = signal.cancelled() => {
                    return Err(run.deny(
                        Stage::Lookup,
                        "registry",
                        ToolFailure::new(
                            FailureCode::Cancelled,
                            "the call was cancelled while the components were still loading",
                        ),
                    ));
                }
            }
            found = registry.resolve(call.name(), call.agent());
        }
        let Some(tool) = found else {
            return Err(run.deny(Stage::Lookup, "registry", unknown_tool(registry, call)));
        };
        run.tool = Some(tool.clone());
        run.pass(Stage::Lookup, "registry");
        // Who may call it: the model, scripts, or both (its policy says);
        // and what this caller may reach (its front end says).
        if let Some(refusal) = crate::script::refuse_caller(&tool, run.script.is_some()) {
            return Err(run.deny(Stage::Lookup, "callers", refusal));
        }
        if let Some(refusal) = admitted.reach.as_ref().and_then(|r| r.refuse(call.name())) {
            return Err(run.deny(Stage::Lookup, crate::listeners::REACH, refusal));
        }
        Ok(tool)
    }

    /// parse: the arguments as JSON (parsed at admission; defensive here).
    fn parse<'c>(
        &self,
        run: &mut Run<'c>,
        tool: &RegisteredTool,
    ) -> Result<&'c Value, ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Parse);
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
        Ok(args)
    }

    /// schema: the host's `baseline` argument taken out, the rest against
    /// the input schema.
    fn schema<'c>(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        args: &'c Value,
    ) -> Result<(Cow<'c, Value>, Vec<String>), ToolFailure> {
        self.enter(run, Stage::Schema);
        // The host's `baseline` argument is the host's: out before the tool
        // (and its schema) sees the arguments. Only a call that brought one
        // pays for a copy of its arguments.
        let (args, handles) =
            if self.takes_handles(tool) && args.get(baseline::BASELINE_ARG).is_some() {
                let handles = baseline::presented(args).map_err(|why| {
                    run.deny(
                        Stage::Schema,
                        "baseline",
                        ToolFailure::new(FailureCode::InvalidArguments, why),
                    )
                })?;
                let mut rest = args.clone();
                if let Some(o) = rest.as_object_mut() {
                    o.remove(baseline::BASELINE_ARG);
                }
                (Cow::Owned(rest), handles)
            } else {
                (Cow::Borrowed(args), Vec::new())
            };
        let errors = crate::schema::errors(&tool.input, &args, "arguments");
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
        Ok((args, handles))
    }

    /// path: the path arguments against the grants, and the baselines of
    /// the files a call changes.
    fn path(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        args: &Value,
        view: &dyn crate::paths::GrantView,
        handles: &[String],
    ) -> Result<Vec<ResolvedPath>, ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Path);
        let paths =
            crate::paths::check_paths_in(view, &tool.descriptor, args, &tool.policy.sandbox)
                .and_then(|p| {
                    let presented = Presented {
                        key: self.b.handles.as_ref(),
                        principal: call.principal().unwrap_or_default(),
                        now_ms: run.env.clock.wall_ms(),
                        handles,
                    };
                    self.baselines.check_in(view, &p, presented).map(|()| p)
                })
                .map_err(|f| run.deny(Stage::Path, "paths", f))?;
        run.pass(Stage::Path, "paths");
        Ok(paths)
    }

    /// network: declared URL arguments against the allow-list.
    fn network(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        args: &Value,
    ) -> Result<(), ToolFailure> {
        self.enter(run, Stage::Network);
        crate::network::check_urls(&tool.descriptor, args, &tool.policy.sandbox)
            .map_err(|f| run.deny(Stage::Network, "network", f))?;
        run.pass(Stage::Network, "network");
        Ok(())
    }

    /// repeat: the identical call that just failed is refused.
    async fn repeat(
        &self,
        run: &mut Run<'_>,
        signal: &CancellationToken,
    ) -> Result<(), ToolFailure> {
        self.enter(run, Stage::Repeat);
        // The call admitted just before this one, when it is the same call:
        // wait for its outcome (so the check does not depend on scheduling).
        let repeated = match &run.previous {
            Some(prev) if prev.fingerprint == run.fingerprint => tokio::select! {
                biased;
                failed = prev.outcome.wait() => failed == Some(true),
                () = signal.cancelled() => false,
            },
            _ => false,
        };
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
        Ok(())
    }

    /// pre-execute: the waterfall over allow | ask | deny; the policy
    /// speaks first.
    fn pre_execute(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
    ) -> Result<PreDecision, ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::PreExecute);
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
            .map_err(|f| run.deny(Stage::PreExecute, l.name().to_owned(), f))?;
            run.trace.push(
                Stage::PreExecute,
                verdict(&decision),
                l.name().to_owned(),
                None,
            );
        }
        if let PreDecision::Deny(reason) = &decision {
            return Err(run.deny(
                Stage::PreExecute,
                "decision",
                ToolFailure::new(FailureCode::Denied, reason.clone()),
            ));
        }
        Ok(decision)
    }

    /// approval: one-shot, only on ask, fail closed (no approver = deny);
    /// or deferred to the effects.
    async fn approval(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        decision: PreDecision,
        args: &Value,
        paths: &[ResolvedPath],
        signal: &CancellationToken,
    ) -> Result<(), ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Approval);
        // Effects-first: the tool runs staged and the user approves what it
        // did (at the commit). Not for a tool that can reach the network:
        // what it sends cannot be staged, so its arguments are asked about.
        let decision = match decision {
            PreDecision::Ask(reason)
                if tool.policy.approve == ApproveMode::Effects
                    && !tool.policy.sandbox.grants_network() =>
            {
                run.trace.push(
                    Stage::Approval,
                    StageVerdict::Abstain,
                    "approve_effects",
                    Some("deferred: the effects are approved after a staged run".into()),
                );
                run.ask_effects = Some(reason);
                PreDecision::Allow
            }
            d => d,
        };
        let PreDecision::Ask(reason) = decision else {
            return Ok(());
        };
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
            call_id: crate::script::asking_call(call, run.script).to_owned(),
            tool: tool.descriptor.name.clone(),
            summary: approval_summary(&tool.descriptor.name, args, paths),
            reason: crate::script::reason(reason, run.script),
        };
        // A cancelled call stops waiting for its answer.
        let asked_at = run.env.clock.monotonic_ns();
        let answer = tokio::select! {
            biased;
            a = approver.approve(&request) => {
                if let Some(s) = run.script {
                    s.waited(run.env.clock.monotonic_ns().saturating_sub(asked_at));
                }
                a
            }
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
                Ok(())
            }
            Approval::Denied(why) => Err(run.deny(
                Stage::Approval,
                "approver",
                ToolFailure::new(
                    FailureCode::ApprovalDenied,
                    format!("the user did not approve this call: {why}"),
                ),
            )),
            Approval::Pending(what) => Err(run.deny(
                Stage::Approval,
                "approver",
                ToolFailure::new(
                    FailureCode::ApprovalPending,
                    format!("the user was asked to approve this call: {what}"),
                ),
            )),
        }
    }

    /// guards: deny or abstain, never allow; a broken guard denies.
    fn guards(&self, run: &mut Run<'_>, tool: &RegisteredTool) -> Result<(), ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Guard);
        for g in &self.b.guards {
            match catch_unwind(AssertUnwindSafe(|| g.check(call, &tool.descriptor))) {
                Ok(None) => run.trace.push(
                    Stage::Guard,
                    StageVerdict::Abstain,
                    g.name().to_owned(),
                    None,
                ),
                Ok(Some(denial)) => {
                    return Err(run.deny(
                        Stage::Guard,
                        g.name().to_owned(),
                        ToolFailure::new(FailureCode::Denied, denial.0),
                    ));
                }
                Err(_) => {
                    // A broken guard fails closed.
                    return Err(run.deny(
                        Stage::Guard,
                        g.name().to_owned(),
                        ToolFailure::new(
                            FailureCode::Denied,
                            format!("guard `{}` failed, so the call was denied", g.name()),
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// wrappers → body: the around-dispatch wrappers, then the sandbox (a
    /// code runner's script served while it runs).
    async fn dispatch(
        &self,
        run: &mut Run<'_>,
        admitted: &Admitted,
        tool: &RegisteredTool,
        args: &Value,
        signal: &CancellationToken,
    ) -> Result<Dispatched, ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Dispatch);
        let args_text = args.to_string();
        self.dispatches.fetch_add(1, Ordering::SeqCst);
        let clock = &run.env.clock;
        let d0 = clock.monotonic_ns();
        // A code runner: the script's calls are served while it runs.
        let script = match tool.policy.sandbox.call_tools {
            true => Some(
                self.script_for(admitted, tool)
                    .map_err(|f| run.deny(Stage::Dispatch, "checkpoint", f))?,
            ),
            false => None,
        };
        let extra = std::mem::take(&mut run.extra);
        let (mut exec, extra) = match &script {
            Some(script) => {
                let reach = admitted.reach.clone();
                // The script's calls are children of its dispatch.
                self.dispatch_script(
                    script, call, tool, &args_text, run.env, signal, extra, reach,
                )
                .instrument(run.span.clone())
                .await
            }
            None => {
                let scope = Scope {
                    tools: None,
                    transaction: run.script.map(|s| s.transaction.clone()),
                };
                wrappers::dispatch(
                    &self.b.wrappers,
                    call,
                    tool,
                    &args_text,
                    run.env,
                    signal,
                    extra,
                    scope,
                    admitted.reach.clone(),
                    self.issues_handles(),
                )
                .instrument(run.span.clone())
                .await
            }
        };
        run.dispatch_ns = clock.monotonic_ns().saturating_sub(d0);
        run.extra = extra;
        if let Some(script) = &script {
            run.extra.insert("calls".into(), script.calls_meta());
            // Stopped to wait for an answer: where the retry goes on from.
            if let Err(f) = &mut exec.outcome
                && f.code == FailureCode::ApprovalPending.into()
            {
                *f = self.suspend(script, call, f.clone());
            }
        }
        // What the tool reported while it ran: recorded whatever the outcome.
        run.context = std::mem::take(&mut exec.report.context);
        if exec.report.context_dropped > 0 {
            run.extra.insert(
                "context".into(),
                json!({"dropped": exec.report.context_dropped}),
            );
        }
        // A render that ran in the execute instance (RenderMode::SameInstance).
        let rendered_in_instance = exec.rendered;
        // The call's file effects, staged (dropped unless committed below):
        // a script's are its calls', all together, and the approval its
        // calls deferred to their effects is the script's.
        let staged = match &script {
            Some(script) => {
                if run.ask_effects.is_none() {
                    run.ask_effects = script.effects_reason();
                }
                script.transaction.staged()
            }
            None => exec.staged,
        };
        let value_text = exec.outcome.map_err(|f| {
            let by = if matches!(f.code, toolhost_contract::ErrorCode::Tool(_)) {
                "tool"
            } else {
                "sandbox"
            };
            run.deny(Stage::Dispatch, by, f)
        })?;
        run.pass(Stage::Dispatch, "sandbox");
        Ok(Dispatched {
            args_text,
            value_text,
            rendered_in_instance,
            staged,
            script,
        })
    }

    /// output: the value within `max_value_bytes`, then against the
    /// output schema.
    fn output(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        value_text: &str,
    ) -> Result<Value, ToolFailure> {
        self.enter(run, Stage::Output);
        // Bounded before it is parsed: the value goes to programs whole.
        let max_value = tool.policy.limits.max_value_bytes;
        if value_text.len() as u64 > max_value {
            return Err(run.deny(
                Stage::Output,
                "value_bound",
                ToolFailure::new(
                    FailureCode::ValueTooLarge,
                    format!(
                        "the tool ran, but its value is {} bytes, over this tool's limit of {max_value} \
                         (max_value_bytes); the value was dropped, and so were its file changes. \
                         Ask for less, e.g. a narrower range or a lower limit",
                        value_text.len()
                    ),
                )
                .with_info(json!({"valueBytes": value_text.len(), "maxValueBytes": max_value})),
            ));
        }
        let value: Value = serde_json::from_str(value_text).map_err(|e| {
            run.deny(
                Stage::Output,
                "output_schema",
                ToolFailure::new(
                    FailureCode::OutputInvalid,
                    format!("the tool returned a value that is not JSON: {e}"),
                ),
            )
        })?;
        let errors = crate::schema::errors(&tool.output, &value, "value");
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
        Ok(value)
    }

    /// commit: the call's staged file effects, all or nothing (see
    /// [`commit_effects`](Self::commit_effects)); then what the call read
    /// or wrote is remembered, and the handles of those files issued.
    async fn commit(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        staged: Staged,
        script: Option<&Script>,
        (view, paths): (&dyn crate::paths::GrantView, &[ResolvedPath]),
        signal: &CancellationToken,
    ) -> Result<Vec<(String, String)>, ToolFailure> {
        let call = run.call;
        self.enter(run, Stage::Commit);
        if let Err(f) = self.commit_effects(run, tool, staged, signal).await {
            // A script whose effects wait for an answer: where it goes on.
            return Err(match script {
                Some(s) if f.code == FailureCode::ApprovalPending.into() => {
                    self.suspend(s, call, f)
                }
                _ => f,
            });
        }
        // The call succeeded: remember what it read or wrote, and hand the
        // caller a handle of each such file when this host issues them.
        let issued = self.baselines.record_in(
            view,
            paths,
            self.b.handles.as_ref(),
            call.principal().unwrap_or_default(),
            run.env.clock.wall_ms(),
        );
        if let Some(script) = run.script {
            script.saw(self.baselines.known(paths));
        }
        Ok(issued)
    }

    /// render: value → content (in a fresh sandbox, or already done in the
    /// execute instance), with the issued handles attached.
    async fn render(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        (in_instance, args_text, value_text): (Option<Rendered>, &str, &str),
        value: Value,
        issued: &[(String, String)],
        signal: &CancellationToken,
    ) -> Result<ToolResult, ToolFailure> {
        self.enter(run, Stage::Render);
        // The policy keeps the tool's render out, or the tool said it has
        // none (contract 0.3.0's `host-renders`).
        let host_renders = tool.policy.render == RenderMode::Host || tool.descriptor.host_renders;
        let rendered = match in_instance {
            Some(r) => r,
            None if host_renders => Ok(None),
            None => {
                tool.body
                    .render(
                        &tool.descriptor.name,
                        args_text,
                        value_text,
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
        run.pass(Stage::Render, if host_renders { "host" } else { "render" });
        // Issued handles: in the value and first in the text, so the model
        // sees them whatever the bound cuts.
        let (value, content) = baseline::attach(
            value,
            content,
            issued,
            baseline::value_carries_handles(&tool.descriptor),
        );
        Ok(ToolResult::Success(ToolSuccess {
            value,
            content,
            meta: Meta::default(),
            additional_context: Vec::new(),
            concludes_turn: false,
        }))
    }

    /// post-execute: accept | replace content | block | add context.
    fn post_execute(&self, run: &mut Run<'_>, mut result: ToolResult) -> StageResult {
        let call = run.call;
        self.enter(run, Stage::PostExecute);
        for l in &self.b.post {
            let action = call_listener("post-execute", l.name(), || l.after(call, &result))
                .map_err(|f| run.deny(Stage::PostExecute, l.name().to_owned(), f))?;
            match action {
                PostAction::Accept => run.pass(Stage::PostExecute, l.name().to_owned()),
                PostAction::ReplaceContent(c) => {
                    *result.content_mut() = c;
                    run.trace.push(
                        Stage::PostExecute,
                        StageVerdict::Modify,
                        l.name().to_owned(),
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
                        l.name().to_owned(),
                        Some("added context".into()),
                    );
                }
                PostAction::Block(why) => {
                    return Err(run.deny(
                        Stage::PostExecute,
                        l.name().to_owned(),
                        ToolFailure::new(FailureCode::Blocked, why),
                    ));
                }
            }
        }
        Ok(result)
    }
}

impl Pipeline {
    /// The script a code runner's call runs: its calls' transaction and
    /// their shared state; from its checkpoint when the call goes on after
    /// an answer.
    fn script_for(
        &self,
        admitted: &Admitted,
        tool: &RegisteredTool,
    ) -> Result<Arc<Script>, ToolFailure> {
        let call = &admitted.call;
        let checkpoint = match call.resume() {
            None => None,
            Some(reference) => Some(
                Checkpoint::load(reference, call, &self.checkpoints).map_err(|why| {
                    ToolFailure::new(
                        FailureCode::ApprovalDenied,
                        format!(
                            "the answer is for a script that stopped to wait for it, and where \
                             it stopped cannot be used: {why}; call `{}` again to run it anew",
                            call.name()
                        ),
                    )
                })?,
            ),
        };
        let env = match &checkpoint {
            Some(c) => c.env(),
            None => ScriptEnv {
                seed: match admitted.env.entropy {
                    toolhost_runtime::Entropy::Seeded(s) => s,
                    toolhost_runtime::Entropy::Os => crate::script::fresh_seed(),
                },
                start_ms: admitted.env.clock.wall_ms(),
            },
        };
        let staging = self
            .b
            .staging
            .clone()
            .unwrap_or_else(|| toolhost_effects::private_dir("staging"));
        let area = toolhost_effects::StagingArea::of(&staging).map_err(|e| {
            ToolFailure::new(
                FailureCode::HostError,
                format!(
                    "the script's writes cannot be staged in {}: {e}",
                    staging.display()
                ),
            )
        })?;
        let script = Script::new(
            call.clone(),
            admitted.env_position,
            admitted.replay.as_ref().map(|(k, _)| k.clone()),
            Arc::new(Transaction::new(area.fresh("script"))),
            &tool.policy.limits,
            admitted.reach.clone(),
            env,
        );
        let script = match checkpoint {
            None => script,
            Some(c) => script.resume(c, &self.baselines).map_err(|why| {
                ToolFailure::new(
                    FailureCode::ApprovalDenied,
                    format!(
                        "the script cannot go on from where it stopped: {why}; call `{}` again",
                        call.name()
                    ),
                )
            })?,
        };
        Ok(Arc::new(script))
    }

    /// A script stopped to wait for an answer (`pending`): its checkpoint
    /// kept, its reference added to the failure (`info.resume`) for the
    /// front end to send back with the answer. A checkpoint that cannot be
    /// kept makes the question a refusal (fail closed: an answer could not
    /// be acted on).
    fn suspend(&self, script: &Script, call: &FrozenCall, pending: ToolFailure) -> ToolFailure {
        match Checkpoint::keep(script, call, &self.checkpoints) {
            Ok(reference) => {
                let mut info = match pending.info.clone() {
                    Some(Value::Object(o)) => o,
                    _ => Map::new(),
                };
                info.insert("resume".into(), json!(reference));
                ToolFailure {
                    info: Some(Value::Object(info)),
                    ..pending
                }
            }
            Err(why) => ToolFailure::new(
                FailureCode::ApprovalDenied,
                format!(
                    "the script needs an answer it cannot wait for here: {why}; nothing was changed"
                ),
            ),
        }
    }

    /// Dispatches a code runner, serving its script's calls (at once, up
    /// to its policy's `max_parallel_calls`; one that may write alone)
    /// until it returns.
    #[allow(clippy::too_many_arguments)]
    async fn dispatch_script(
        &self,
        script: &Arc<Script>,
        call: &FrozenCall,
        tool: &RegisteredTool,
        args_text: &str,
        env: &CallEnv,
        signal: &CancellationToken,
        extra: Map<String, Value>,
        reach: Option<Arc<dyn Reach>>,
    ) -> (Box<toolhost_runtime::Execution>, Map<String, Value>) {
        let (requests, mut calls) = crate::script::channel();
        let scope = Scope {
            tools: Some(Arc::new(requests)),
            transaction: None,
        };
        // The script's own randomness and clock: the same on every run of
        // it, so a retry after an answer repeats its calls.
        let mut env = env.clone();
        env.entropy = toolhost_runtime::Entropy::Seeded(script.env.seed);
        env.guest_clock = Some(Arc::new(toolhost_contract::clock::SteppingClock::new(
            script.env.start_ms,
            0,
            toolhost_contract::clock::VIRTUAL_STEP_NS,
        )));
        let dispatch = wrappers::dispatch(
            &self.b.wrappers,
            call,
            tool,
            args_text,
            &env,
            signal,
            extra,
            scope,
            reach,
            self.issues_handles(),
        );
        tokio::pin!(dispatch);
        // What the calls report goes live to this call's client, as the
        // script's own (one growing progress sequence for them all).
        let relay = env.sink.clone();
        let steps = Arc::new(std::sync::atomic::AtomicU64::new(0));
        // The script's calls, in the order it made them: they start in
        // that order, up to `max_parallel` at once; a call that may write
        // files runs alone (after the ones before it, before the ones
        // after), so each sees exactly the writes made before it.
        let bound = usize::try_from(script.max_parallel)
            .unwrap_or(usize::MAX)
            .max(1);
        let mut waiting: std::collections::VecDeque<(crate::script::Request, bool)> =
            std::collections::VecDeque::new();
        let mut running = futures_util::stream::FuturesUnordered::new();
        let mut writing = false;
        loop {
            while let Some((_, writes)) = waiting.front() {
                let may_start = if *writes {
                    running.is_empty()
                } else {
                    !writing && running.len() < bound
                };
                if !may_start {
                    break;
                }
                let Some((request, writes)) = waiting.pop_front() else {
                    break;
                };
                writing |= writes;
                let relay = relay.clone().map(|to| (to, steps.clone()));
                running.push(async move {
                    let reply = self
                        .script_call(script, request.name, request.arguments, signal, relay)
                        .await;
                    // The runner may be gone (its deadline): nobody to tell.
                    let _ = request.reply.send(reply);
                    writes
                });
            }
            tokio::select! {
                biased;
                out = &mut dispatch => return out,
                Some(wrote) = futures_util::StreamExt::next(&mut running), if !running.is_empty() => {
                    if wrote {
                        writing = false;
                    }
                }
                Some(request) = calls.recv() => {
                    let writes = self.may_write(&request.name, script.parent.agent());
                    waiting.push_back((request, writes));
                }
            }
        }
    }

    /// Whether the tool `name` (as `agent` resolves it) may write files:
    /// a read-write grant. A name that resolves to no tool writes nothing
    /// (its call fails at lookup).
    fn may_write(&self, name: &str, agent: Option<&str>) -> bool {
        self.b.registry.resolve(name, agent).is_some_and(|t| {
            t.policy
                .sandbox
                .fs
                .iter()
                .any(|g| g.mode == toolhost_policy::FsMode::ReadWrite)
        })
    }

    /// One call of a script: a whole call of this pipeline, as a child of
    /// the call running the script. Boxed: it runs the stages that run it.
    fn script_call<'a>(
        &'a self,
        script: &'a Arc<Script>,
        name: String,
        arguments: String,
        signal: &'a CancellationToken,
        relay: Option<(Arc<dyn ContextSink>, Arc<std::sync::atomic::AtomicU64>)>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = CallReply> + Send + 'a>> {
        Box::pin(async move {
            let Some(index) = script.next_call() else {
                return CallReply {
                    outcome: CallOutcome::Failed(limit(script.max_calls)),
                    waited: std::time::Duration::ZERO,
                };
            };
            // Made before the script stopped for an answer: its outcome
            // then, and nothing runs.
            if let Some(replayed) = script.replayed(index, &name, &arguments) {
                let outcome = match replayed {
                    Ok(o) => o,
                    Err(f) => CallOutcome::Failed(f),
                };
                return CallReply {
                    outcome,
                    waited: std::time::Duration::ZERO,
                };
            }
            let parent = &script.parent;
            let call = ToolCall {
                call_id: format!("{}#{index}", parent.call_id()),
                name,
                arguments,
                agent: parent.agent().map(str::to_owned),
                parent: Some(parent.call_id().to_owned()),
                principal: parent.principal().map(str::to_owned),
                resume: None,
                trace_id: parent.trace_id().map(str::to_owned),
            };
            let savepoint = script.transaction.savepoint();
            let who = format!("tools.{}#{index}", call.name);
            let mut admitted = self.admit(call, Origin::Script(script.clone(), index));
            admitted.env.sink = relay.map(|(to, steps)| {
                Arc::new(crate::script::Relay { to, who, steps }) as Arc<dyn ContextSink>
            });
            let frozen = admitted.call.clone();
            let clock = admitted.env.clock.clone();
            let t0 = clock.monotonic_ns();
            let span = call_span(&frozen);
            let result = self.run(admitted, signal.clone()).instrument(span).await;
            let waited = script.take_waited();
            if result.is_error() {
                // What it half did is not the script's.
                script.transaction.rollback(savepoint);
            }
            let us = clock.monotonic_ns().saturating_sub(t0) / 1000;
            let (outcome, ended) = match result {
                ToolResult::Success(s) => (CallOutcome::Value(s.value.to_string()), Ok(s.value)),
                ToolResult::Failure { error, .. }
                    if error.code == FailureCode::ApprovalPending.into() =>
                {
                    (CallOutcome::Suspend(error.clone()), Err(error))
                }
                ToolResult::Failure { error, .. } => {
                    (CallOutcome::Failed(error.clone()), Err(error))
                }
            };
            script.ended(index, frozen, ended, us);
            CallReply {
                outcome,
                waited: std::time::Duration::from_nanos(waited),
            }
        })
    }
}

/// The failure of a script's call past its `max_tool_calls`.
/// The span of one call through the pipeline: its tool, its ids and a
/// digest of its arguments (never their values). The digest is taken only
/// when a subscriber records the span.
fn call_span(call: &FrozenCall) -> tracing::Span {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "call",
        otel.name = call.name(),
        gen_ai.tool.name = call.name(),
        toolhost.call_id = call.call_id(),
        toolhost.parent = call.parent(),
        toolhost.arguments.sha256 = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record(
            "toolhost.arguments.sha256",
            toolhost_contract::sha256_hex(call.raw_arguments().as_bytes()),
        );
    }
    span
}

fn limit(max: u64) -> ToolFailure {
    ToolFailure::new(
        FailureCode::ToolCallLimit,
        format!(
            "the script made its {max} tool calls, the most its policy allows (max_tool_calls); \
             this one did not run. Do more per call, or return what you have"
        ),
    )
    .with_info(json!({"maxToolCalls": max}))
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

fn verdict(d: &PreDecision) -> StageVerdict {
    match d {
        PreDecision::Allow => StageVerdict::Allow,
        PreDecision::Ask(_) => StageVerdict::Ask,
        PreDecision::Deny(_) => StageVerdict::Deny,
    }
}

/// The failure of a call to a tool the registry does not serve: why, when
/// the registry knows (a policy that can never run it, its component still
/// loading or failed), and what is served.
fn unknown_tool(registry: &Registry, call: &FrozenCall) -> ToolFailure {
    let name = clip(call.name(), 64);
    let names: Vec<String> = registry
        .visible(call.agent())
        .iter()
        .map(|t| t.descriptor.name.clone())
        .collect();
    let available = if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    };
    let availability = registry.availability();
    let message = match availability.why_not(call.name()) {
        Some(why) if availability.unserved.contains_key(call.name()) => {
            format!("{why}; available tools: {available}")
        }
        Some(why) => {
            format!("there is no tool named `{name}`; available tools: {available}; {why}")
        }
        None => format!("there is no tool named `{name}`; available tools: {available}"),
    };
    ToolFailure::new(FailureCode::UnknownTool, message)
}

/// `s` as a part of an artifact id: its first 64 safe characters.
pub(crate) fn sanitize(s: &str) -> String {
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
