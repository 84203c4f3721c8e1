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
//!   runner's deadline.
//!
//! The runner sends a name and arguments and nothing else: the parent, the
//! caller, the principal and every decision are the host's. Calls run one
//! at a time, in the order the script makes them.

use crate::call::FrozenCall;
use crate::paths::{GrantView, RealTree, ViewError};
use crate::repeat::Previous;
use crate::replay::CallKey;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use toolhost_effects::{FsError, Transaction};
use toolhost_policy::FsGrant;
use toolhost_runtime::{CallFuture, CallOutcome, CallReply, ToolCaller};

/// Most of a script's calls listed one by one in its result's
/// `_meta.toolhost.extra.calls` (the rest are counted).
pub(crate) const MAX_CALLS_IN_META: usize = 100;

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
    /// What the script's caller may call: its calls may call no more.
    pub(crate) reach: Option<Arc<dyn crate::listeners::Reach>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Calls admitted so far.
    calls: u64,
    /// Each call: the tool, how it ended (`None`: well) and its time.
    ended: Vec<(String, Option<String>, u64)>,
    /// Why the person must approve the script's effects at the end: the
    /// reasons of the calls that deferred their `ask` to their effects.
    ask_effects: Vec<String>,
    /// The script's previous call, for the next one's repeat check.
    previous: Option<Previous>,
    /// Nanoseconds the current call waited for a person.
    waited_ns: u64,
}

impl Script {
    /// A script run by `parent`, staging in `transaction`.
    pub(crate) fn new(
        parent: FrozenCall,
        env_position: u64,
        parent_key: Option<CallKey>,
        transaction: Arc<Transaction>,
        max_calls: u64,
        reach: Option<Arc<dyn crate::listeners::Reach>>,
    ) -> Script {
        Script {
            parent,
            env_position,
            parent_key,
            transaction,
            max_calls,
            reach,
            state: Mutex::new(State::default()),
        }
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

    /// A call ended: `code` when it failed.
    pub(crate) fn ended(&self, tool: &str, code: Option<&str>, us: u64) {
        self.lock()
            .ended
            .push((tool.to_owned(), code.map(str::to_owned), us));
    }

    /// The calls, for the result's `meta.extra.calls`.
    pub(crate) fn calls_meta(&self) -> Value {
        let st = self.lock();
        let list: Vec<Value> = st
            .ended
            .iter()
            .take(MAX_CALLS_IN_META)
            .map(|(tool, code, us)| json!({"tool": tool, "code": code, "us": us}))
            .collect();
        let mut meta = json!({"count": st.ended.len(), "list": list});
        if st.ended.len() > MAX_CALLS_IN_META {
            meta["more"] = json!(st.ended.len() - MAX_CALLS_IN_META);
        }
        meta
    }
}

/// A name no other script's staging directory has, in this process or in
/// an earlier one that ran under the same pid.
pub(crate) fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    #[allow(clippy::disallowed_methods)] // a name, never observable by a guest
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{now:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Why `tool` may not be called by this caller (a script's call when
/// `by_script`, else the model's), if it may not.
pub(crate) fn refuse_caller(
    tool: &crate::registry::RegisteredTool,
    by_script: bool,
) -> Option<toolhost_contract::ToolFailure> {
    use toolhost_contract::{FailureCode, ToolFailure};
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

/// One call the runner asks for, and where its answer goes.
pub(crate) struct Request {
    pub(crate) name: String,
    pub(crate) arguments: String,
    pub(crate) reply: oneshot::Sender<CallReply>,
}

/// The runner's end of the channel to the pipeline: what its `tools`
/// import calls.
#[derive(Debug)]
pub(crate) struct Requests(mpsc::Sender<Request>);

/// A channel between a runner and the pipeline that serves its calls.
pub(crate) fn channel() -> (Requests, mpsc::Receiver<Request>) {
    let (tx, rx) = mpsc::channel(1);
    (Requests(tx), rx)
}

impl ToolCaller for Requests {
    fn call(&self, name: String, arguments: String) -> CallFuture<'_> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let lost = || CallReply {
                outcome: CallOutcome::Failed(toolhost_contract::ToolFailure::new(
                    toolhost_contract::FailureCode::HostError,
                    "the script's call could not reach the host (its call is ending)",
                )),
                waited: std::time::Duration::ZERO,
            };
            let request = Request {
                name,
                arguments,
                reply,
            };
            if self.0.send(request).await.is_err() {
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

fn rel_text(rel: &Path) -> Option<&str> {
    rel.to_str()
}

impl GrantView for TxView<'_> {
    fn exists(&self, grant: &FsGrant, rel: &Path) -> Result<bool, ViewError> {
        let Some(o) = self.overlay(grant)? else {
            return RealTree.exists(grant, rel);
        };
        let rel = rel_text(rel).ok_or(ViewError::Outside)?;
        match o.kind_at(rel) {
            Ok(kind) => Ok(kind.is_some()),
            Err(FsError::NotPermitted | FsError::Loop) => Err(ViewError::Outside),
            Err(FsError::NotDirectory) => Ok(false),
            Err(e) => Err(ViewError::Unavailable(e.to_string())),
        }
    }

    fn read(&self, grant: &FsGrant, rel: &Path, max: u64) -> Option<Vec<u8>> {
        match self.overlay(grant).ok()? {
            Some(o) => o.read_at(rel_text(rel)?, max).ok(),
            None => RealTree.read(grant, rel, max),
        }
    }
}
