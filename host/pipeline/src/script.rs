//! Code mode inside the pipeline: the tool calls a script makes.
//!
//! A code runner (`run_code`'s interpreter: a component whose policy has
//! `call_tools`) calls tools through one host import. Each call comes here
//! and runs as a whole call of this pipeline, a child of the call running
//! the script: admitted with its own `tool/call` event (its parent named),
//! looked up, parsed, checked against its schema, paths, URLs and the last
//! failed call of the script; allowed, asked or denied by its own policy,
//! approved, guarded, dispatched in its own sandbox, its value validated.
//! What differs is only what a script shares:
//!
//! - **one transaction**: a call's writes stage in the script's
//!   [`Transaction`] (each call sees what the ones before it wrote; a call
//!   that fails goes back to its savepoint) and nothing is committed until
//!   the script ends well, all together;
//! - **effects approval at the end**: a call whose policy approves its
//!   effects (`approve = "effects"`) joins the script's changes, and the
//!   person approves the whole script's diff once, when it ends;
//! - **who may call**: a tool whose policy's `callers` leave out `code` is
//!   refused, and a script cannot start a script;
//! - **time**: what the calls spend waiting for a person is added to the
//!   runner's deadline;
//! - **what they report**: a call's progress and log messages go live to
//!   the client of the call running the script, as its own ([`Relay`]).
//!
//! The runner sends a name and arguments and nothing else: the parent, the
//! caller, the principal and every decision are the host's. Calls are
//! numbered in the order the script makes them and run at once, up to the
//! runner policy's `max_parallel_calls`; a call that may write files runs
//! alone, so each call sees exactly the writes made before it.
//!
//! **A script that waits for an answer it cannot wait for.** Under MCP
//! 2026-07-28 a server asks the person by ending the request
//! `input_required`; the client sends the call again with the answer. A
//! script that reaches such a question (a call's `ask`, or the approval of
//! its effects at the end) stops there, and leaves a [`Checkpoint`]: the
//! results of the calls it made so far, its staged changes, and the seed
//! and start time its own randomness and clock came from. The retry brings
//! the checkpoint's reference back (sealed into the request state by the
//! front end); the script runs again from its start in the same virtual
//! environment, its calls up to the question are answered from the
//! checkpoint (none runs twice, none is asked about twice) and the rest run
//! live. A call that does not repeat the recorded one (the script took
//! another path) fails the script rather than mixing two runs.

use crate::bound::Artifacts;
use crate::call::{FrozenCall, parse_arguments};
use crate::paths::{GrantView, RealTree, ViewError};
use crate::repeat::Previous;
use crate::replay::CallKey;
use crate::replay::key::arguments_hash;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use toolhost_contract::{ContextEvent, ContextSink, FailureCode, ToolFailure};
use toolhost_effects::{FsError, Transaction, TxSnapshot};
use toolhost_policy::FsGrant;
use toolhost_runtime::{CallFuture, CallOutcome, CallReply, ToolCaller};

/// Most of a script's calls listed one by one in its result's
/// `_meta.toolhost.extra.calls` (the rest are counted).
pub(crate) const MAX_CALLS_IN_META: usize = 100;

/// The format tag of a checkpoint.
const CHECKPOINT_FORMAT: &str = "toolhost-script-checkpoint";

/// The largest checkpoint kept (its staged files, as base64, and its
/// calls' values): past it the script's question is refused rather than
/// asked, since its answer could not be acted on.
pub(crate) const MAX_CHECKPOINT_BYTES: usize = 16 << 20;

/// The randomness and clock a script's own code sees: the same on every
/// run of the script, so its retry repeats its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScriptEnv {
    /// Seeds the runner's randomness.
    pub(crate) seed: u64,
    /// Where the runner's clock starts (ms since the epoch; it moves 1 ms
    /// per read).
    pub(crate) start_ms: u64,
}

/// One call of a script and how it ended: listed in the result's
/// `meta.extra.calls`, kept in a checkpoint.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Recorded {
    tool: String,
    args: Args,
    outcome: Ended,
    /// Its time, in µs.
    us: u64,
}

/// How one of a script's calls ended.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Ended {
    /// Its value.
    Value(Value),
    /// Why it failed.
    Failure(ToolFailure),
}

/// The arguments of a script's call, as a checkpoint keeps them: their
/// digest (the replay key's), worked out only when a checkpoint is written.
#[derive(Debug, Clone)]
enum Args {
    /// Read from a checkpoint.
    Digest(String),
    /// The call made now.
    Of(FrozenCall),
}

impl Args {
    fn digest(&self) -> String {
        match self {
            Args::Digest(d) => d.clone(),
            Args::Of(call) => arguments_hash(call.arguments()),
        }
    }
}

impl serde::Serialize for Args {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digest())
    }
}

impl<'de> serde::Deserialize<'de> for Args {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Args, D::Error> {
        String::deserialize(d).map(Args::Digest)
    }
}

/// Where a script stopped to wait for an answer: what its retry needs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Checkpoint {
    format: String,
    /// The runner's tool.
    tool: String,
    /// SHA-256 of the runner call's canonical arguments (the script).
    script: String,
    env: ScriptEnv,
    calls: Vec<Recorded>,
    tx: TxSnapshot,
    /// What the script's calls saw of the files they read or wrote (grant
    /// directory, path, content digest): the retry's session knows them
    /// too, as if its calls had run there.
    #[serde(default)]
    baselines: Vec<(std::path::PathBuf, std::path::PathBuf, String)>,
    /// Why the script's effects must be approved when it ends (its calls
    /// that deferred their `ask` to their effects): still asked after the
    /// retry, though those calls do not run again.
    #[serde(default)]
    ask_effects: Vec<String>,
}

impl Checkpoint {
    /// Stores the checkpoint of `script` (run by `call`) in `store` for the
    /// caller; its reference, to send back with the answer.
    pub(crate) fn keep(
        script: &Script,
        call: &FrozenCall,
        store: &Artifacts,
    ) -> Result<String, String> {
        let tx = script
            .transaction
            .snapshot()
            .map_err(|e| format!("its staged changes cannot be read back: {e}"))?;
        let (calls, baselines, ask_effects) = {
            let st = script.lock();
            // The calls from the first on, up to the first that has not
            // ended (one running beside the question): a retry answers
            // exactly those from the checkpoint and runs the rest.
            let calls: Vec<Recorded> = st
                .made
                .iter()
                .zip(1u64..)
                .take_while(|((index, _), expected)| *index == expected)
                .map(|((_, r), _)| r.clone())
                .collect();
            (calls, st.baselines.clone(), st.ask_effects.clone())
        };
        let checkpoint = Checkpoint {
            format: CHECKPOINT_FORMAT.into(),
            tool: call.name().to_owned(),
            script: arguments_hash(call.arguments()),
            env: script.env,
            calls,
            tx,
            baselines,
            ask_effects,
        };
        let text = serde_json::to_string(&checkpoint).map_err(|e| e.to_string())?;
        if text.len() > MAX_CHECKPOINT_BYTES {
            return Err(format!(
                "what it staged and read so far is {} bytes, more than the {MAX_CHECKPOINT_BYTES} \
                 kept while an answer is awaited",
                text.len()
            ));
        }
        let digest = toolhost_contract::sha256_hex(text.as_bytes());
        let id = format!("{}-{}", call.token().as_str(), &digest[..16]);
        let uri = store.put_owned(call.principal().unwrap_or_default(), &id, text);
        Ok(format!("{uri}#{digest}"))
    }

    /// The checkpoint `reference` names, for `call` (the same script, the
    /// same caller), checked whole.
    pub(crate) fn load(
        reference: &str,
        call: &FrozenCall,
        store: &Artifacts,
    ) -> Result<Checkpoint, String> {
        let (uri, digest) = reference
            .split_once('#')
            .ok_or("the reference is malformed")?;
        let (text, _) = store
            .page_owned(call.principal().unwrap_or_default(), uri, 0, usize::MAX)
            .ok_or("it is no longer kept (expired, evicted, or kept by another server)")?;
        if toolhost_contract::sha256_hex(text.as_bytes()) != digest {
            return Err("it does not match the reference".into());
        }
        let c: Checkpoint =
            serde_json::from_str(&text).map_err(|e| format!("it cannot be read: {e}"))?;
        if c.format != CHECKPOINT_FORMAT
            || c.tool != call.name()
            || c.script != arguments_hash(call.arguments())
        {
            return Err("it is another call's".into());
        }
        Ok(c)
    }

    /// The runner's environment it recorded.
    pub(crate) fn env(&self) -> ScriptEnv {
        self.env
    }
}

/// A seed nobody can predict, for a live script's randomness (which
/// scripts use for nothing secret: the runner has no crypto API).
pub(crate) fn fresh_seed() -> u64 {
    toolhost_contract::unique::unique_u64()
}

/// One running script: what its calls share.
pub(crate) struct Script {
    /// The call running the script.
    pub(crate) parent: FrozenCall,
    /// The position whose environment the parent runs in: its calls'
    /// environments derive from it and their index (deterministic mode).
    pub(crate) env_position: u64,
    /// The parent's replay key, when a cassette is mounted.
    pub(crate) parent_key: Option<CallKey>,
    /// The script's staged file effects.
    pub(crate) transaction: Arc<Transaction>,
    /// The most calls it may make (its policy's `max_tool_calls`).
    pub(crate) max_calls: u64,
    /// The most of its calls that run at once (`max_parallel_calls`).
    pub(crate) max_parallel: u64,
    /// What the script's caller may call: its calls may call no more.
    pub(crate) reach: Option<Arc<dyn crate::listeners::Reach>>,
    /// The randomness and clock of the script's own code.
    pub(crate) env: ScriptEnv,
    /// The calls an earlier attempt made, answered from its checkpoint.
    replay: Vec<Recorded>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Calls admitted so far.
    calls: u64,
    /// Every call that ended, by its index (calls that run at once end in
    /// any order; the script's order is the one they were made in).
    made: std::collections::BTreeMap<u64, Recorded>,
    /// The call that stopped the script to wait for an answer (it runs
    /// again with the answer): its tool, code and time. Listed, never kept.
    pending: Option<(String, String, u64)>,
    /// Why the person must approve the script's effects at the end: the
    /// reasons of the calls that deferred their `ask` to their effects.
    ask_effects: Vec<String>,
    /// The script's previous call, for the next one's repeat check.
    previous: Option<Previous>,
    /// Nanoseconds the current call waited for a person.
    waited_ns: u64,
    /// What the calls saw of the files they read or wrote.
    baselines: Vec<(std::path::PathBuf, std::path::PathBuf, String)>,
}

impl Script {
    /// A script run by `parent`, staging in `transaction`.
    pub(crate) fn new(
        parent: FrozenCall,
        env_position: u64,
        parent_key: Option<CallKey>,
        transaction: Arc<Transaction>,
        limits: &toolhost_policy::Limits,
        reach: Option<Arc<dyn crate::listeners::Reach>>,
        env: ScriptEnv,
    ) -> Script {
        Script {
            parent,
            env_position,
            parent_key,
            transaction,
            max_calls: limits.max_tool_calls,
            max_parallel: limits.max_parallel_calls,
            reach,
            env,
            replay: Vec::new(),
            state: Mutex::new(State::default()),
        }
    }

    /// The script goes on from `checkpoint`: its staged changes staged
    /// again, its calls answered from it, what they saw of the files known
    /// to `baselines` (this session's).
    pub(crate) fn resume(
        mut self,
        checkpoint: Checkpoint,
        baselines: &crate::baseline::Baselines,
    ) -> Result<Script, String> {
        self.transaction
            .restore(checkpoint.tx)
            .map_err(|e| format!("its staged changes cannot be staged again: {e}"))?;
        self.replay = checkpoint.calls;
        for (host, rel, digest) in &checkpoint.baselines {
            baselines.remember(host.clone(), rel.clone(), digest);
        }
        let mut st = self.lock();
        st.baselines = checkpoint.baselines;
        st.ask_effects = checkpoint.ask_effects;
        drop(st);
        Ok(self)
    }

    /// A call saw these files (grant directory, path, digest).
    pub(crate) fn saw(&self, seen: Vec<(std::path::PathBuf, std::path::PathBuf, String)>) {
        let mut st = self.lock();
        for s in seen {
            st.baselines.retain(|(h, r, _)| (h, r) != (&s.0, &s.1));
            st.baselines.push(s);
        }
    }

    /// Call `index` (from 1), `tool` on `arguments`, when an earlier
    /// attempt made it: its outcome, or why the script did not repeat it.
    pub(crate) fn replayed(
        &self,
        index: u64,
        tool: &str,
        arguments: &str,
    ) -> Option<Result<CallOutcome, ToolFailure>> {
        let i = usize::try_from(index).ok()?.checked_sub(1)?;
        let rec = self.replay.get(i)?;
        let args = arguments_hash(&parse_arguments(arguments));
        if rec.tool != tool || rec.args.digest() != args {
            return Some(Err(ToolFailure::new(
                FailureCode::Conflict,
                format!(
                    "the script did not repeat its calls when it went on after the answer: its \
                     call {index} was `{}` and is now `{tool}` (a script must make the same calls \
                     in the same order every run); call run_code again",
                    rec.tool
                ),
            )));
        }
        let outcome = match &rec.outcome {
            Ended::Value(v) => CallOutcome::Value(v.to_string()),
            Ended::Failure(f) => CallOutcome::Failed(f.clone()),
        };
        self.lock().made.insert(index, rec.clone());
        Some(Ok(outcome))
    }

    /// Call `call` of the script ended after `us` µs: with `value`, or
    /// `failure`. A failure that is a question waiting for its answer
    /// (`approval_pending`) is listed, never kept for a checkpoint: the call
    /// runs again with the answer.
    pub(crate) fn ended(
        &self,
        index: u64,
        call: FrozenCall,
        outcome: Result<Value, ToolFailure>,
        us: u64,
    ) {
        let mut st = self.lock();
        let outcome = match outcome {
            Ok(v) => Ended::Value(v),
            Err(f) if f.code == FailureCode::ApprovalPending.into() => {
                st.pending = Some((call.name().to_owned(), f.code.as_str().to_owned(), us));
                return;
            }
            Err(f) => Ended::Failure(f),
        };
        st.made.insert(
            index,
            Recorded {
                tool: call.name().to_owned(),
                args: Args::Of(call),
                outcome,
                us,
            },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next call's index (from 1), unless the script made its last.
    pub(crate) fn next_call(&self) -> Option<u64> {
        let mut st = self.lock();
        if st.calls >= self.max_calls {
            return None;
        }
        st.calls += 1;
        Some(st.calls)
    }

    /// Makes `next` the script's latest call; returns the one before.
    pub(crate) fn replace_previous(&self, next: Previous) -> Option<Previous> {
        self.lock().previous.replace(next)
    }

    /// A call of the script waited `ns` for a person.
    pub(crate) fn waited(&self, ns: u64) {
        let mut st = self.lock();
        st.waited_ns = st.waited_ns.saturating_add(ns);
    }

    /// What the current call waited for a person, reset.
    pub(crate) fn take_waited(&self) -> u64 {
        std::mem::take(&mut self.lock().waited_ns)
    }

    /// A call deferred its `ask` to the script's effects.
    pub(crate) fn defer_ask(&self, reason: String) {
        let mut st = self.lock();
        if !st.ask_effects.contains(&reason) {
            st.ask_effects.push(reason);
        }
    }

    /// Why the script's effects must be approved, if any call said so.
    pub(crate) fn effects_reason(&self) -> Option<String> {
        let st = self.lock();
        (!st.ask_effects.is_empty()).then(|| st.ask_effects.join("; "))
    }

    /// The calls, for the result's `meta.extra.calls`.
    pub(crate) fn calls_meta(&self) -> Value {
        let st = self.lock();
        let made = st.made.values().map(|r| {
            let code = match &r.outcome {
                Ended::Value(_) => None,
                Ended::Failure(f) => Some(f.code.as_str()),
            };
            (r.tool.as_str(), code, r.us)
        });
        let pending = st
            .pending
            .iter()
            .map(|(tool, code, us)| (tool.as_str(), Some(code.as_str()), *us));
        let all: Vec<(&str, Option<&str>, u64)> = made.chain(pending).collect();
        let list: Vec<Value> = all
            .iter()
            .take(MAX_CALLS_IN_META)
            .map(|(tool, code, us)| json!({"tool": tool, "code": code, "us": us}))
            .collect();
        let mut meta = json!({"count": all.len(), "list": list});
        if all.len() > MAX_CALLS_IN_META {
            meta["more"] = json!(all.len() - MAX_CALLS_IN_META);
        }
        meta
    }
}

/// Why `tool` may not be called by this caller (a script's call when
/// `by_script`, else the model's), if it may not.
pub(crate) fn refuse_caller(
    tool: &crate::registry::RegisteredTool,
    by_script: bool,
) -> Option<ToolFailure> {
    let name = &tool.descriptor.name;
    let callers = tool.policy.callers;
    if by_script && tool.policy.sandbox.call_tools {
        return Some(ToolFailure::new(
            FailureCode::Denied,
            format!("a script cannot run `{name}`: a script cannot start a script"),
        ));
    }
    if by_script && !callers.code() {
        return Some(
            ToolFailure::new(
                FailureCode::Denied,
                format!(
                    "`{name}` may not be called from a script (its policy's callers = \"{callers}\"); \
                     call it directly instead"
                ),
            )
            .with_info(json!({"callers": callers.as_str()})),
        );
    }
    if !by_script && !callers.model() {
        return Some(
            ToolFailure::new(
                FailureCode::Denied,
                format!(
                    "`{name}` may only be called from a script (its policy's callers = \"{callers}\"); \
                     call it inside `run_code`"
                ),
            )
            .with_info(json!({"callers": callers.as_str()})),
        );
    }
    None
}

/// The call an approval is asked for: the call the client made (a
/// script's call is asked about as part of the script's, which is the one
/// the person and the client know).
pub(crate) fn asking_call<'a>(call: &'a FrozenCall, script: Option<&'a Script>) -> &'a str {
    match script {
        Some(s) => s.parent.call_id(),
        None => call.call_id(),
    }
}

/// Why an approval is asked, saying when a script's call asks it.
pub(crate) fn reason(reason: String, script: Option<&Script>) -> String {
    match script {
        Some(s) => format!("{reason} (called by the `{}` script)", s.parent.name()),
        None => reason,
    }
}

/// What a script's call reports while it runs, relayed live as the
/// script's own: to the sink of the call running the script (the client's
/// progress token and log), each message naming the call
/// (`tools.read#2: …`). A script's progress is one sequence however many
/// calls report, so it only grows, as a client expects of one token: a
/// call's own numbers go into the message.
#[derive(Debug)]
pub(crate) struct Relay {
    /// The sink of the call running the script.
    pub(crate) to: Arc<dyn ContextSink>,
    /// Who reports: `tools.NAME#INDEX`.
    pub(crate) who: String,
    /// The script's progress so far, shared by its calls.
    pub(crate) steps: Arc<std::sync::atomic::AtomicU64>,
}

impl ContextSink for Relay {
    fn emit(&self, event: &ContextEvent) {
        let relayed = match event {
            ContextEvent::Progress {
                done,
                total,
                message,
            } => {
                let at = match total {
                    Some(t) => format!("{done}/{t}"),
                    None => done.to_string(),
                };
                let what = match message {
                    Some(m) => format!("{}: {m} ({at})", self.who),
                    None => format!("{}: {at}", self.who),
                };
                ContextEvent::Progress {
                    done: self
                        .steps
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        .saturating_add(1),
                    total: None,
                    message: Some(what),
                }
            }
            ContextEvent::Log { level, message } => ContextEvent::Log {
                level: *level,
                message: format!("{}: {message}", self.who),
            },
        };
        self.to.emit(&relayed);
    }
}

/// One call the runner asks for, and where its answer goes.
pub(crate) struct Request {
    pub(crate) name: String,
    pub(crate) arguments: String,
    pub(crate) reply: oneshot::Sender<CallReply>,
}

/// The runner's end of the channel to the pipeline: what its `tools`
/// import calls. Unbounded: a call is taken in when it is made, so calls
/// keep the order the script made them in (how many run at once is the
/// pipeline's to bound).
#[derive(Debug)]
pub(crate) struct Requests(mpsc::UnboundedSender<Request>);

/// A channel between a runner and the pipeline that serves its calls.
pub(crate) fn channel() -> (Requests, mpsc::UnboundedReceiver<Request>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Requests(tx), rx)
}

impl ToolCaller for Requests {
    fn call(&self, name: String, arguments: String) -> CallFuture {
        let (reply, answer) = oneshot::channel();
        let sent = self.0.send(Request {
            name,
            arguments,
            reply,
        });
        Box::pin(async move {
            let lost = || CallReply {
                outcome: CallOutcome::Failed(ToolFailure::new(
                    FailureCode::HostError,
                    "the script's call could not reach the host (its call is ending)",
                )),
                waited: std::time::Duration::ZERO,
            };
            if sent.is_err() {
                return lost();
            }
            answer.await.unwrap_or_else(|_| lost())
        })
    }
}

/// What a script's next call sees in a granted directory: the directory
/// as the script's earlier calls left it (their staged changes), else the
/// directory itself.
pub(crate) struct TxView<'a>(pub(crate) &'a Transaction);

impl TxView<'_> {
    fn overlay(
        &self,
        grant: &FsGrant,
    ) -> Result<Option<Arc<toolhost_effects::Overlay>>, ViewError> {
        self.0
            .existing(&grant.host)
            .map_err(|e| ViewError::Unavailable(e.to_string()))
    }
}

impl GrantView for TxView<'_> {
    fn exists(&self, grant: &FsGrant, rel: &Path) -> Result<bool, ViewError> {
        let Some(o) = self.overlay(grant)? else {
            return RealTree.exists(grant, rel);
        };
        let rel = rel.to_str().ok_or(ViewError::Outside)?;
        match o.kind_at(rel) {
            Ok(kind) => Ok(kind.is_some()),
            Err(FsError::NotPermitted | FsError::Loop) => Err(ViewError::Outside),
            Err(FsError::NotDirectory) => Ok(false),
            Err(e) => Err(ViewError::Unavailable(e.to_string())),
        }
    }

    fn read(&self, grant: &FsGrant, rel: &Path, max: u64) -> Option<Vec<u8>> {
        match self.overlay(grant).ok()? {
            Some(o) => o.read_at(rel.to_str()?, max).ok(),
            None => RealTree.read(grant, rel, max),
        }
    }
}
