//! The worker process: it reads what it runs, walls itself in, loads the
//! compiled component, and runs one call at a time, each in a fresh store
//! and instance, until the serving process closes the channel.

use crate::wall::{self, WallStatus};
use crate::wire::{self, Channel, Executed, FromWorker, Start, ToWorker};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolhost_channel::ring::{Lanes, Region};
use toolhost_contract::clock::SystemClock;
use toolhost_contract::{ContextEvent, ContextSink, FailureCode, ToolFailure};
use toolhost_effects::Transaction;
use toolhost_runtime::{
    Budget, CallFuture, CallOutcome, CallReply, EgressRelay, Entropy, Invocation, LoadedComponent,
    RelayError, RelayedRequest, RelayedResponse, Retirement, Runtime, RuntimeConfig, Scope,
    ToolCaller,
};

/// The worker's `main`: the channel is its standard input. Returns the
/// process's exit status.
pub fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolhost worker: {e}");
            std::process::ExitCode::from(70)
        }
    }
}

fn run() -> Result<(), String> {
    use std::os::fd::AsFd as _;
    let fd = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("no channel on standard input: {e}"))?;
    let mut channel = std::os::unix::net::UnixStream::from(fd);
    let region = take_region()?;
    let start = match read_sync(&mut channel)? {
        ToWorker::Start(s) => s,
        _ => return Err("the first message was not `start`".into()),
    };
    let artifact = read_frame_sync(&mut channel)?;
    // Landlock binds the calling thread and the threads it starts later:
    // first, while this is the only thread.
    let mut walls = WallStatus::default();
    wall::enter_landlock(&start.walls, &mut walls);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no event loop: {e}"))?;
    rt.block_on(serve(channel, region, *start, artifact, walls))
}

/// The channel's rings, whose memory file is standard output; standard
/// output then goes nowhere, so that a stray print cannot write into them.
fn take_region() -> Result<Region, String> {
    use std::os::fd::{AsFd as _, AsRawFd as _};
    let fd = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("no channel region on standard output: {e}"))?;
    let region = Region::map(fd).map_err(|e| format!("the channel region: {e}"))?;
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("/dev/null: {e}"))?;
    #[allow(unsafe_code)]
    // SAFETY: both descriptors are open; nothing in this process holds
    // standard output's old file but the region, which has its own copy.
    let r = unsafe { libc::dup2(null.as_raw_fd(), libc::STDOUT_FILENO) };
    if r < 0 {
        return Err(format!(
            "standard output: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(region)
}

fn read_frame_sync(r: &mut impl std::io::Read) -> Result<Vec<u8>, String> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(|e| e.to_string())?;
    let len = u32::from_le_bytes(len) as usize;
    if len > wire::MAX_FRAME {
        return Err(format!("a frame of {len} bytes"));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).map_err(|e| e.to_string())?;
    Ok(buf)
}

fn read_sync(r: &mut impl std::io::Read) -> Result<ToWorker, String> {
    serde_json::from_slice(&read_frame_sync(r)?).map_err(|e| e.to_string())
}

/// How long an idle worker spins on its channel for the next call after
/// answering one, before it parks: calls that come in a burst (a script's,
/// a client's) then skip the wake-up.
const IDLE_SPIN: std::time::Duration = std::time::Duration::from_millis(1);

async fn serve(
    channel: std::os::unix::net::UnixStream,
    region: Region,
    start: Start,
    artifact: Vec<u8>,
    mut walls: WallStatus,
) -> Result<(), String> {
    let mut channel = Channel::new(channel, wire::MAX_FRAME).map_err(|e| e.to_string())?;
    channel.attach(Lanes::worker(region));
    // What the running tool reports, and its HTTP requests: written to the
    // channel by this task, in order, before the call's own answer.
    let (out, mut reports) = mpsc::unbounded_channel::<FromWorker>();
    let relay = Arc::new(Relay {
        out: out.clone(),
        pending: Waiting::default(),
        calls: Waiting::default(),
        next: AtomicU64::new(0),
    });
    let loaded = load(&start, &artifact, relay.clone());
    drop(artifact);
    let component = match loaded {
        Ok(c) => c,
        Err(reason) => {
            let _ = channel.write(&FromWorker::Failed { reason }).await;
            return Ok(());
        }
    };
    wall::enter_seccomp(&mut walls);
    if channel.write(&FromWorker::Ready { walls }).await.is_err() {
        return Ok(());
    }
    // The policy of the last call (a call under the same one brings none).
    let mut policy = toolhost_policy::ToolPolicy::default();
    // Test builds only: the answers to forge (see `forge`).
    #[cfg(debug_assertions)]
    let forge_case = std::env::var(crate::forge::VAR).ok();
    // The serving process closing the channel ends the loop.
    while let Ok(msg) = channel.read::<ToWorker>(IDLE_SPIN).await {
        let retire = Retirement::new();
        let reply = match msg {
            ToWorker::Execute(mut e) => {
                if let Some(p) = e.policy.take() {
                    policy = p;
                }
                let call = Call {
                    component: &component,
                    policy: &policy,
                    relay: &relay,
                    start: &start,
                    retire: &retire,
                };
                match call.execute(*e, &out, &mut channel, &mut reports).await {
                    Some(reply) => reply,
                    None => break,
                }
            }
            ToWorker::Render(r) => {
                let cancel = CancellationToken::new();
                let outcome = component
                    .render(&r.tool, &r.arguments, &r.value, &r.policy, cancel)
                    .await;
                FromWorker::Rendered {
                    seq: r.seq,
                    outcome,
                }
            }
            ToWorker::ListTools { seq } => FromWorker::Listed {
                seq,
                declared: component.declared().await.map_err(|e| e.to_string()),
            },
            ToWorker::Http { id, result } => {
                relay.pending.answer(id, result);
                continue;
            }
            ToWorker::Called { id, reply } => {
                relay.calls.answer(id, reply);
                continue;
            }
            ToWorker::Cancel | ToWorker::Start(_) => continue,
        };
        #[cfg(debug_assertions)]
        let reply = match &forge_case {
            Some(case) => match crate::forge::forge(case, reply, &mut channel).await {
                Some(reply) => reply,
                None => continue,
            },
            None => reply,
        };
        // What the call reported, then its answer.
        while let Ok(report) = reports.try_recv() {
            if channel.write(&report).await.is_err() {
                return Ok(());
            }
        }
        if channel.write(&reply).await.is_err() {
            break;
        }
        drop(retire);
    }
    Ok(())
}

fn load(start: &Start, artifact: &[u8], relay: Arc<Relay>) -> Result<Arc<LoadedComponent>, String> {
    let config = RuntimeConfig {
        cache_dir: Some(start.dir.clone()),
        epoch_tick: std::time::Duration::from_micros(start.epoch_tick_us),
        max_wasm_stack: start.max_wasm_stack,
        // One call at a time; the pool's slots bound core instances and
        // memories too, and a component built by componentize-py has a
        // dozen of each.
        max_instances: 8,
        clock: SystemClock::shared(),
        fs_on_calling_thread: start.fs_on_calling_thread,
        on_compile: None,
        stage_writes: start.stage_writes,
        egress_relay: Some(relay),
        escape_hatch: start.escape_hatch,
    };
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    // SAFETY: the serving process compiled the artifact with an engine of
    // the same settings and sent it over this process's own channel.
    #[allow(unsafe_code)]
    let loaded = unsafe {
        rt.load_artifact(
            &start.origin,
            start.id.clone(),
            artifact,
            start.tools.clone(),
        )
    };
    loaded.map_err(|e| e.to_string())
}

/// One `execute` in the worker: what it runs with.
struct Call<'a> {
    component: &'a Arc<LoadedComponent>,
    policy: &'a toolhost_policy::ToolPolicy,
    relay: &'a Arc<Relay>,
    start: &'a Start,
    /// Where the call's sandbox waits to be dropped: after its answer is
    /// out, so that resetting its memory is not on the caller's path.
    retire: &'a Retirement,
}

impl Call<'_> {
    /// Runs `e`, passing on what the tool reports and its HTTP requests
    /// as they come, and the serving process's cancellation and answers.
    /// `None`: the serving process is gone.
    async fn execute(
        &self,
        e: wire::Execute,
        out: &mpsc::UnboundedSender<FromWorker>,
        channel: &mut Channel,
        reports: &mut mpsc::UnboundedReceiver<FromWorker>,
    ) -> Option<FromWorker> {
        let seq = e.seq;
        let execution = match self.run(e, out, channel, reports).await {
            Ok(execution) => execution,
            Err(reply) => return reply.map(|r| with_seq(r, seq)),
        };
        Some(with_seq(self.executed(execution), seq))
    }

    /// The call run to its end (`Err`: a reply already, or `None` when
    /// the serving process is gone).
    async fn run(
        &self,
        e: wire::Execute,
        out: &mpsc::UnboundedSender<FromWorker>,
        channel: &mut Channel,
        reports: &mut mpsc::UnboundedReceiver<FromWorker>,
    ) -> Result<Ran, Option<FromWorker>> {
        let clock = e.clock.map(|c| c.clock());
        let reads_before = e.clock.map_or(0, |c| c.reads());
        let transaction = match e.transaction {
            None => None,
            Some(snapshot) => {
                let tx = Arc::new(Transaction::new(self.start.dir.join("transaction")));
                if let Err(err) = tx.restore(snapshot) {
                    return Err(Some(failed(format!(
                        "the script's staged files cannot be read: {err}"
                    ))));
                }
                Some(tx)
            }
        };
        let cancel = CancellationToken::new();
        let sink: Option<Arc<dyn ContextSink>> = e
            .live
            .then(|| Arc::new(Sink { out: out.clone() }) as Arc<dyn ContextSink>);
        let inv = Invocation {
            tool: &e.tool,
            arguments: &e.arguments,
            policy: self.policy,
            budget: Budget {
                fuel: e.fuel,
                deadline: std::time::Duration::from_nanos(e.deadline_ns),
            },
            cancel: cancel.clone(),
            entropy: e.seed.map_or(Entropy::Os, Entropy::Seeded),
            clock: clock.clone(),
            sink,
            scope: Scope {
                tools: e.tools.then(|| self.relay.clone() as Arc<dyn ToolCaller>),
                transaction: transaction.clone(),
            },
            reach: None,
            handles: false,
            retire: Some(self.retire.clone()),
        };
        let run = self.component.execute(inv);
        tokio::pin!(run);
        // After a tool call went out, the wait for its reply spins first
        // (the runner has nothing to do until it comes, and a script's
        // calls often come one after another); not while several are out
        // (they run at once, on the cores a spin would take).
        let mut spin = std::time::Duration::ZERO;
        let execution = loop {
            tokio::select! {
                ex = &mut run => break ex,
                report = reports.recv() => {
                    if let Some(report) = report {
                        if matches!(report, FromWorker::Call { .. }) && self.relay.calls.len() <= 1 {
                            spin = IDLE_SPIN;
                        }
                        if channel.write(&report).await.is_err() {
                            return Err(None);
                        }
                    }
                }
                msg = channel.read::<ToWorker>(std::mem::take(&mut spin)) => match msg {
                    Ok(ToWorker::Cancel) => cancel.cancel(),
                    Ok(ToWorker::Http { id, result }) => self.relay.pending.answer(id, result),
                    Ok(ToWorker::Called { id, reply }) => self.relay.calls.answer(id, reply),
                    Ok(_) => {}
                    // The serving process is gone: nobody waits for the call.
                    Err(_) => return Err(None),
                },
            }
        };
        Ok(Ran {
            execution,
            transaction,
            clock,
            reads_before,
        })
    }

    /// How a run ended, as its answer.
    fn executed(&self, ran: Ran) -> FromWorker {
        let Ran {
            execution,
            transaction,
            clock,
            reads_before,
        } = ran;
        let mut staged = Vec::new();
        for (guest, overlay) in execution.staged.grants() {
            match overlay.snapshot() {
                Ok(s) => staged.push((guest.clone(), overlay.root().to_path_buf(), s)),
                Err(err) => return failed(format!("the staged files cannot be read: {err}")),
            }
        }
        let transaction = match &transaction {
            Some(tx) if execution.outcome.is_ok() => match tx.snapshot() {
                Ok(s) => Some(s),
                Err(err) => return failed(format!("the staged files cannot be read: {err}")),
            },
            _ => None,
        };
        let clock_reads = clock
            .and_then(|c| c.portable())
            .map_or(0, |c| c.reads().saturating_sub(reads_before));
        FromWorker::Executed(Box::new(Executed {
            seq: 0,
            outcome: execution.outcome,
            rendered: execution.rendered,
            report: execution.report,
            staged,
            transaction,
            clock_reads,
        }))
    }
}

/// A call run to its end, and what its answer is made from.
struct Ran {
    execution: toolhost_runtime::Execution,
    transaction: Option<Arc<Transaction>>,
    clock: Option<Arc<dyn toolhost_contract::clock::Clock>>,
    reads_before: u64,
}

/// `reply`, numbered as the answer to request `seq`.
fn with_seq(mut reply: FromWorker, seq: u64) -> FromWorker {
    if let FromWorker::Executed(e) = &mut reply {
        e.seq = seq;
    }
    reply
}

fn failed(message: String) -> FromWorker {
    FromWorker::Executed(Box::new(Executed {
        seq: 0,
        outcome: Err(ToolFailure::new(FailureCode::HostError, message)),
        rendered: None,
        report: toolhost_runtime::ExecutionReport::default(),
        staged: Vec::new(),
        transaction: None,
        clock_reads: 0,
    }))
}

/// What the tool reports, sent on as it comes.
#[derive(Debug)]
struct Sink {
    out: mpsc::UnboundedSender<FromWorker>,
}

impl ContextSink for Sink {
    fn emit(&self, event: &ContextEvent) {
        let _ = self.out.send(FromWorker::Context {
            event: event.clone(),
        });
    }
}

/// What goes back to the serving process mid-call: outgoing HTTP
/// requests, for its gate, and a code runner's tool calls, for its
/// pipeline.
#[derive(Debug)]
struct Relay {
    out: mpsc::UnboundedSender<FromWorker>,
    pending: Waiting<Result<RelayedResponse, RelayError>>,
    calls: Waiting<CallReply>,
    next: AtomicU64,
}

/// Requests sent to the serving process, waiting for their answers by
/// number.
#[derive(Debug)]
struct Waiting<T>(Mutex<HashMap<u64, oneshot::Sender<T>>>);

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Waiting(Mutex::default())
    }
}

impl<T> Waiting<T> {
    /// Where request `id`'s answer will come.
    fn insert(&self, id: u64) -> oneshot::Receiver<T> {
        let (tx, rx) = oneshot::channel();
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        rx
    }

    /// How many requests wait for their answers.
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Hands request `id` its answer (one nobody waits for is dropped).
    fn answer(&self, id: u64, answer: T) {
        let waiting = self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        if let Some(tx) = waiting {
            let _ = tx.send(answer);
        }
    }
}

impl ToolCaller for Relay {
    fn call(&self, name: String, arguments: String) -> CallFuture {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let rx = self.calls.insert(id);
        let sent = self.out.send(FromWorker::Call {
            id,
            name,
            arguments,
        });
        Box::pin(async move {
            let gone = || CallReply {
                outcome: CallOutcome::Failed(ToolFailure::new(
                    FailureCode::HostError,
                    "the serving process is gone",
                )),
                waited: std::time::Duration::ZERO,
            };
            if sent.is_err() {
                return gone();
            }
            rx.await.unwrap_or_else(|_| gone())
        })
    }
}

impl EgressRelay for Relay {
    fn send(
        &self,
        request: RelayedRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<RelayedResponse, RelayError>> + Send>> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let rx = self.pending.insert(id);
        let sent = self.out.send(FromWorker::Http { id, request });
        Box::pin(async move {
            sent.map_err(|_| RelayError::Failed("the serving process is gone".into()))?;
            rx.await
                .map_err(|_| RelayError::Failed("the serving process is gone".into()))?
        })
    }
}
