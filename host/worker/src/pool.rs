//! The serving process's side: a pool of workers per component, and the
//! tool body that runs a call in one of them.

use crate::wall::{Support, WallSpec, WallStatus};
use crate::wire::{self, Channel, FromWorker, Start, ToWorker, WireError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_channel::ring::{Lanes, Region};
use toolhost_contract::{ContentBlock, FailureCode, ToolFailure};
use toolhost_effects::{Staged, StagingArea};
use toolhost_pipeline::{Invocation, ToolBody};
use toolhost_policy::{Policy, ToolPolicy, Walls};
use toolhost_runtime::{Entropy, Execution, ExecutionReport, LoadedComponent, ToolCaller};
use toolhost_worker_wire::accept::{
    Granted, answer_bound, check_report, event_size, forged, is_forgery, reports_bound, restage,
};

/// The command-line word that makes a `toolhost` binary a worker.
pub const WORKER_ARG: &str = "__worker";

/// Idle workers kept per component.
const MAX_IDLE: usize = 4;

/// How long a worker may take to start (load the component, wall itself in).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Grace after a call's deadline before its worker is killed (the worker's
/// own deadline ends the call first unless it is stuck).
const BACKSTOP_GRACE: Duration = Duration::from_secs(2);

/// What the kernel offers, probed once.
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        #[allow(unused_mut)]
        let mut s = Support::probe();
        // Test builds only: a kernel without a wall, pretended
        // (`landlock`, `seccomp` or both), for the tests of what it gets.
        #[cfg(debug_assertions)]
        if let Some(v) = std::env::var_os("TOOLHOST_TEST_PRETEND_NO_WALLS") {
            let v = v.to_string_lossy();
            if v.contains("landlock") {
                s.landlock_abi = 0;
            }
            if v.contains("seccomp") {
                s.seccomp = false;
            }
        }
        s
    })
}

/// The executable set by [`workers_run_this_binary`].
static THIS_BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Says that this program is `toolhost` and its workers run it (its
/// `main` handles [`WORKER_ARG`]): they are started as `/proc/self/exe`,
/// the running binary even after an upgrade replaced the file, so a
/// worker always speaks its serving process's protocol.
pub fn workers_run_this_binary() {
    let running = PathBuf::from("/proc/self/exe");
    let exe = if running.exists() {
        running
    } else {
        std::env::current_exe().unwrap_or(running)
    };
    let _ = THIS_BINARY.set(exe);
}

/// The executable workers run: `TOOLHOST_WORKER_EXE`, else this program
/// when it said it is one ([`workers_run_this_binary`]), else the
/// `toolhost` beside it or one directory up (a test or bench binary in
/// Cargo's `deps/`).
pub fn worker_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TOOLHOST_WORKER_EXE") {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = THIS_BINARY.get() {
        return Some(p.clone());
    }
    let me = std::env::current_exe().ok()?;
    let dir = me.parent()?;
    [dir.join("toolhost"), dir.parent()?.join("toolhost")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The host directories `policy` grants, in its order, each once.
fn granted(policy: &ToolPolicy) -> Vec<PathBuf> {
    let mut read: Vec<PathBuf> = Vec::new();
    for g in &policy.sandbox.fs {
        if !read.contains(&g.host) {
            read.push(g.host.clone());
        }
    }
    // Two tools granted the same directories share a pool, whatever the
    // order their policies name them in.
    read.sort();
    read
}

/// Why a component cannot run in workers here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// The walls this kernel lacks.
    pub missing: Vec<&'static str>,
}

/// A component's tools, run in its pools of walled-in workers: one pool
/// per set of directories granted, so that a worker's Landlock domain
/// covers the grants of the tools it runs, not every grant of the
/// component.
pub struct Isolated {
    component: Arc<LoadedComponent>,
    /// The pools; the first runs the tools under the component-level
    /// grants.
    pools: Vec<Arc<Pool>>,
    /// The pool of each tool whose override grants other directories.
    by_tool: std::collections::HashMap<String, usize>,
}

impl std::fmt::Debug for Isolated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolated")
            .field("component", &self.component.path())
            .finish_non_exhaustive()
    }
}

struct Pool {
    component: Arc<LoadedComponent>,
    exe: Option<PathBuf>,
    spec: WallSpec,
    walls: Walls,
    artifact: tokio::sync::OnceCell<Arc<Vec<u8>>>,
    idle: Mutex<Vec<Worker>>,
}

impl Isolated {
    /// `component` under `policy`, each tool run in workers whose walls
    /// cover the directories its policy grants; `walls` says whether it
    /// runs on a kernel without them.
    pub fn new(component: Arc<LoadedComponent>, policy: &Policy, walls: Walls) -> Isolated {
        let exe = worker_exe();
        let pool = |read: Vec<PathBuf>| {
            Arc::new(Pool {
                component: component.clone(),
                exe: exe.clone(),
                spec: WallSpec {
                    read,
                    write: Vec::new(),
                },
                walls,
                artifact: tokio::sync::OnceCell::new(),
                idle: Mutex::default(),
            })
        };
        let mut sets = vec![granted(&policy.component())];
        let mut by_tool = std::collections::HashMap::new();
        for tool in policy.tool_overrides() {
            let set = granted(&policy.for_tool(tool));
            let at = match sets.iter().position(|s| *s == set) {
                Some(at) => at,
                None => {
                    sets.push(set);
                    sets.len() - 1
                }
            };
            if at != 0 {
                by_tool.insert(tool.to_owned(), at);
            }
        }
        Isolated {
            pools: sets.into_iter().map(pool).collect(),
            by_tool,
            component,
        }
    }

    /// The pool that runs `tool`.
    fn pool(&self, tool: &str) -> &Arc<Pool> {
        // Every index in `by_tool` is one of `pools` (made together in `new`).
        &self.pools[self.by_tool.get(tool).copied().unwrap_or(0)]
    }

    /// Whether its calls can run on this kernel: `Err` names the walls
    /// missing when its policy requires them.
    pub fn available(&self) -> Result<(), Unavailable> {
        let missing = support().missing();
        if missing.is_empty() || self.pools[0].walls == Walls::BestEffort {
            Ok(())
        } else {
            Err(Unavailable { missing })
        }
    }

    /// The process ids of the workers idle now.
    pub fn idle_pids(&self) -> Vec<u32> {
        self.pools
            .iter()
            .flat_map(|p| {
                p.idle
                    .lock()
                    .map(|i| i.iter().map(|w| w.pid).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Starts a worker now and keeps it idle (a warm first call): in the
    /// pool of the component's first tool.
    pub async fn prestart(&self) -> Result<(), ToolFailure> {
        let pool = match self.component.tools().first() {
            Some(t) => self.pool(&t.name),
            None => &self.pools[0],
        };
        let w = pool.checkout().await?;
        pool.checkin(w);
        Ok(())
    }

    async fn run(&self, input: Invocation<'_>) -> Execution {
        if let Err(u) = self.available() {
            return Execution::new(Err(walls_unavailable(&u)), ExecutionReport::default());
        }
        let pool = self.pool(input.tool);
        let mut worker = match pool.checkout().await {
            Ok(w) => w,
            Err(f) => return Execution::new(Err(f), ExecutionReport::default()),
        };
        tracing::Span::current().record("toolhost.worker.pid", worker.pid);
        let policy = resolved(input.policy);
        // Only a script's call compares directories (each canonicalized:
        // file-system work a call of its own does not need).
        let granted = input
            .scope
            .transaction
            .as_ref()
            .map(|_| Granted::of(input.policy));
        let granted = granted.as_ref();
        let before = match &input.scope.transaction {
            None => None,
            Some(tx) => match tx.snapshot() {
                Ok(s) => granted.map(|g| g.seen(&s)),
                Err(e) => {
                    return Execution::new(
                        Err(ToolFailure::new(
                            FailureCode::HostError,
                            format!("the script's staged files cannot be read: {e}"),
                        )),
                        ExecutionReport::default(),
                    );
                }
            },
        };
        let clock = input
            .clock
            .clone()
            .unwrap_or_else(|| self.component.runtime().config().clock.clone());
        let policy_sent = if worker.sent_policy.as_ref() == Some(&policy) {
            None
        } else {
            worker.sent_policy = Some(policy.clone());
            Some(policy.clone())
        };
        let seq = worker.next_seq();
        let msg = ToWorker::Execute(Box::new(wire::Execute {
            seq,
            tool: input.tool.to_owned(),
            arguments: input.arguments.to_owned(),
            policy: policy_sent,
            fuel: input.budget.fuel,
            deadline_ns: u64::try_from(input.budget.deadline.as_nanos()).unwrap_or(u64::MAX),
            seed: match input.entropy {
                Entropy::Os => None,
                Entropy::Seeded(s) => Some(s),
            },
            clock: clock.portable(),
            live: input.sink.is_some(),
            transaction: before.clone(),
            tools: input.scope.tools.is_some(),
        }));
        let denied = Mutex::new(Vec::new());
        let deadline = Instant::now() + input.budget.deadline + BACKSTOP_GRACE;
        worker
            .channel
            .set_max_frame(answer_bound(&policy, before.as_ref()));
        let reply = worker
            .call(
                &msg,
                seq,
                deadline,
                &input.cancel,
                |event| {
                    if let Some(sink) = &input.sink {
                        sink.emit(&event);
                    }
                },
                &policy,
                &denied,
                input.scope.tools.as_ref(),
            )
            .await;
        let executed = match reply {
            Ok(FromWorker::Executed(e)) => *e,
            Ok(_) => {
                return Execution::new(
                    Err(refused(
                        worker,
                        "it answered an `execute` with another kind of answer",
                    )),
                    ExecutionReport::default(),
                );
            }
            Err(Ended::Refused(why)) => {
                return Execution::new(Err(refused(worker, &why)), ExecutionReport::default());
            }
            Err(Ended::Cancelled) => {
                pool.drain(worker, seq);
                return Execution::new(Err(cancelled()), ExecutionReport::default());
            }
            Err(Ended::Deadline) => {
                tracing::warn!(
                    pid = worker.pid,
                    "a worker overran its call's deadline: killed"
                );
                let _ = worker.child.start_kill();
                return Execution::new(
                    Err(ToolFailure::new(
                        FailureCode::Timeout,
                        format!(
                            "the tool did not finish within its {} ms deadline",
                            input.budget.deadline.as_millis()
                        ),
                    )),
                    ExecutionReport::default(),
                );
            }
            Err(Ended::Died(why)) => {
                return Execution::new(
                    Err(died(&mut worker, &why).await),
                    ExecutionReport::default(),
                );
            }
        };
        // What an honest worker cannot have sent refuses the call and
        // stops the worker.
        if let Err(why) = check_report(&executed.report, &policy) {
            return Execution::new(Err(refused(worker, &why)), ExecutionReport::default());
        }
        clock.advance_reads(executed.clock_reads);
        let mut report = executed.report;
        for d in denied.into_inner().unwrap_or_default() {
            if !report.network_denied.contains(&d) {
                report.network_denied.push(d);
            }
        }
        let mut outcome = executed.outcome;
        let mut staged = Staged::default();
        if outcome.is_ok() {
            let restaged = match (
                &input.scope.transaction,
                granted,
                before,
                executed.transaction,
            ) {
                (Some(tx), Some(granted), Some(before), Some(after)) => {
                    granted.take_changes(tx, &before, after, input.policy)
                }
                (Some(_), ..) => Ok(()),
                (None, ..) => restage(
                    &self.component.runtime().staging_dir(),
                    executed.staged,
                    input.policy,
                )
                .map(|s| staged = s),
            };
            if let Err(f) = restaged {
                if is_forgery(&f) {
                    return Execution::new(Err(stopped(worker, f)), ExecutionReport::default());
                }
                outcome = Err(f);
            }
        }
        pool.checkin(worker);
        Execution {
            outcome,
            rendered: executed.rendered,
            report,
            staged,
        }
    }

    async fn render_in_worker(
        &self,
        tool: &str,
        arguments: &str,
        value: &str,
        policy: &ToolPolicy,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        if self.component.host_renders(tool) {
            return Ok(None);
        }
        self.available().map_err(|u| walls_unavailable(&u))?;
        let pool = self.pool(tool);
        let mut worker = pool.checkout().await?;
        let seq = worker.next_seq();
        let msg = ToWorker::Render(Box::new(wire::Render {
            seq,
            tool: tool.to_owned(),
            arguments: arguments.to_owned(),
            value: value.to_owned(),
            policy: resolved(policy),
        }));
        let deadline =
            Instant::now() + Duration::from_millis(policy.limits.timeout_ms) + BACKSTOP_GRACE;
        let denied = Mutex::new(Vec::new());
        worker.channel.set_max_frame(answer_bound(policy, None));
        match worker
            .call(&msg, seq, deadline, &cancel, |_| {}, policy, &denied, None)
            .await
        {
            Ok(FromWorker::Rendered { outcome, .. }) => {
                pool.checkin(worker);
                outcome
            }
            Ok(_) => Err(refused(
                worker,
                "it answered a `render` with another kind of answer",
            )),
            Err(Ended::Refused(why)) => Err(refused(worker, &why)),
            Err(Ended::Cancelled) => {
                pool.drain(worker, seq);
                Err(cancelled())
            }
            Err(Ended::Deadline) => {
                let _ = worker.child.start_kill();
                Err(ToolFailure::new(
                    FailureCode::Timeout,
                    "render did not finish within its deadline",
                ))
            }
            Err(Ended::Died(why)) => Err(died(&mut worker, &why).await),
        }
    }
}

#[async_trait::async_trait]
impl ToolBody for Isolated {
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        use tracing::Instrument as _;
        // The body, run in a worker process: a child of the call's
        // dispatch.
        let span = tracing::info_span!(
            target: toolhost_contract::SPAN_TARGET,
            "worker",
            otel.name = "worker",
            gen_ai.tool.name = input.tool,
            toolhost.worker.pid = tracing::field::Empty,
            toolhost.worker.instantiate_us = tracing::field::Empty,
            toolhost.worker.elapsed_us = tracing::field::Empty,
            toolhost.fuel_consumed = tracing::field::Empty,
        );
        let exec = self.run(input).instrument(span.clone()).await;
        // What the worker says it spent: figures only, whatever it sends.
        let report = &exec.report;
        span.record(
            "toolhost.worker.instantiate_us",
            report.instantiate.as_micros() as u64,
        );
        span.record(
            "toolhost.worker.elapsed_us",
            report.elapsed.as_micros() as u64,
        );
        span.record("toolhost.fuel_consumed", report.fuel_consumed);
        exec
    }

    async fn render(
        &self,
        tool: &str,
        arguments: &str,
        value: &str,
        policy: &ToolPolicy,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        self.render_in_worker(tool, arguments, value, policy, cancel)
            .await
    }

    fn component_id(&self) -> Option<&str> {
        Some(self.component.id())
    }
}

/// The policy a worker gets: the environment's allowed values read here
/// (a worker has an empty environment of its own).
fn resolved(policy: &ToolPolicy) -> ToolPolicy {
    let mut p = policy.clone();
    for name in std::mem::take(&mut p.sandbox.env_allow) {
        if let Ok(v) = std::env::var(&name) {
            p.sandbox.env_set.entry(name).or_insert(v);
        }
    }
    p
}

/// Stops a worker that sent what no honest worker sends: killed now (not
/// kept idle: the next call starts another), and its call refused.
fn refused(worker: Worker, why: &str) -> ToolFailure {
    stopped(worker, forged(why.to_owned()))
}

/// Stops `worker` for the forgery `f`, and says so in `f`.
fn stopped(mut worker: Worker, f: ToolFailure) -> ToolFailure {
    let _ = worker.child.start_kill();
    tracing::warn!(
        pid = worker.pid,
        why = %f.message,
        "a worker sent what no honest worker sends: stopped; the next call starts another"
    );
    let reason = f.message.clone();
    let message = match f.code.as_str() {
        "worker_refused" => format!(
            "the worker running the tool sent what the host refuses ({reason}); it was \
             stopped, and nothing it did was kept"
        ),
        _ => format!("{reason}; the worker was stopped, and nothing it did was kept"),
    };
    ToolFailure {
        code: f.code,
        message,
        info: Some(serde_json::json!({ "reason": reason })),
    }
}

fn walls_unavailable(u: &Unavailable) -> ToolFailure {
    ToolFailure::new(
        FailureCode::WallsUnavailable,
        format!(
            "this component runs in walled-in worker processes, and this kernel lacks {} \
             (its policy says walls = \"required\"; \"best-effort\" runs it without them)",
            u.missing.join(" and ")
        ),
    )
    .with_info(serde_json::json!({ "missing": u.missing }))
}

fn cancelled() -> ToolFailure {
    ToolFailure::new(
        FailureCode::Cancelled,
        "the call was cancelled by its caller",
    )
}

/// Fails a call whose worker died, with why (its exit status or signal).
async fn died(worker: &mut Worker, why: &str) -> ToolFailure {
    // Its own end first (a closed channel comes just before the exit
    // status); killed only when it lingers.
    let mut status = tokio::time::timeout(Duration::from_millis(500), worker.child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    if status.is_none() {
        let _ = worker.child.start_kill();
        status = tokio::time::timeout(Duration::from_secs(5), worker.child.wait())
            .await
            .ok()
            .and_then(Result::ok);
    }
    let reason = match status {
        Some(s) => format!("{}; {why}", describe(s)),
        None => why.to_owned(),
    };
    tracing::warn!(
        pid = worker.pid,
        reason,
        "a worker died; the next call starts another"
    );
    ToolFailure::new(
        FailureCode::WorkerDied,
        format!("the worker running the tool died ({reason}); nothing it did was kept"),
    )
    .with_info(serde_json::json!({ "reason": reason }))
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match status.signal() {
        Some(libc::SIGSYS) => "killed by its seccomp filter (SIGSYS)".into(),
        Some(libc::SIGKILL) => "killed (SIGKILL)".into(),
        Some(libc::SIGSEGV) => "crashed (SIGSEGV)".into(),
        Some(libc::SIGABRT) => "aborted (SIGABRT)".into(),
        Some(n) => format!("killed by signal {n}"),
        None => format!("exited with status {}", status.code().unwrap_or(-1)),
    }
}

/// How a call to a worker ended without an answer.
enum Ended {
    Cancelled,
    Deadline,
    Died(String),
    /// It sent what no honest worker sends.
    Refused(String),
}

/// How long the serving process spins on a worker's channel for its
/// answer before it parks: a trivial call's whole round trip, with room.
const ANSWER_SPIN: Duration = Duration::from_millis(1);

/// The calls waiting for a worker's answer in this process right now (a
/// code runner's call not counted: it waits mostly for the calls its
/// script makes, which are counted, and would otherwise keep the one call
/// a script makes at a time from ever spinning).
static WAITING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How long to spin for an answer: [`ANSWER_SPIN`] while this is the only
/// call waiting for one, else not at all. A spin holds its thread (the
/// wait is short, a park and a wake-up are not), which is a good trade for
/// one call and a bad one for several: calls running at once (a script's
/// `Promise.all`) would hold every thread of the runtime spinning while
/// the work they wait for needs one.
fn answer_spin() -> Duration {
    if WAITING.load(std::sync::atomic::Ordering::Relaxed) <= 1 {
        ANSWER_SPIN
    } else {
        Duration::ZERO
    }
}

/// Counts one call as waiting while it lives.
struct Waiting;

impl Waiting {
    fn new() -> Waiting {
        WAITING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One worker process.
struct Worker {
    child: tokio::process::Child,
    /// The channel.
    channel: Channel,
    /// The policy its last call was sent (a call under the same one sends
    /// none).
    sent_policy: Option<ToolPolicy>,
    /// The number of its last request.
    seq: u64,
    pid: u32,
    dir: PathBuf,
    walls: WallStatus,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Worker {
    /// The number of its next request.
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The caller went (as an in-process call's does): the worker is told,
    /// and drained before its reuse.
    async fn cancelled(&self) -> Ended {
        match self.channel.write(&ToWorker::Cancel).await {
            Ok(()) => Ended::Cancelled,
            Err(e) => Ended::Died(e.to_string()),
        }
    }

    /// Sends `msg` (request number `seq`) and waits for its answer,
    /// passing on what the tool reports (within what `policy` lets it
    /// report), relaying its HTTP requests through `policy`'s gate and a
    /// code runner's tool calls to `tools` (each a whole pipeline call
    /// here; the time one waited for a person moves the deadline). Anything
    /// else, or an answer to another request, is [`Ended::Refused`].
    #[allow(clippy::too_many_arguments)]
    async fn call(
        &mut self,
        msg: &ToWorker,
        seq: u64,
        mut deadline: Instant,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(toolhost_contract::ContextEvent),
        policy: &ToolPolicy,
        denied: &Mutex<Vec<String>>,
        tools: Option<&Arc<dyn ToolCaller>>,
    ) -> Result<FromWorker, Ended> {
        self.channel
            .write(msg)
            .await
            .map_err(|e| Ended::Died(e.to_string()))?;
        // The first wait spins (a quick call's answer comes before a park
        // and a wake-up would); later ones, after a report, park at once.
        let _waiting = tools.is_none().then(Waiting::new);
        let mut spin = answer_spin();
        let mut reported = 0usize;
        let may_report = reports_bound(policy);
        // A code runner's calls run at once (it may start several before
        // it waits): each reply is written when its call ends.
        let mut calls = futures_util::stream::FuturesUnordered::<
            std::pin::Pin<Box<dyn Future<Output = (u64, toolhost_runtime::CallReply)> + Send>>,
        >::new();
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(self.cancelled().await),
                () = tokio::time::sleep_until(deadline.into()) => return Err(Ended::Deadline),
                Some((id, reply)) = futures_util::StreamExt::next(&mut calls), if !calls.is_empty() => {
                    deadline += reply.waited;
                    self.channel
                        .write(&ToWorker::Called { id, reply })
                        .await
                        .map_err(|e| Ended::Died(e.to_string()))?;
                    // The script's next call, or its answer, comes soon.
                    spin = answer_spin();
                    continue;
                }
                m = self.channel.read::<FromWorker>(spin) => m,
            };
            spin = Duration::ZERO;
            let next = match next {
                Ok(m) => m,
                Err(WireError::Io(e)) => return Err(Ended::Died(e.to_string())),
                Err(e) => return Err(Ended::Refused(e.to_string())),
            };
            match next {
                FromWorker::Context { event } => {
                    reported = reported.saturating_add(event_size(&event));
                    if reported > may_report {
                        return Err(Ended::Refused(format!(
                            "it reported more than its policy lets a call report \
                             (max_context_bytes = {})",
                            policy.limits.max_context_bytes
                        )));
                    }
                    on_event(event);
                }
                FromWorker::Http { id, request } => {
                    let result = toolhost_runtime::send_relayed(policy, request, denied).await;
                    self.channel
                        .write(&ToWorker::Http { id, result })
                        .await
                        .map_err(|e| Ended::Died(e.to_string()))?;
                }
                FromWorker::Call {
                    id,
                    name,
                    arguments,
                } => {
                    let Some(tools) = tools else {
                        return Err(Ended::Refused(
                            "it called a tool, which this call may not".to_owned(),
                        ));
                    };
                    // Taken in now, in the order the runner made them.
                    let reply = tools.call(name, arguments);
                    calls.push(Box::pin(async move { (id, reply.await) }));
                }
                answer if answer.answers() == Some(seq) => return Ok(answer),
                other => {
                    return Err(Ended::Refused(match other.answers() {
                        Some(n) => format!("it answered request {n}, not the one asked ({seq})"),
                        None => "it said something out of turn".to_owned(),
                    }));
                }
            }
        }
    }
}

impl Pool {
    async fn checkout(&self) -> Result<Worker, ToolFailure> {
        loop {
            let w = self.idle.lock().ok().and_then(|mut i| i.pop());
            match w {
                Some(mut w) => {
                    // One that died while idle is replaced, and so is one
                    // that said something nobody asked for.
                    if !matches!(w.child.try_wait(), Ok(None)) {
                        let _ = died(&mut w, "it died while idle").await;
                    } else if !matches!(w.channel.try_frame(), Ok(None)) {
                        let _ = refused(w, "it spoke while idle");
                    } else {
                        return Ok(w);
                    }
                }
                None => return self.spawn().await,
            }
        }
    }

    /// Takes back a worker whose call was cancelled once it has answered
    /// (what it says then is dropped); one that does not answer soon is
    /// killed.
    fn drain(self: &Arc<Self>, mut w: Worker, seq: u64) {
        let pool = self.clone();
        tokio::spawn(async move {
            let answered = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    let refusal = match w.channel.read::<FromWorker>(Duration::ZERO).await {
                        Ok(answer) if answer.answers() == Some(seq) => return true,
                        Ok(FromWorker::Executed(_) | FromWorker::Rendered { .. }) => return false,
                        // What the cancelled call still asks is refused.
                        Ok(FromWorker::Http { id, .. }) => ToWorker::Http {
                            id,
                            result: Err(toolhost_runtime::RelayError::Failed(
                                "the call was cancelled".into(),
                            )),
                        },
                        Ok(FromWorker::Call { id, .. }) => ToWorker::Called {
                            id,
                            reply: toolhost_runtime::CallReply {
                                outcome: toolhost_runtime::CallOutcome::Failed(cancelled()),
                                waited: Duration::ZERO,
                            },
                        },
                        Ok(_) => continue,
                        Err(_) => return false,
                    };
                    if w.channel.write(&refusal).await.is_err() {
                        return false;
                    }
                }
            })
            .await;
            if answered == Ok(true) {
                pool.checkin(w);
            }
        });
    }

    fn checkin(&self, w: Worker) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(w);
        }
    }

    async fn spawn(&self) -> Result<Worker, ToolFailure> {
        let artifact = self
            .artifact
            .get_or_try_init(|| async {
                let c = self.component.clone();
                tokio::task::spawn_blocking(move || c.artifact().map(Arc::new))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())
            })
            .await
            .map_err(|why| no_worker(&self.component, why))?
            .clone();
        spawn(
            self.exe.as_deref(),
            &self.component,
            &artifact,
            self.spec.clone(),
            self.walls,
        )
        .await
    }
}

fn no_worker(component: &LoadedComponent, why: String) -> ToolFailure {
    tracing::warn!(component = %component.path().display(), why, "no worker");
    ToolFailure::new(
        FailureCode::WorkerDied,
        format!("no worker process could be started: {why}"),
    )
    .with_info(serde_json::json!({ "reason": why }))
}

/// Runs `unlisted`'s `list-tools` in a worker of its own that grants
/// nothing (the component's first guest code, walled in like its calls),
/// and returns what it declared, for the caller to check.
pub async fn declared(
    unlisted: &toolhost_runtime::Unlisted,
    walls: Walls,
) -> Result<toolhost_runtime::Declared, String> {
    let missing = support().missing();
    if walls == Walls::Required && !missing.is_empty() {
        return Err(walls_unavailable(&Unavailable { missing }).message);
    }
    let component = unlisted.component();
    let artifact = component.artifact().map_err(|e| e.to_string())?;
    let mut worker = spawn(
        worker_exe().as_deref(),
        component,
        &artifact,
        WallSpec::default(),
        walls,
    )
    .await
    .map_err(|f| f.message)?;
    let denied = Mutex::new(Vec::new());
    // list-tools' own deadline (30 s) ends it first; this is the backstop.
    let deadline = Instant::now() + Duration::from_secs(60);
    let nothing = toolhost_policy::Policy::deny_all().component();
    let seq = worker.next_seq();
    match worker
        .call(
            &ToWorker::ListTools { seq },
            seq,
            deadline,
            &CancellationToken::new(),
            |_| {},
            &nothing,
            &denied,
            None,
        )
        .await
    {
        Ok(FromWorker::Listed { declared, .. }) => declared,
        Ok(_) => Err("the worker answered out of turn".into()),
        Err(Ended::Refused(why)) => Err(refused(worker, &why).message),
        Err(Ended::Died(why)) => Err(died(&mut worker, &why).await.message),
        Err(Ended::Cancelled | Ended::Deadline) => Err("list-tools did not finish in time".into()),
    }
}

/// Starts a worker running `component` (compiled as `artifact`), walled in
/// to `spec` and its own directory.
async fn spawn(
    exe: Option<&Path>,
    component: &LoadedComponent,
    artifact: &[u8],
    mut spec: WallSpec,
    required: Walls,
) -> Result<Worker, ToolFailure> {
    let fail = |why: String| no_worker(component, why);
    let exe = exe.ok_or_else(|| {
        fail("the toolhost executable was not found (set TOOLHOST_WORKER_EXE)".into())
    })?;
    let rt = component.runtime();
    let config = rt.config();
    let area = StagingArea::of(&rt.staging_dir()).map_err(|e| fail(e.to_string()))?;
    let dir = area.fresh("worker");
    toolhost_effects::make_private(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(|e| fail(e.to_string()))?;
    // The channel's rings: the worker gets their memory file as its
    // standard output (a descriptor no other process is handed).
    let region = Region::create().map_err(|e| fail(format!("no channel region: {e}")))?;
    let region_fd = region.fd().map_err(|e| fail(e.to_string()))?;
    let mut command = tokio::process::Command::new(exe);
    command.arg(WORKER_ARG).env_clear();
    // Test builds only: a worker that forges its answers (`forge`).
    #[cfg(debug_assertions)]
    if let Some(case) = std::env::var_os("TOOLHOST_TEST_FORGE") {
        command.env("TOOLHOST_TEST_FORGE", case);
    }
    let mut child = command
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )))
        .stdout(std::process::Stdio::from(region_fd))
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("{}: {e}", exe.display())))?;
    let pid = child.id().unwrap_or(0);
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt as _;
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::warn!(pid, "worker: {line}");
            }
        });
    }
    let channel = Channel::new(ours, wire::MAX_FRAME).map_err(|e| fail(e.to_string()))?;
    spec.write.push(dir.clone());
    let mut worker = Worker {
        child,
        channel,
        sent_policy: None,
        seq: 0,
        pid,
        dir: dir.clone(),
        walls: WallStatus::default(),
    };
    let start = ToWorker::Start(Box::new(Start {
        origin: component.path().to_owned(),
        id: component.id().to_owned(),
        tools: component.tools().to_vec(),
        max_wasm_stack: config.max_wasm_stack,
        epoch_tick_us: u64::try_from(config.epoch_tick.as_micros()).unwrap_or(u64::MAX),
        fs_on_calling_thread: config.fs_on_calling_thread,
        stage_writes: config.stage_writes,
        escape_hatch: config.escape_hatch,
        dir,
        walls: spec,
    }));
    let started = Instant::now();
    let hello = async {
        worker.channel.write(&start).await?;
        worker.channel.write_frame(artifact).await?;
        // Both on the socket, which the worker reads before it maps the
        // rings; all else goes through them.
        worker.channel.attach(Lanes::serving(region));
        worker.channel.read::<FromWorker>(Duration::ZERO).await
    };
    let ready = tokio::time::timeout(START_TIMEOUT, hello).await;
    let walls = match ready {
        Ok(Ok(FromWorker::Ready { walls })) => walls,
        Ok(Ok(FromWorker::Failed { reason })) => return Err(fail(reason)),
        Ok(Ok(_)) => return Err(fail("it answered out of turn".into())),
        Ok(Err(e)) => {
            let f = died(&mut worker, &e.to_string()).await;
            return Err(fail(f.message));
        }
        Err(_) => return Err(fail("it did not start in time".into())),
    };
    let missing = walls.missing();
    if !missing.is_empty() {
        if required == Walls::Required {
            return Err(ToolFailure::new(
                FailureCode::WallsUnavailable,
                format!(
                    "the worker could not build {}: {}",
                    missing.join(" and "),
                    walls.notes.join("; ")
                ),
            )
            .with_info(serde_json::json!({ "missing": missing })));
        }
        tracing::warn!(
            pid,
            missing = %missing.join(", "),
            notes = %walls.notes.join("; "),
            "a worker runs without all its walls (walls = \"best-effort\")"
        );
    }
    tracing::debug!(pid, elapsed = ?started.elapsed(), "worker started");
    worker.walls = walls;
    Ok(worker)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    #[test]
    fn a_dead_workers_reason_names_its_signal() {
        let status = |raw| std::process::ExitStatus::from_raw(raw);
        assert!(describe(status(libc::SIGSYS)).contains("seccomp"));
        assert_eq!(describe(status(libc::SIGKILL)), "killed (SIGKILL)");
        assert_eq!(describe(status(70 << 8)), "exited with status 70");
    }

    #[test]
    fn a_worker_gets_the_environment_values_its_policy_allows() {
        let policy = toolhost_policy::PolicyBuilder::new()
            .env_allow("PATH")
            .env_allow("TOOLHOST_SURELY_UNSET_VARIABLE")
            .env_set("FIXED", "1")
            .build()
            .map(|p| p.component());
        let Ok(policy) = policy else {
            panic!("the policy builds")
        };
        let sent = resolved(&policy);
        assert!(sent.sandbox.env_allow.is_empty(), "nothing left to read");
        assert_eq!(
            sent.sandbox.env_set.get("FIXED").map(String::as_str),
            Some("1")
        );
        assert_eq!(
            sent.sandbox.env_set.get("PATH"),
            std::env::var("PATH").ok().as_ref()
        );
        assert!(
            !sent
                .sandbox
                .env_set
                .contains_key("TOOLHOST_SURELY_UNSET_VARIABLE")
        );
    }
}
