//! The per-call sandbox: a WASI context built from the policy and nothing else.
//!
//! Defaults, all deny: no preopened directories, no environment variables, no
//! arguments, stdin closed, stdout/stderr captured into bounded pipes, TCP,
//! UDP and name lookup off (never granted: network access is only outgoing
//! HTTP through the allow-list in [`crate::egress`]). Clocks come from the
//! call's clock (the runtime's injected clock unless the call brings a
//! virtual one); randomness from the OS unless the call asks for seeded
//! [`Entropy`].

use crate::bindings::{v3, v4, v5};
use crate::calls::{Scope, Started, Suspended, ToolCaller, failure, failure_v5};
use crate::config::RuntimeConfig;
use crate::context::CallContext;
use crate::egress::EgressHooks;
use crate::entropy::{Entropy, SeededStream};
use crate::fs::{BudgetedFsView, Staging, WriteBudget, WriteBudgetExceeded};
use crate::limiter::Limiter;
use crate::pipe::BoundedPipe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::Clock;
use toolhost_contract::{ContextEvent, ContextSink, FailureCode, ToolFailure};
use toolhost_effects::Staged;
use toolhost_policy::{FsMode, ToolPolicy};
use toolhost_worker_wire::CallOutcome;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::{
    FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The `T` of every `Store<T>`.
pub(crate) struct HostState {
    wasi: WasiCtx,
    /// The environment the policy grants, as `wasi:config` values.
    config_vars: Vec<(String, String)>,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: EgressHooks,
    limiter: Limiter,
    stdout: BoundedPipe,
    stderr: BoundedPipe,
    /// When the deadline interrupts the guest (`None`: too far to represent).
    deadline: Option<Instant>,
    /// The caller's (re-joined) cancellation.
    cancel: CancellationToken,
    denied: Arc<Mutex<Vec<String>>>,
    /// What the call may still write into its read-write grants.
    budget: Arc<WriteBudget>,
    /// The read-write grants, staged.
    staging: Staging,
    /// What the tool reports while it runs (contract 0.3.0's `context`).
    context: CallContext,
    /// `context.cancelled` told the tool to stop (its caller cancelled, or
    /// its deadline passed): a failure it returns then is that stop.
    told_to_stop: bool,
    /// Where a code runner's tool calls go (`None`: it may make none).
    tools: Option<Arc<dyn ToolCaller>>,
    /// The calls a code runner started (contract 0.5.0).
    started: Started,
    /// Nanoseconds the deadline moved on: time the call's tool calls spent
    /// waiting for a person (shared with the run's backstop).
    deadline_moved: Arc<AtomicU64>,
}

/// What a call produced and what its sandbox saw, handed over once the
/// guest is done ([`HostState::finish`]).
pub(crate) struct Produced {
    /// The guest's stdout (bounded, lossily decoded).
    pub(crate) stdout: String,
    /// The guest's stderr (bounded, lossily decoded).
    pub(crate) stderr: String,
    /// stdout or stderr passed its bound.
    pub(crate) output_overflowed: bool,
    /// Memory growth passed the policy's limit.
    pub(crate) memory_limit_hit: bool,
    /// Outgoing requests refused by policy, as `host:port`.
    pub(crate) network_denied: Vec<String>,
    /// Bytes written into read-write grants.
    pub(crate) bytes_written: u64,
    /// Files, directories and links created.
    pub(crate) entries_created: u64,
    /// The first write budget the call exceeded, if any.
    pub(crate) write_budget_exceeded: Option<WriteBudgetExceeded>,
    /// The call's staged writes, for the pipeline to commit (none for a
    /// call in a script's transaction).
    pub(crate) staged: Staged,
    /// What the tool reported, in order, and how many reports were dropped.
    pub(crate) context: (Vec<ContextEvent>, u64),
    /// `context.cancelled` told the tool to stop.
    pub(crate) told_to_stop: bool,
}

impl HostState {
    /// The call's configuration values (`wasi:config`): the environment
    /// its policy grants.
    pub(crate) fn config_vars(&self) -> &[(String, String)] {
        &self.config_vars
    }
}

impl HostState {
    /// Whether the call's wall-clock deadline has passed.
    pub(crate) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| {
            let moved = Duration::from_nanos(self.deadline_moved.load(Ordering::Relaxed));
            Instant::now() >= d + moved
        })
    }

    /// Whether the caller cancelled the call.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Sets when the deadline interrupts the guest.
    pub(crate) fn set_deadline(&mut self, at: Option<Instant>) {
        self.deadline = at;
    }

    /// Nanoseconds the deadline moved on, shared with the run's backstop.
    pub(crate) fn deadline_moved(&self) -> Arc<AtomicU64> {
        self.deadline_moved.clone()
    }

    /// The memory and table limits of the store.
    pub(crate) fn limiter(&mut self) -> &mut Limiter {
        &mut self.limiter
    }

    /// Moves the deadline on by `by` (a person's answer was waited for).
    fn extend_deadline(&mut self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        if ns > 0 {
            self.deadline_moved.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// The budgeted view of this call's filesystem (the linker's getter).
    pub(crate) fn budgeted_fs(&mut self) -> BudgetedFsView<'_> {
        BudgetedFsView::new(
            WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            &self.budget,
            &mut self.staging,
        )
    }

    /// Ends the call's reporting and hands over what it produced: its
    /// output, its staged writes, its budgets' use. Called once, when the
    /// guest is done.
    pub(crate) fn finish(&mut self) -> Produced {
        let (bytes_written, entries_created) = self.budget.used();
        Produced {
            stdout: self.stdout.contents(),
            stderr: self.stderr.contents(),
            output_overflowed: self.stdout.overflowed() || self.stderr.overflowed(),
            memory_limit_hit: self.limiter.hit,
            network_denied: self
                .denied
                .lock()
                .map(|mut d| std::mem::take(&mut *d))
                .unwrap_or_default(),
            bytes_written,
            entries_created,
            write_budget_exceeded: self.budget.exceeded(),
            staged: self.staging.take_staged(),
            context: self.context.finish(),
            told_to_stop: self.told_to_stop,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// Why a sandbox could not be built (reported as `host_error`).
#[derive(Debug, thiserror::Error)]
#[error("granted directory {host} (guest {guest}) cannot be opened: {reason}")]
pub(crate) struct SandboxError {
    host: String,
    guest: String,
    reason: String,
}

struct WasiClock(Arc<dyn Clock>);

impl HostWallClock for WasiClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.wall_ms())
    }
}

impl HostMonotonicClock for WasiClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        self.0.monotonic_ns()
    }
}

impl HostState {
    /// Builds the sandbox for one call from `policy` alone.
    pub(crate) fn build(
        policy: &ToolPolicy,
        config: &RuntimeConfig,
        entropy: Entropy,
        clock: Arc<dyn Clock>,
        cancel: CancellationToken,
        sink: Option<Arc<dyn ContextSink>>,
        scope: Scope,
    ) -> Result<HostState, SandboxError> {
        let limits = &policy.limits;
        let sb = &policy.sandbox;
        let cap = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let stdout = BoundedPipe::new("stdout", cap(limits.max_stdout_bytes));
        let stderr = BoundedPipe::new("stderr", cap(limits.max_stdout_bytes));
        let mut b = WasiCtxBuilder::new();
        b.allow_blocking_current_thread(config.fs_on_calling_thread)
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .wall_clock(WasiClock(clock.clone()))
            .monotonic_clock(WasiClock(clock.clone()));
        for grant in &sb.fs {
            let perms = match grant.mode {
                FsMode::ReadOnly => FsPerms::ReadOnly,
                FsMode::ReadWrite => FsPerms::ReadWrite,
            };
            b.preopened_dir(&grant.host, &grant.guest, perms)
                .map_err(|e| SandboxError {
                    host: grant.host.display().to_string(),
                    guest: grant.guest.clone(),
                    reason: format!("{e:#}"),
                })?;
        }
        if let Some(first) = sb.fs.first() {
            b.initial_cwd(&first.guest);
        }
        // The environment the policy grants: also the component's
        // `wasi:config` values.
        let mut config_vars: Vec<(String, String)> = Vec::new();
        for name in &sb.env_allow {
            if let Ok(value) = std::env::var(name) {
                config_vars.push((name.clone(), value));
            }
        }
        for (k, v) in &sb.env_set {
            config_vars.retain(|(name, _)| name != k);
            config_vars.push((k.clone(), v.clone()));
        }
        for (k, v) in &config_vars {
            b.env(k, v);
        }
        if let Entropy::Seeded(seed) = entropy {
            b.secure_random(SeededStream::new(seed))
                .insecure_random(SeededStream::new(seed ^ 0x5eed))
                .insecure_random_seed(u128::from(seed));
        }
        let rw: Vec<(std::path::PathBuf, String)> = sb
            .fs
            .iter()
            .filter(|g| g.mode == FsMode::ReadWrite)
            .map(|g| (g.host.clone(), g.guest.clone()))
            .collect();
        let staging = if let Some(tx) = &scope.transaction {
            Staging::in_transaction(
                tx,
                &sb.fs,
                &config.staging_dir(),
                config.fs_on_calling_thread,
            )
            .map_err(|(host, reason)| SandboxError {
                guest: sb
                    .fs
                    .iter()
                    .find(|g| g.host.display().to_string() == host)
                    .map(|g| g.guest.clone())
                    .unwrap_or_default(),
                host,
                reason: format!("its writes cannot join the script's: {reason}"),
            })?
        } else if rw.is_empty() || !config.stage_writes {
            Staging::default()
        } else {
            Staging::new(&rw, &config.staging_dir(), config.fs_on_calling_thread).map_err(|e| {
                SandboxError {
                    host: rw
                        .first()
                        .map(|(h, _)| h.display().to_string())
                        .unwrap_or_default(),
                    guest: rw.first().map(|(_, g)| g.clone()).unwrap_or_default(),
                    reason: format!("its writes cannot be staged: {e}"),
                }
            })?
        };
        let denied = Arc::new(Mutex::new(Vec::new()));
        Ok(HostState {
            context: CallContext::new(limits, clock, sink),
            told_to_stop: false,
            tools: scope.tools,
            started: Started::default(),
            deadline_moved: Arc::new(AtomicU64::new(0)),
            staging,
            wasi: b.build(),
            config_vars,
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks: EgressHooks {
                relay: config.egress_relay.clone(),
                rules: sb.network.clone(),
                max_response_bytes: cap(limits.max_http_response_bytes),
                timeout: Duration::from_millis(limits.http_timeout_ms),
                denied: denied.clone(),
            },
            limiter: Limiter {
                memory_limit: cap(limits.memory_bytes),
                hit: false,
            },
            stdout,
            stderr,
            deadline: None,
            cancel,
            denied,
            budget: Arc::new(WriteBudget::new(
                limits.max_write_bytes,
                limits.max_files_created,
            )),
        })
    }
}

/// The `context` import of one contract version (0.3.0 on, all have the
/// same interface, each with its own types): served by the store's data,
/// as the world's linking asks.
macro_rules! context_host {
    ($v:ident) => {
        impl $v::types::Host for HostState {}

        impl $v::context::Host for HostState {
            fn progress(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
                self.context.progress(done, total, message);
            }

            fn log(&mut self, level: $v::types::LogLevel, message: String) {
                self.context.log(level.into(), message);
            }

            fn cancelled(&mut self) -> bool {
                let stop = self.cancel.is_cancelled() || self.past_deadline();
                self.told_to_stop |= stop;
                stop
            }
        }
    };
}

context_host!(v3);
context_host!(v4);
context_host!(v5);

/// The refusal a component gets that calls tools without a caller: linked
/// only for a policy with `call_tools`, a component started without one
/// gets a refusal, never a call.
fn no_caller() -> ToolFailure {
    ToolFailure::new(
        FailureCode::Denied,
        "this component may not call tools here: nothing was given to call them with",
    )
}

/// One call's outcome as the runner gets it: its value or failure, or the
/// trap that carries a question out of the instance.
fn outcome(outcome: CallOutcome) -> wasmtime::Result<Result<String, ToolFailure>> {
    match outcome {
        CallOutcome::Value(v) => Ok(Ok(v)),
        CallOutcome::Failed(f) => Ok(Err(f)),
        CallOutcome::Suspend(f) => Err(wasmtime::Error::new(Suspended(f))),
    }
}

impl HostState {
    /// `tools.call`.
    async fn call_tool(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Result<String, ToolFailure>> {
        let Some(caller) = self.tools.clone() else {
            return Ok(Err(no_caller()));
        };
        let reply = caller.call(name, arguments).await;
        self.extend_deadline(reply.waited);
        outcome(reply.outcome)
    }
}

impl v4::tools::Host for HostState {
    async fn call(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Result<String, v4::types::ToolFailure>> {
        Ok(self
            .call_tool(name, arguments)
            .await?
            .map_err(|f| failure(&f)))
    }
}

impl v5::tools::Host for HostState {
    async fn call(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Result<String, v5::types::ToolFailure>> {
        Ok(self
            .call_tool(name, arguments)
            .await?
            .map_err(|f| failure_v5(&f)))
    }

    fn start(&mut self, name: String, arguments: String) -> u32 {
        match self.tools.clone() {
            Some(caller) => self.started.start(&caller, name, arguments),
            None => self.started.ended_at_once(no_caller()),
        }
    }

    async fn wait(
        &mut self,
        handles: Vec<u32>,
    ) -> wasmtime::Result<Vec<(u32, Result<String, v5::types::ToolFailure>)>> {
        let ended = self.started.wait(&handles).await;
        // Waits overlap: the deadline moves on by the longest.
        let waited = ended
            .iter()
            .map(|(_, r)| r.waited)
            .max()
            .unwrap_or_default();
        self.extend_deadline(waited);
        let mut out = Vec::with_capacity(ended.len());
        for (h, reply) in ended {
            out.push((h, outcome(reply.outcome)?.map_err(|f| failure_v5(&f))));
        }
        Ok(out)
    }
}

/// Links the `context` import (and the types it uses) of contracts 0.3.0,
/// 0.4.0 and 0.5.0, and the `tools` of 0.4.0 and 0.5.0 (see
/// [`crate::calls`]).
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<HostState>,
) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    v3::ToolProvider::add_to_linker::<HostState, HasSelf<HostState>>(linker, |s| s)?;
    v4::CodeRunner::add_to_linker::<HostState, HasSelf<HostState>>(linker, |s| s)?;
    v5::CodeRunner::add_to_linker::<HostState, HasSelf<HostState>>(linker, |s| s)
}
