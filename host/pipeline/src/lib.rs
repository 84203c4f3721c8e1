//! The tool-calling contract, end to end.
//!
//! A [`Registry`] holds tools (registered as a service: dropping the
//! [`Registration`] unregisters them; per-agent tools shadow global ones).
//! [`advertise`] projects the visible tools to a model-facing allow-list in a
//! stable order. A [`Pipeline`] runs one call through every stage, in the
//! order written out in [`pipeline`], and always returns a
//! [`toolhost_contract::ToolResult`]: there is no path where a call vanishes.
//!
//! Authority lives in types: the pre-execute waterfall can allow, ask or
//! deny; a [`Guard`] can only deny or abstain; only a call that passed
//! validation, policy, approval and guards reaches the around-dispatch
//! [`wrappers`], and those can change the budget and the signal, never the
//! call.
//!
//! ```no_run
//! # async fn demo(registry: toolhost_pipeline::Registry) {
//! use toolhost_pipeline::Pipeline;
//! use toolhost_contract::ToolCall;
//! let pipeline = Pipeline::builder(registry).build();
//! let result = pipeline
//!     .execute(ToolCall::new("call_1", "read", r#"{"path":"src/a.rs"}"#), Default::default())
//!     .await;
//! println!("{}", result.text());
//! # }
//! ```

pub mod advertise;
pub mod body;
mod builder;
pub mod call;
mod commit;
mod determinism;
pub mod discovery;
pub mod listeners;
pub mod pipeline;
pub mod registry;
mod repeat;
pub mod replay;
mod script;
mod tool;
pub mod wrappers;
/// The durable session log (its own crate, `toolhost-session-log`, so its
/// reader can be fuzzed without building the sandbox).
pub use toolhost_session_log as session_log;
/// The stages that need no sandbox (their own crate, `toolhost-stages`, so
/// they can be fuzzed without building it).
pub use toolhost_stages::{baseline, bound, network, paths, schema, summary};

pub use body::ToolBody;
pub use call::{ExecutionToken, FrozenCall, Handoff, ParsedArguments, parse_arguments};
pub use listeners::{
    Approval, ApprovalRequest, ApproveAll, Approver, Guard, GuardDenial, ListenerError, PostAction,
    PostExecute, PreDecision, PreExecute, REACH, Reach, ResultListener,
};
pub use pipeline::{Pipeline, PipelineBuilder, RepeatScopes, StageObserver};
pub use registry::{
    Availability, LOAD_WAIT, ModelState, RegisteredTool, Registration, Registry, RegistryError,
    Scope, ToolSpec,
};
pub use session_log::{LogContents, LogError, SessionLog, parse_log, read_log};
pub use toolhost_embed as embed;
/// What a [`ToolBody`] runs: the tool, its arguments and everything the
/// wrappers set.
pub use toolhost_runtime::{Invocation, Retirement};
