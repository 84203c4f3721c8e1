//! The `tools` import of contract 0.4.0: a code runner's calls of the
//! host's tools, handed to the [`ToolCaller`] its call was started with
//! (the pipeline, which runs each as a whole call of its own).
//!
//! The runtime decides none of it: it passes a name and arguments out and
//! a value or a failure back. What it does own is time: while a call waits
//! for a person (an approval), the runner's deadline stands still, so a
//! script is never stopped because someone took a minute to answer.

use crate::bindings::v4;
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
    /// runner sent it).
    fn call(&self, name: String, arguments: String) -> CallFuture<'_>;
}

/// What [`ToolCaller::call`] returns.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = CallReply> + Send + 'a>>;

/// A runner stopped to wait for an answer: the trap that carries it out
/// of the instance.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.message)]
pub(crate) struct Suspended(pub(crate) ToolFailure);

/// A failure as the contract's type.
pub(crate) fn failure(f: &ToolFailure) -> v4::types::ToolFailure {
    v4::types::ToolFailure {
        code: f.code.as_str().to_owned(),
        message: f.message.clone(),
        info: f.info.as_ref().map(|i| i.to_string()),
    }
}
