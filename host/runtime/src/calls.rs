//! The `tools` import of contracts 0.4.0 and 0.5.0: a code runner's calls
//! of the host's tools, handed to the [`ToolCaller`] its call was started
//! with (the pipeline, which runs each as a whole call of its own). From
//! 0.5.0 a runner may start calls and wait for them ([`Started`]): they
//! run where the caller runs them while the runner goes on.
//!
//! The runtime decides none of it: it passes a name and arguments out and
//! a value or a failure back. What it does own is time: while a call waits
//! for a person (an approval), the runner's deadline stands still, so a
//! script is never stopped because someone took a minute to answer.

use crate::bindings::{v4, v5};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use toolhost_contract::ToolFailure;
use toolhost_effects::Transaction;
use toolhost_worker_wire::CallReply;

/// What code mode adds to a call: where a code runner's tool calls go, and
/// the script a call is part of. Both `None` for a call of its own.
#[derive(Debug, Default, Clone)]
pub struct Scope {
    /// Where the tool's own tool calls go, for a code runner whose policy
    /// grants `call_tools` (`None`: every call it tries is refused).
    pub tools: Option<Arc<dyn ToolCaller>>,
    /// The script's transaction, when a script made the call: its writes
    /// stage there (and the [`crate::Execution`] hands none back to
    /// commit), and its read-only grants read what the script's earlier
    /// calls wrote.
    pub transaction: Option<Arc<Transaction>>,
}

/// Where a code runner's tool calls go.
pub trait ToolCaller: Send + Sync + std::fmt::Debug {
    /// Calls tool `name` with `arguments` (a JSON object as text, as the
    /// runner sent it). The call is taken in before this returns (calls
    /// are numbered in the order they are made, whenever their futures
    /// are polled); the future waits for its reply.
    fn call(&self, name: String, arguments: String) -> CallFuture;
}

/// The calls a runner started and has not had back yet, and the outcomes
/// of those that ended, kept until asked for. A started call runs where
/// its caller runs it (the pipeline, or the serving process beyond a
/// worker's wall): what is kept here only waits for its reply. Dropped
/// with the call's store (a runner waits for every call it started before
/// it ends, so only a stopped runner leaves any).
#[derive(Default)]
pub(crate) struct Started {
    next: u32,
    running: futures_util::stream::FuturesUnordered<Waiting>,
    ended: BTreeMap<u32, CallReply>,
}

/// A started call's reply, with its handle.
type Waiting = Pin<Box<dyn Future<Output = (u32, CallReply)> + Send>>;

impl Started {
    /// Starts `name` on `arguments` through `caller` (the caller takes the
    /// call in before this returns: calls are numbered in the order they
    /// are started); its handle.
    pub(crate) fn start(
        &mut self,
        caller: &Arc<dyn ToolCaller>,
        name: String,
        arguments: String,
    ) -> u32 {
        self.next = self.next.wrapping_add(1);
        let handle = self.next;
        let call = caller.call(name, arguments);
        self.running
            .push(Box::pin(async move { (handle, call.await) }));
        handle
    }

    /// A call that ended as it was started, with `failure` (it reached no
    /// caller); its handle.
    pub(crate) fn ended_at_once(&mut self, failure: ToolFailure) -> u32 {
        self.next = self.next.wrapping_add(1);
        let reply = CallReply {
            outcome: crate::CallOutcome::Failed(failure),
            waited: std::time::Duration::ZERO,
        };
        self.ended.insert(self.next, reply);
        self.next
    }

    /// A started call's outcome that nobody waited for is refused: the
    /// handle was never given, or its outcome was already returned.
    fn unknown(handle: u32) -> CallReply {
        CallReply {
            outcome: crate::CallOutcome::Failed(ToolFailure::new(
                toolhost_contract::FailureCode::InvalidArguments,
                format!("no started call has the handle {handle} (or its outcome was returned)"),
            )),
            waited: std::time::Duration::ZERO,
        }
    }

    /// Waits until one of `handles` has ended; every one that has, in the
    /// order of `handles`.
    pub(crate) async fn wait(&mut self, handles: &[u32]) -> Vec<(u32, CallReply)> {
        loop {
            let mut out = Vec::new();
            for &h in handles {
                if let Some(reply) = self.ended.remove(&h) {
                    out.push((h, reply));
                } else if h == 0 || h > self.next {
                    out.push((h, Started::unknown(h)));
                }
            }
            if !out.is_empty() {
                return out;
            }
            match futures_util::StreamExt::next(&mut self.running).await {
                Some((h, reply)) => {
                    self.ended.insert(h, reply);
                }
                // Nothing runs, and none of `handles` ended: they were
                // returned already.
                None => return handles.iter().map(|&h| (h, Started::unknown(h))).collect(),
            }
        }
    }
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("next", &self.next)
            .field("running", &self.running.len())
            .field("ended", &self.ended.len())
            .finish()
    }
}

/// What [`ToolCaller::call`] returns.
pub type CallFuture = Pin<Box<dyn Future<Output = CallReply> + Send + 'static>>;

/// A runner stopped to wait for an answer: the trap that carries it out
/// of the instance.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.message)]
pub(crate) struct Suspended(pub(crate) ToolFailure);

/// A failure as contract 0.4.0's type.
pub(crate) fn failure(f: &ToolFailure) -> v4::types::ToolFailure {
    v4::types::ToolFailure {
        code: f.code.as_str().to_owned(),
        message: f.message.clone(),
        info: f.info.as_ref().map(|i| i.to_string()),
    }
}

/// A failure as contract 0.5.0's type.
pub(crate) fn failure_v5(f: &ToolFailure) -> v5::types::ToolFailure {
    let v4::types::ToolFailure {
        code,
        message,
        info,
    } = failure(f);
    v5::types::ToolFailure {
        code,
        message,
        info,
    }
}
