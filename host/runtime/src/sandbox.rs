//! The per-call sandbox: a WASI context built from the policy and nothing else.
//!
//! Defaults, all deny: no preopened directories, no environment variables, no
//! arguments, stdin closed, stdout/stderr captured into bounded pipes, TCP,
//! UDP and name lookup off (never granted: network access is only outgoing
//! HTTP through the allow-list in [`crate::egress`]). Clocks come from the
//! call's clock (the runtime's injected clock unless the call brings a
//! virtual one); randomness from the OS unless the call asks for seeded
//! [`Entropy`].

use crate::calls::{Scope, ToolCaller};
use crate::context::CallContext;
use crate::egress::EgressHooks;
use crate::engine::RuntimeConfig;
use crate::entropy::{Entropy, SeededStream};
use crate::limiter::Limiter;
use crate::pipe::BoundedPipe;
use crate::staging::Staging;
use crate::write_budget::WriteBudget;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_contract::ContextSink;
use toolhost_contract::clock::Clock;
use toolhost_policy::{FsMode, ToolPolicy};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::{
    FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The `T` of every `Store<T>`.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: EgressHooks,
    pub(crate) limiter: Limiter,
    pub(crate) stdout: BoundedPipe,
    pub(crate) stderr: BoundedPipe,
    /// When the deadline interrupts the guest (`None`: too far to represent).
    pub(crate) deadline: Option<std::time::Instant>,
    /// The caller's (re-joined) cancellation.
    pub(crate) cancel: CancellationToken,
    pub(crate) denied: Arc<Mutex<Vec<String>>>,
    /// What the call may still write into its read-write grants.
    pub(crate) budget: Arc<WriteBudget>,
    /// The read-write grants, staged.
    pub(crate) staging: Staging,
    /// What the tool reports while it runs (contract 0.3.0's `context`).
    pub(crate) context: CallContext,
    /// `context.cancelled` told the tool to stop (its caller cancelled, or
    /// its deadline passed): a failure it returns then is that stop.
    pub(crate) told_to_stop: bool,
    /// Where a code runner's tool calls go (`None`: it may make none).
    pub(crate) tools: Option<Arc<dyn ToolCaller>>,
    /// Nanoseconds the deadline moved on: time the call's tool calls spent
    /// waiting for a person (shared with the run's backstop).
    pub(crate) deadline_moved: Arc<AtomicU64>,
}

impl HostState {
    /// Whether the call's wall-clock deadline has passed.
    pub(crate) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| {
            let moved = Duration::from_nanos(self.deadline_moved.load(Ordering::Relaxed));
            std::time::Instant::now() >= d + moved
        })
    }

    /// Moves the deadline on by `by` (a person's answer was waited for).
    pub(crate) fn extend_deadline(&mut self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        if ns > 0 {
            self.deadline_moved.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// The filesystem view and the write budget, borrowed together.
    pub(crate) fn filesystem_parts(
        &mut self,
    ) -> (WasiFilesystemCtxView<'_>, &Arc<WriteBudget>, &mut Staging) {
        (
            WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            &self.budget,
            &mut self.staging,
        )
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
        for name in &sb.env_allow {
            if let Ok(value) = std::env::var(name) {
                b.env(name, value);
            }
        }
        for (k, v) in &sb.env_set {
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
            deadline_moved: Arc::new(AtomicU64::new(0)),
            staging,
            wasi: b.build(),
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
