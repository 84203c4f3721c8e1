//! The data a call's sandbox hands across a process boundary: a worker
//! sends it to the serving process, or back. The runtime uses the same
//! types in process.

use std::time::Duration;
use toolhost_contract::{Annotations, ContextEvent, PathParam, ToolFailure};

/// What the sandbox observed about a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExecutionReport {
    /// Fuel units used.
    pub fuel_consumed: u64,
    /// The guest's stdout (bounded, lossily decoded).
    pub stdout: String,
    /// The guest's stderr (bounded, lossily decoded).
    pub stderr: String,
    /// Outgoing requests refused by policy, as `host:port`.
    pub network_denied: Vec<String>,
    /// Bytes written into read-write grants (charged to the write budget).
    pub bytes_written: u64,
    /// Files, directories and links created (charged to the write budget).
    pub entries_created: u64,
    /// Time spent instantiating.
    pub instantiate: Duration,
    /// Wall-clock time of the whole call.
    pub elapsed: Duration,
    /// What the tool reported while it ran (contract 0.3.0), in order:
    /// what its policy's bounds let through.
    pub context: Vec<ContextEvent>,
    /// Reports the bounds dropped (rate or byte budget).
    pub context_dropped: u64,
}

/// An outgoing request, whole (a tool's requests and responses are bounded).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RelayedRequest {
    /// The method.
    pub method: String,
    /// The absolute URI.
    pub uri: String,
    /// The headers, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

/// A response, whole.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RelayedResponse {
    /// The status code.
    pub status: u16,
    /// The headers, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body (at most the policy's `max_http_response_bytes`).
    pub body: Vec<u8>,
}

/// Why a relayed request failed, as the guest will see it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, thiserror::Error)]
pub enum RelayError {
    /// Not on the call's network allow-list.
    #[error("HTTP request denied")]
    Denied,
    /// The request was malformed.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The response body was larger than the policy allows.
    #[error("response body larger than {0} bytes")]
    TooLarge(u64),
    /// Connecting, sending or receiving failed.
    #[error("{0}")]
    Failed(String),
}

/// How one of a code runner's calls ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CallReply {
    /// What the runner gets.
    pub outcome: CallOutcome,
    /// Time the call spent waiting for a person: added to the runner's
    /// deadline.
    pub waited: Duration,
}

/// What a code runner's call gives back.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CallOutcome {
    /// The tool's value, as JSON.
    Value(String),
    /// Why the call failed (the runner's script may catch it).
    Failed(ToolFailure),
    /// The call needs an answer the client gives in a later request (MCP
    /// 2026-07-28's `input_required`): the runner stops here, and the call
    /// that started it ends with this failure (`approval_pending`); its
    /// retry runs the script again.
    Suspend(ToolFailure),
}

/// A tool descriptor as a component declared it, in any contract version
/// (or as the host derived it from a plain component's type), unchecked.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeclaredTool {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its input schema, JSON text.
    pub input_schema: String,
    /// Its output schema, JSON text.
    pub output_schema: String,
    /// Its hints.
    pub annotations: Annotations,
    /// Which of its arguments are paths, and what it does with them.
    pub paths: Vec<PathParam>,
    /// Its title (from 0.2.0).
    pub title: Option<String>,
    /// Its links (from 0.2.0).
    pub urls: Vec<String>,
    /// Whether the host renders its value (from 0.3.0).
    pub host_renders: bool,
}

/// What a component's `list-tools` returned, unchecked (as data, so a
/// worker process can send it; the runtime checks it as it checks a
/// load's).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Declared(Vec<DeclaredTool>);

impl Declared {
    /// The tools as declared.
    pub fn new(tools: Vec<DeclaredTool>) -> Declared {
        Declared(tools)
    }

    /// The tools, to be checked.
    pub fn into_tools(self) -> Vec<DeclaredTool> {
        self.0
    }
}
