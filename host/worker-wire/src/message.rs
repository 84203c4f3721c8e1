//! The messages, each way: the serving process asks a worker to start,
//! execute, render or list a component's tools, and answers what the
//! running call relays (HTTP requests, a code runner's tool calls); the
//! worker answers, and says on the way what the tool reports. Each message
//! is one frame of JSON.

use crate::carried::{
    CallReply, Declared, ExecutionReport, RelayError, RelayedRequest, RelayedResponse,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use toolhost_contract::clock::PortableClock;
use toolhost_contract::{ContentBlock, ContextEvent, ToolDescriptor, ToolFailure};
use toolhost_effects::{OverlaySnapshot, TxSnapshot};
use toolhost_policy::ToolPolicy;

/// From the serving process to a worker.
// Externally tagged: an internally tagged enum buffers its content, and
// that cannot hold the i128 timestamps of a staged file's record.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// The first message: what the worker runs, and its walls. The
    /// compiled artifact follows as a raw frame.
    Start(Box<Start>),
    /// Run `execute` (and a same-instance render when the policy says).
    Execute(Box<Execute>),
    /// Run `render` in a sandbox that grants nothing.
    Render(Box<Render>),
    /// Run the component's `list-tools` (under a policy granting nothing).
    ListTools {
        /// The request's number, which its answer carries.
        seq: u64,
    },
    /// The running call's caller cancelled it.
    Cancel,
    /// The answer to a relayed HTTP request.
    Http {
        /// The request's number.
        id: u64,
        /// The response, or why there is none.
        result: Result<RelayedResponse, RelayError>,
    },
    /// How a code runner's tool call ended (a whole pipeline call in the
    /// serving process).
    Called {
        /// The call's number.
        id: u64,
        /// Its outcome.
        reply: CallReply,
    },
}

/// What a worker runs.
#[derive(Debug, Serialize, Deserialize)]
pub struct Start {
    /// The component's origin (for messages).
    pub origin: PathBuf,
    /// Its SHA-256.
    pub id: String,
    /// Its tools, as the serving process read them.
    pub tools: Vec<ToolDescriptor>,
    /// The engine's wasm stack limit (must match the artifact's engine).
    pub max_wasm_stack: usize,
    /// The epoch tick, in microseconds.
    pub epoch_tick_us: u64,
    /// Whether file I/O runs on the calling thread.
    pub fs_on_calling_thread: bool,
    /// Whether writes are staged.
    pub stage_writes: bool,
    /// Test builds only: link the escape hatch.
    pub escape_hatch: bool,
    /// The worker's own directory (its staging lives there).
    pub dir: PathBuf,
    /// What it may reach on disk.
    pub walls: WallSpec,
}

/// One `execute`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Execute {
    /// The request's number, which its answer carries.
    pub seq: u64,
    /// The tool, by the name the component declared.
    pub tool: String,
    /// The arguments, JSON.
    pub arguments: String,
    /// The call's policy (environment values already resolved into
    /// `env_set`); `None`: the same as the worker's last call's.
    pub policy: Option<ToolPolicy>,
    /// Fuel.
    pub fuel: u64,
    /// Deadline, in nanoseconds from the start.
    pub deadline_ns: u64,
    /// `None`: the OS's randomness; else the seed.
    pub seed: Option<u64>,
    /// The guest's clock (`None`: the worker's system clock).
    pub clock: Option<PortableClock>,
    /// Whether the caller listens to what the tool reports while it runs.
    pub live: bool,
    /// A script's call: what the script's transaction stages in the
    /// call's granted directories (`None`: a call of its own).
    pub transaction: Option<TxSnapshot>,
    /// Whether the call may call the host's tools (a code runner's,
    /// relayed to the serving process as [`FromWorker::Call`]).
    pub tools: bool,
}

/// One pure `render`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Render {
    /// The request's number, which its answer carries.
    pub seq: u64,
    /// The tool.
    pub tool: String,
    /// The arguments, JSON.
    pub arguments: String,
    /// The value, JSON.
    pub value: String,
    /// The call's policy (only its limits apply).
    pub policy: ToolPolicy,
}

/// From a worker to the serving process.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// Walled in (as far as the kernel allowed) and loaded.
    Ready {
        /// The walls it built.
        walls: WallStatus,
    },
    /// It could not start.
    Failed {
        /// Why.
        reason: String,
    },
    /// What the running tool reported.
    Context {
        /// The event.
        event: ContextEvent,
    },
    /// An outgoing HTTP request for the serving process's gate.
    Http {
        /// Its number, for the answer.
        id: u64,
        /// The request.
        request: RelayedRequest,
    },
    /// A code runner's call of one of the host's tools, for the serving
    /// process's pipeline.
    Call {
        /// Its number, for the answer.
        id: u64,
        /// The tool.
        name: String,
        /// Its arguments, a JSON object as text.
        arguments: String,
    },
    /// An `execute` ended.
    Executed(Box<Executed>),
    /// `list-tools` ended: what the component declared, unchecked.
    Listed {
        /// The number of the request it answers.
        seq: u64,
        /// The declaration, or why there is none.
        declared: Result<Declared, String>,
    },
    /// A `render` ended.
    Rendered {
        /// The number of the request it answers.
        seq: u64,
        /// Its outcome.
        outcome: Result<Option<Vec<ContentBlock>>, ToolFailure>,
    },
}

/// How an `execute` ended.
#[derive(Debug, Serialize, Deserialize)]
pub struct Executed {
    /// The number of the request it answers.
    pub seq: u64,
    /// The value or the failure.
    pub outcome: Result<String, ToolFailure>,
    /// A same-instance render's outcome.
    pub rendered: Option<Result<Option<Vec<ContentBlock>>, ToolFailure>>,
    /// What the sandbox observed.
    pub report: ExecutionReport,
    /// What it staged: (guest path, host directory, overlay) per grant.
    pub staged: Vec<(String, PathBuf, OverlaySnapshot)>,
    /// A script's call: the transaction as the call left it.
    pub transaction: Option<TxSnapshot>,
    /// Reads of the guest's clock (to move the caller's copy on).
    pub clock_reads: u64,
}

impl FromWorker {
    /// The number of the request this answers (`None`: not an answer,
    /// something the running call says on its way).
    pub fn answers(&self) -> Option<u64> {
        match self {
            FromWorker::Executed(e) => Some(e.seq),
            FromWorker::Listed { seq, .. } | FromWorker::Rendered { seq, .. } => Some(*seq),
            FromWorker::Ready { .. }
            | FromWorker::Failed { .. }
            | FromWorker::Context { .. }
            | FromWorker::Http { .. }
            | FromWorker::Call { .. } => None,
        }
    }
}

/// What a worker may reach on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WallSpec {
    /// Read only: the component's read-only grants, and the directories of
    /// its read-write grants (it reads them; its writes are staged).
    pub read: Vec<PathBuf>,
    /// Read and write: the worker's own staging directory.
    pub write: Vec<PathBuf>,
}

/// Which walls a worker built.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WallStatus {
    /// `no_new_privs` is set.
    pub no_new_privs: bool,
    /// Landlock is fully enforced.
    pub landlock: bool,
    /// The seccomp filter is installed.
    pub seccomp: bool,
    /// Why a wall is missing, for the log.
    pub notes: Vec<String>,
}

impl WallStatus {
    /// The missing walls, by name.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if !self.landlock {
            m.push("landlock");
        }
        if !self.seccomp {
            m.push("seccomp");
        }
        m
    }
}
