//! The server (shared by every connection) and one session per connection.

// MCP logging (notices to clients that asked) is deprecated by SEP-2577,
// and still what clients display.
#![allow(deprecated)]

use crate::ServeError;
use crate::approve::{Approvals, StateSeal, binding};
use crate::metrics::{Gauges, Metrics, TaskEvent};
use crate::notices::{Notice, Notices, Severity};
use crate::origin::Origin;
use crate::placement::Placement;
use crate::quota::QuotaWrapper;
use crate::tasks::{Reports, Slot, Tasks};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ErrorData, GetTaskParams,
    GetTaskResult, Implementation, InputRequiredResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscriptionFilter, TaskStatus,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ContextSink, FailureCode, ToolCall, ToolResult};
use toolhost_mcp_wire::Revision;
use toolhost_pipeline::advertise::{self, Format};
use toolhost_pipeline::baseline::{HandleKey, derive_key};
use toolhost_pipeline::replay::Replay;
use toolhost_pipeline::{Handoff, Pipeline, RepeatScopes, SessionLog};
use toolhost_policy::TaskMode;
use toolhost_toolbox::Host;
use tracing::Instrument;

/// Default time the person at the client has to answer an approval.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings shared by every session.
#[derive(Clone)]
pub struct ServerOptions {
    /// How long an approval may wait for the user before it is denied.
    pub approval_timeout: Duration,
    /// The session log every session appends to.
    pub log: Option<Arc<SessionLog>>,
    /// Deterministic sessions: each session's clocks, randomness and ids
    /// derive from this seed (and the session's number, from 1).
    pub seed: Option<u64>,
    /// A cassette every session records to or plays back from (meant for
    /// one session at a time: a harness testing an agent against recorded
    /// tools).
    pub cassette: Option<Arc<Replay>>,
    /// What the server says while it runs (components compiling, failing):
    /// sent as log messages to the clients that asked.
    pub notices: Notices,
    /// The secret (at least 32 bytes) that seals what a client carries
    /// between requests: baseline handles and approval states. Replicas
    /// behind one load balancer share it, so any of them opens what another
    /// sealed. `None`: a random secret of this process (or, with `seed`,
    /// one derived from the seed).
    pub state_secret: Option<Vec<u8>>,
    /// Per-principal bounds on calls at once and per minute (a call over
    /// one is an `isError` result `quota_exceeded`).
    pub quotas: toolhost_auth::QuotaLimits,
    /// A directory the replicas share, where used approval states are
    /// recorded, so an approval opens once across all of them (`None`:
    /// once per process).
    pub used_states_dir: Option<std::path::PathBuf>,
    /// A directory the replicas share, where MCP tasks are kept, so any of
    /// them answers for a task another runs (`None`: this process's
    /// memory).
    pub tasks_dir: Option<std::path::PathBuf>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            log: None,
            seed: None,
            cassette: None,
            notices: Notices::new(),
            state_secret: None,
            quotas: toolhost_auth::QuotaLimits::default(),
            used_states_dir: None,
            tasks_dir: None,
        }
    }
}

struct Shared {
    host: Arc<Host>,
    options: ServerOptions,
    changed: broadcast::Sender<()>,
    /// How many times the tool list changed.
    version: AtomicU64,
    in_flight: AtomicUsize,
    idle: Notify,
    /// Sessions started so far.
    sessions: AtomicU64,
    /// Seals the state of approvals asked inline (2026-07-28).
    seal: StateSeal,
    /// Seals baseline handles.
    handles: HandleKey,
    /// The repeat check of stateless requests, per principal.
    repeat: RepeatScopes,
    /// What `/metrics` shows.
    metrics: Metrics,
    /// Per-principal quotas, taken around each call's dispatch (`None`:
    /// unbounded, and no wrapper).
    quotas: Option<Arc<toolhost_auth::Quotas>>,
    /// Whether the first load of the toolbox finished (`/readyz`).
    ready: AtomicBool,
    /// Calls that became MCP tasks.
    tasks: Arc<Tasks>,
}

/// The MCP server: a host, the options, and the sessions' shared state.
/// Cheap to clone.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// A server over `host`.
    ///
    /// Fails only when `options.state_secret` is shorter than 32 bytes.
    pub fn new(host: Arc<Host>, options: ServerOptions) -> Result<Server, ServeError> {
        let (changed, _) = broadcast::channel(16);
        let secret = match (&options.state_secret, options.seed) {
            (Some(s), _) => s.clone(),
            (None, Some(seed)) => {
                derive_key(&seed.to_be_bytes(), "toolhost/seeded-state/v1").to_vec()
            }
            (None, None) => {
                let mut key = Vec::with_capacity(32);
                key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
                key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
                key
            }
        };
        let handles = HandleKey::from_secret(&secret)
            .map_err(|e| ServeError::Config(format!("the state secret: {e}")))?;
        // A state lives as long as the user may take to answer.
        let seal = StateSeal::new(
            &derive_key(&secret, "toolhost/approval-state/v1"),
            options.approval_timeout,
        )
        .map_err(ServeError::Config)?;
        let seal = match &options.used_states_dir {
            None => seal,
            Some(dir) => seal.recording_in(dir).map_err(|e| {
                ServeError::Config(format!(
                    "the record of used approval states {}: {e}",
                    dir.display()
                ))
            })?,
        };
        let clock = toolhost_contract::clock::SystemClock::shared();
        let tasks = Tasks::new(options.tasks_dir.as_deref(), clock).map_err(|e| {
            ServeError::Config(format!(
                "the task store {}: {e}",
                options
                    .tasks_dir
                    .as_deref()
                    .map_or_else(String::new, |d| d.display().to_string())
            ))
        })?;
        let quotas = toolhost_auth::Quotas::new(options.quotas);
        let quotas = quotas.is_bounded().then(|| Arc::new(quotas));
        Ok(Server {
            shared: Arc::new(Shared {
                host,
                options,
                changed,
                version: AtomicU64::new(0),
                in_flight: AtomicUsize::new(0),
                idle: Notify::new(),
                sessions: AtomicU64::new(0),
                seal,
                handles,
                repeat: RepeatScopes::default(),
                metrics: Metrics::default(),
                quotas,
                ready: AtomicBool::new(false),
                tasks: Arc::new(tasks),
            }),
        })
    }

    /// The host.
    pub fn host(&self) -> &Arc<Host> {
        &self.shared.host
    }

    /// A new session (one per client connection): its own pipeline over
    /// the shared registry, artifacts and log.
    pub fn session(&self) -> Session {
        let options = &self.shared.options;
        let approver = Arc::new(Approvals::new(options.approval_timeout));
        let number = self.shared.sessions.fetch_add(1, Ordering::SeqCst) + 1;
        let id = match options.seed {
            Some(seed) => format!("{seed:x}s{number}"),
            None => uuid::Uuid::new_v4().simple().to_string(),
        };
        let mut b = self
            .shared
            .host
            .session()
            .session_id(id)
            .approver(approver.clone())
            .baseline_handles(self.shared.handles.clone());
        if let Some(seed) = options.seed {
            b = b.deterministic(seed.wrapping_add(number - 1));
        }
        if let Some(c) = &options.cassette {
            b = b.cassette(c.clone());
        }
        if let Some(log) = &options.log {
            b = b.session_log(log.clone());
        }
        if let Some(quotas) = &self.shared.quotas {
            // Outermost: a call over quota runs no other wrapper.
            b = b.outer_wrapper(Arc::new(QuotaWrapper(quotas.clone())));
        }
        Session {
            shared: self.shared.clone(),
            pipeline: Arc::new(b.build()),
            approver,
            log_level: Arc::new(Mutex::new(None)),
            listed: Arc::new(AtomicU64::new(NEVER_LISTED)),
            placement: None,
        }
    }

    /// Tells every connected session that the tool list changed
    /// (`notifications/tools/list_changed`).
    pub fn tools_changed(&self) {
        self.shared.version.fetch_add(1, Ordering::SeqCst);
        // No receiver means no session is listening: nothing to tell.
        let _ = self.shared.changed.send(());
    }

    /// Says the toolbox's first load finished: `/readyz` answers 200 from now on.
    pub fn mark_ready(&self) {
        self.shared.ready.store(true, Ordering::SeqCst);
    }

    /// Whether the toolbox's first load finished.
    pub fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::SeqCst)
    }

    /// The server's counters (for the front ends that refuse requests
    /// before a call runs).
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Every metric, in the Prometheus text format.
    pub fn metrics_text(&self) -> String {
        let host = &self.shared.host;
        self.shared.metrics.render(&Gauges {
            in_flight: self.in_flight(),
            runtime: host.runtime().stats(),
            artifact_bytes: host.artifacts().bytes() as u64,
            tools: host.registry().visible(None).len(),
        })
    }

    /// Calls running now, across sessions.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no call is running, or `grace` passed; returns whether
    /// every call finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        let wait = async {
            loop {
                let idle = self.shared.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(grace, wait).await.is_ok()
    }
}

/// One client connection's session (a clone is the same session: it shares
/// the pipeline, the approvals and the log level).
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    pipeline: Arc<Pipeline>,
    approver: Arc<Approvals>,
    /// The level this session asked notices at (`logging/setLevel`,
    /// before 2026-07-28).
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// The version of the tool list this session last listed, or
    /// [`NEVER_LISTED`]: `list_changed` goes only to a session whose list
    /// is out of date (a client that has not listed yet gets the current
    /// list when it does, and a notification it did not need can break a
    /// client that is closing).
    listed: Arc<AtomicU64>,
    /// Where calls run, when the transport has a thread of its own
    /// (stdio); `None`: in the request's task.
    placement: Option<Placement>,
}

/// [`Session::listed`] before the first `tools/list`.
const NEVER_LISTED: u64 = u64::MAX;

impl Session {
    /// This session's pipeline.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// This session, with its calls run where `placement` says.
    pub(crate) fn placed(mut self, placement: Placement) -> Session {
        self.placement = Some(placement);
        self
    }

    /// Runs `call` through the pipeline with what the front end hands
    /// down (`stateless`: the repeat check looks at the principal's latest
    /// call), where the session's calls run.
    async fn run(
        &self,
        call: ToolCall,
        signal: CancellationToken,
        stateless: bool,
        handoff: Handoff,
    ) -> ToolResult {
        let pipeline = self.pipeline.clone();
        let shared = self.shared.clone();
        // Wherever it is placed, its spans stay under the request's.
        let running = async move {
            let repeat = stateless.then_some(&shared.repeat);
            pipeline.execute_handed(call, signal, repeat, handoff).await
        }
        .instrument(tracing::Span::current());
        match &self.placement {
            Some(placement) => placement.run(running).await,
            None => running.await,
        }
    }
}

/// Counts a call as running until dropped.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn enter(shared: &Arc<Shared>) -> InFlight {
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(shared.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

const INSTRUCTIONS: &str = "Tools run sandboxed by toolhost. Paths are inside /workspace. \
A failed call's result says why, starting `Error [code]:` with a stable code (also in _meta.toolhost.error.code). \
A result cut to its budget links its full text as a toolhost://artifacts/ resource: \
read it with resources/read (add ?offset=N to page).";

impl Session {
    /// The level notices go to this request at, if its client asked: the
    /// request's own (`_meta`, 2026-07-28) or the session's (`logging/setLevel`).
    fn notice_level(&self, context: &RequestContext<RoleServer>) -> Option<LoggingLevel> {
        context.meta.log_level().or_else(|| {
            *self
                .log_level
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        })
    }

    /// Waits (at most [`toolhost_pipeline::LOAD_WAIT`]) for components still loading;
    /// a client that asked for log messages hears what is loading.
    async fn wait_for_tools(&self, context: &RequestContext<RoleServer>) {
        let registry = self.pipeline.registry();
        if !registry.is_loading() {
            return;
        }
        let level = self.notice_level(context);
        if let Some(level) = level {
            let loading = registry.availability().loading.join(", ");
            Notice {
                severity: Severity::Info,
                text: format!("waiting for components still compiling: {loading}"),
            }
            .send(&context.peer, level)
            .await;
        }
        // Notices during the wait go to this request too (a 2026-07-28
        // client hears nothing outside its requests).
        let mut notices = self.shared.options.notices.subscribe();
        let relay = async {
            loop {
                match notices.recv().await {
                    Ok(n) => {
                        if let Some(level) = level {
                            n.send(&context.peer, level).await;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
                }
            }
        };
        tokio::select! {
            () = registry.settled() => {}
            () = relay => {}
            _ = tokio::time::sleep(toolhost_pipeline::LOAD_WAIT) => {}
            () = context.ct.cancelled() => {}
        }
    }

    /// Counts a finished call in the server's metrics.
    fn count(&self, name: &str, result: &toolhost_contract::ToolResult) {
        let known = self.pipeline.registry().resolve(name, None).is_some();
        self.shared.metrics.record(name, known, result);
    }

    /// Runs `request` through the pipeline, with what its transport said
    /// of it, as the request's revision carries calls: one translation each.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let origin = Origin::of(&context);
        let revision = Revision::of(context.protocol_version().as_ref());
        // What the tool reports while it runs goes to this client only if
        // it asked (a progress token; a log level).
        let (sink, forward) = match crate::relay::for_call(
            &context.peer,
            context.meta.get_progress_token(),
            self.notice_level(&context),
            &request.name,
        ) {
            Some((sink, forward)) => (Some(sink), Some(forward)),
            None => (None, None),
        };
        let done = match self.task_mode(&request, &context) {
            Some(mode) => {
                self.call_as_task(request, &context, &origin, revision, (sink, forward), mode)
                    .await
            }
            None => {
                let calling = async {
                    match revision {
                        Revision::Sessions => {
                            self.call_in_session(request, &context, &origin, sink).await
                        }
                        Revision::Stateless => {
                            self.call_stateless(request, &context, &origin, sink).await
                        }
                    }
                };
                let (done, ()) = tokio::join!(calling, crate::relay::forwarding(forward));
                done.map_err(CallToolResponse::InputRequired)
            }
        };
        match done {
            Ok((name, result)) => {
                // A call waiting for its approval's answer is counted when
                // it comes back with it.
                if !result.failed_with(FailureCode::ApprovalPending) {
                    self.count(&name, &result);
                }
                origin.reply(result, revision).into()
            }
            Err(response) => response,
        }
    }

    /// When `request` may become a task: the client declared the
    /// extension on it, it is not the retry of an inline question, and its
    /// tool's policy lets it (a tool that is not served fails at once).
    fn task_mode(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Option<TaskMode> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if !declared || request.request_state.is_some() || request.input_responses.is_some() {
            return None;
        }
        let mode = self
            .pipeline
            .registry()
            .resolve(&request.name, None)?
            .policy
            .task;
        (mode != TaskMode::Never).then_some(mode)
    }

    /// A call that becomes an MCP task if it runs past the toolbox's
    /// threshold, asks its user, or its policy says always (the task is
    /// the response); else it is answered as any call is. It runs on its
    /// own, with a cancellation of its own: the request's until it is a
    /// task, then `tasks/cancel`'s.
    async fn call_as_task(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        origin: &Origin,
        revision: Revision,
        (sink, forward): (Option<Arc<dyn ContextSink>>, Option<crate::relay::Forward>),
        mode: TaskMode,
    ) -> Result<(String, ToolResult), CallToolResponse> {
        let settings = self.shared.host.task_settings();
        let cancel = CancellationToken::new();
        let slot = Slot::new(
            self.shared.tasks.clone(),
            &origin.principal,
            &request.name,
            settings,
            cancel.clone(),
        );
        let mut call = tool_call(request, context, origin);
        // A task outlives its request, whose id the client may use again.
        call.call_id = format!("{}-{}", call.call_id, &slot.id()[..8]);
        let routed = self.approver.in_task(
            &call.call_id,
            context.client_capabilities().as_ref(),
            slot.clone(),
        );
        let reports: Arc<dyn ContextSink> = Arc::new(Reports {
            slot: slot.clone(),
            live: sink,
        });
        let mut handoff = origin.handoff(Some(reports));
        // Its sandboxes end with the call, not with a response.
        handoff.retire = None;
        let name = call.name.clone();
        let (tx, mut done) = tokio::sync::oneshot::channel();
        let running = InFlight::enter(&self.shared);
        {
            let session = self.clone();
            let cancel = cancel.clone();
            let stateless = origin.connectionless;
            // Its spans stay under the request's, however long it runs.
            tokio::spawn(
                async move {
                    let (_routed, _running) = (routed, running);
                    let result = session.run(call, cancel, stateless, handoff).await;
                    let _ = tx.send(result);
                }
                .instrument(tracing::Span::current()),
            );
        }
        let mut forwarding = std::pin::pin!(crate::relay::forwarding(forward));
        let mut forwarded = false;
        let threshold = tokio::time::sleep(settings.after);
        let mut threshold = std::pin::pin!(threshold);
        // `always`: a task at once, however soon the call would end.
        let ended = if mode == TaskMode::Always {
            None
        } else {
            loop {
                tokio::select! {
                    biased;
                    r = &mut done => break r.ok(),
                    () = &mut forwarding, if !forwarded => forwarded = true,
                    () = context.ct.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                    () = &mut threshold, if !cancel.is_cancelled() => match done.try_recv() {
                        Ok(r) => break Some(r),
                        Err(_) => break None,
                    },
                    () = slot.wanted(), if !cancel.is_cancelled() => break None,
                }
            }
        };
        let ended = match ended {
            Some(result) => Some(result),
            None => match slot.materialize() {
                Ok(task) => {
                    let created = task.created();
                    let session = self.clone();
                    self.shared.metrics.task(TaskEvent::Created);
                    tokio::spawn(async move {
                        let counted = session.clone();
                        let ended = task
                            .watch(
                                async move {
                                    let result = done.await.ok()?;
                                    counted.count(&name, &result);
                                    Some(result)
                                },
                                revision,
                            )
                            .await;
                        session.shared.metrics.task(match ended {
                            TaskStatus::Cancelled => TaskEvent::Cancelled,
                            TaskStatus::Failed => TaskEvent::Failed,
                            _ => TaskEvent::Completed,
                        });
                    });
                    return Err(CallToolResponse::Task(created));
                }
                Err(e) => {
                    tracing::error!("the call could not become a task, so it is waited for: {e}");
                    done.await.ok()
                }
            },
        };
        if !forwarded {
            forwarding.await;
        }
        let result = ended.unwrap_or_else(|| {
            ToolResult::failure(FailureCode::HostError, "the call stopped without a result")
        });
        Ok((name, result))
    }

    /// A call under a revision with sessions: an `ask` is put to the user
    /// with `elicitation/create` while the call waits.
    async fn call_in_session(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        origin: &Origin,
        sink: Option<Arc<dyn ContextSink>>,
    ) -> Result<(String, ToolResult), InputRequiredResult> {
        let call = tool_call(request, context, origin);
        let _routed = self.approver.elicit(
            &call.call_id,
            context.peer.clone(),
            context.client_capabilities().as_ref(),
        );
        let name = call.name.clone();
        let result = self
            .run(call, context.ct.clone(), false, origin.handoff(sink))
            .await;
        Ok((name, result))
    }

    /// A call under a stateless revision (2026-07-28): an `ask` ends the
    /// request `input_required` (the error), or uses the answer it brought.
    async fn call_stateless(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        origin: &Origin,
        sink: Option<Arc<dyn ContextSink>>,
    ) -> Result<(String, ToolResult), InputRequiredResult> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let bound = binding(&origin.principal, &request.name, &arguments);
        let opened = request.request_state.as_deref().map(|state| {
            self.shared
                .seal
                .open(state, &bound, request.input_responses.as_ref())
        });
        let (answer, resume) = opened.map_or((None, None), |o| (Some(o.answer), o.resume));
        let mut call = tool_call(request, context, origin);
        call.resume = resume;
        let routed = self.approver.inline(
            &call.call_id,
            context.client_capabilities().as_ref(),
            answer,
        );
        let name = call.name.clone();
        let result = self
            .run(
                call,
                context.ct.clone(),
                origin.connectionless,
                origin.handoff(sink),
            )
            .await;
        if result.failed_with(FailureCode::ApprovalPending)
            && let Some(asked) = routed.asked()
        {
            // Where the call stopped to ask (a script's checkpoint).
            let resume = result
                .error()
                .and_then(|e| e.info.as_ref())
                .and_then(|i| i["resume"].as_str())
                .map(str::to_owned);
            match self.shared.seal.ask(&asked, &bound, resume) {
                Ok(input) => return Err(input),
                Err(e) => tracing::error!("the approval request could not be built: {e}"),
            }
        }
        Ok((name, result))
    }
}

/// `request` as the pipeline's call, from who its origin says.
fn tool_call(
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    origin: &Origin,
) -> ToolCall {
    let mut call = toolhost_mcp_wire::tool_call(&context.id.to_string(), request);
    call.principal = Some(origin.principal.clone());
    call.trace_id = crate::trace::trace_of(&context.meta.0.0);
    call
}

impl Session {
    /// `tools/list`: one page of the tools this caller may reach, saying
    /// what is still loading or failed.
    async fn listing(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.wait_for_tools(&context).await;
        // The version before the list is read: a change in between is told.
        self.listed
            .store(self.shared.version.load(Ordering::SeqCst), Ordering::SeqCst);
        let registry = self.pipeline.registry();
        let all =
            advertise::schemas_listed(registry, None, Format::Mcp, self.pipeline.issues_handles());
        let all = advertise::within_reach(all, Origin::of(&context).reach().as_deref());
        let all = Revision::of(context.protocol_version().as_ref()).listing(all);
        let mut page =
            toolhost_mcp_wire::tools_page(all, request.as_ref().and_then(|r| r.cursor.as_deref()))?;
        // Never "no tools" in silence: what is still loading, and what
        // failed, is said in the result (and the list changes later).
        let availability = registry.availability();
        if !availability.loading.is_empty() || !availability.failed.is_empty() {
            let failed: Vec<Value> = availability
                .failed
                .iter()
                .map(|(component, why)| json!({"component": component, "reason": why}))
                .collect();
            let mut meta = serde_json::Map::new();
            meta.insert(
                "toolhost".into(),
                json!({"loading": availability.loading, "failed": failed}),
            );
            page.meta = Some(rmcp::model::MetaObject(meta));
            if let Some(level) = self.notice_level(&context)
                && !availability.loading.is_empty()
            {
                Notice {
                    severity: Severity::Warning,
                    text: format!(
                        "still compiling: {}; their tools follow (notifications/tools/list_changed)",
                        availability.loading.join(", ")
                    ),
                }
                .send(&context.peer, level)
                .await;
            }
        }
        Ok(page)
    }

    /// `resources/read`: a page of an artifact the caller's call made.
    async fn reading(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        // The URI that was not found goes in the error's data (SEP-2164).
        let not_found = |message: String| {
            ErrorData::resource_not_found(message, Some(json!({"uri": uri.clone()})))
        };
        let Some((id, offset, limit)) = toolhost_mcp_wire::artifact_request(&uri) else {
            return Err(not_found(format!(
                "no resource `{uri}`: toolhost serves only toolhost://artifacts/ID[?offset=N&limit=M]"
            )));
        };
        // Only the principal whose call made it reads it.
        let owner = Origin::of(&context).principal;
        match self
            .pipeline
            .artifacts()
            .page_owned(&owner, &id, offset, limit)
        {
            Some((text, total)) => {
                Ok(toolhost_mcp_wire::artifact_page(&uri, &id, offset, text, total)?.into())
            }
            None => Err(not_found(format!(
                "artifact `{id}` is not (or no longer) kept: the store keeps the newest results within its size bound"
            ))),
        }
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_logging()
            .enable_tasks()
            .build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.shared.changed.subscribe();
        let peer = context.peer;
        let shared = self.shared.clone();
        let listed = self.listed.clone();
        tokio::spawn(async move {
            // Lagging behind only means several changes came at once: one
            // notification covers them.
            while !matches!(
                changes.recv().await,
                Err(broadcast::error::RecvError::Closed)
            ) {
                let seen = listed.load(Ordering::SeqCst);
                let now = shared.version.load(Ordering::SeqCst);
                if seen == NEVER_LISTED || seen >= now {
                    continue;
                }
                // Told once per list it saw.
                listed.store(now, Ordering::SeqCst);
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    /// `logging/setLevel` (before 2026-07-28): notices at or above `level`
    /// go to this session from now on.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let first = self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .replace(request.level)
            .is_none();
        if first {
            let mut notices = self.shared.options.notices.subscribe();
            let level = self.log_level.clone();
            let peer = context.peer;
            tokio::spawn(async move {
                loop {
                    match notices.recv().await {
                        Ok(n) => {
                            let now = *level
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            if let Some(l) = now {
                                n.send(&peer, l).await;
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                    if peer.is_transport_closed() {
                        break;
                    }
                }
            });
        }
        Ok(())
    }

    /// 2026-07-28 `subscriptions/listen`: this server can say that its tool
    /// list changed.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = Some(true);
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        if subscription.accepted().tools_list_changed != Some(true) {
            subscription.cancelled().await;
            return Ok(());
        }
        let mut changes = self.shared.changed.subscribe();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    // Lagging behind: several changes, one notification.
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if subscription.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let span = crate::trace::request_span("tools/list", None, &context.meta.0.0);
        self.listing(request, context).instrument(span).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(responses) = &request.input_responses {
            crate::approve::objects_only(responses)?;
        }
        let _running = InFlight::enter(&self.shared);
        let span = crate::trace::request_span("tools/call", Some(&request.name), &context.meta.0.0);
        Ok(self.call(request, context).instrument(span).await)
    }

    /// SEP-2663 `tasks/get`: a task of this caller's, from any replica
    /// that shares the task store.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let principal = Origin::of(&context).principal;
        let span = crate::trace::request_span("tasks/get", None, &context.meta.0.0);
        let task = span.in_scope(|| self.shared.tasks.get(&request.task_id, &principal))?;
        Ok(GetTaskResult::new(task))
    }

    /// SEP-2663 `tasks/update`: answers to what a task of this caller's
    /// asks now.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = Origin::of(&context).principal;
        let span = crate::trace::request_span("tasks/update", None, &context.meta.0.0);
        span.in_scope(|| {
            self.shared
                .tasks
                .update(&request.task_id, &principal, &request.input_responses)
        })
    }

    /// SEP-2663 `tasks/cancel`: stops a task of this caller's; what it
    /// staged is dropped.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = Origin::of(&context).principal;
        let span = crate::trace::request_span("tasks/cancel", None, &context.meta.0.0);
        span.in_scope(|| self.shared.tasks.cancel(&request.task_id, &principal))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        // Artifacts are reached by the links in results, not listed.
        Ok(ListResourcesResult::default())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = crate::trace::request_span("resources/read", None, &context.meta.0.0);
        self.reading(request, context).instrument(span).await
    }
}
