//! The extension points of the pipeline, each with only the authority its
//! place in the order allows.
//!
//! - [`PreExecute`] listeners form a waterfall over a [`PreDecision`]
//!   (allow / ask / deny); the policy's decision is its first step.
//! - An [`Approver`] answers `ask` once. Without one, `ask` is a denial.
//! - [`Guard`]s can only deny or abstain: their return type has no "allow",
//!   so no listener order can turn a denial into permission.
//! - [`PostExecute`] listeners may accept, replace content, block, or add context.
//! - [`ResultListener`]s observe the frozen final result (`tools/result`).
//! - A [`Reach`] comes with one call from its front end: what that caller
//!   may call (an access token's scopes). It can only refuse, and the
//!   calls a script makes inherit their script's.

use crate::call::FrozenCall;
use toolhost_contract::{ContentBlock, ToolDescriptor, ToolResult};

/// What one caller may call (defined with the [`toolhost_runtime::Invocation`]
/// that carries it to a tool body).
pub use toolhost_runtime::Reach;

/// The name a [`Reach`]'s refusal goes by in a result's decision trace.
pub const REACH: &str = "reach";

/// A pre-execute decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreDecision {
    /// Run it.
    Allow,
    /// Ask for approval, with the reason shown to the approver.
    Ask(String),
    /// Refuse, with the reason shown to the model.
    Deny(String),
}

/// A listener failed (returned an error). Panics are caught and treated the same.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ListenerError(pub String);

/// A pre-execute listener (waterfall: each sees the decision so far).
pub trait PreExecute: Send + Sync {
    /// Name, for decision traces.
    fn name(&self) -> &str;
    /// The new decision, given the one so far.
    fn decide(
        &self,
        call: &FrozenCall,
        tool: &ToolDescriptor,
        so_far: &PreDecision,
    ) -> Result<PreDecision, ListenerError>;
}

/// What an approver is shown: small and bounded, never raw content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// A bounded one-paragraph summary (paths and change shape).
    pub summary: String,
    /// Why approval is needed.
    pub reason: String,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approved,
    /// Don't, with a reason for the model.
    Denied(String),
    /// Not now: the question went to the user through the protocol, whose
    /// answer comes with a later request (MCP 2026-07-28 `input_required`).
    /// The call ends `approval_pending` and runs nothing; the reason says
    /// what was asked.
    Pending(String),
}

/// Answers `ask` decisions (a human prompt, an ACP client, a test).
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// Called at most once per call.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// A guard's denial: the only thing a guard can produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardDenial(pub String);

/// A deny-only check after approval. The return type has no allow: a
/// guard denies (`Some`) or abstains (`None`). It sees the frozen call and
/// cannot change it.
pub trait Guard: Send + Sync {
    /// Name, for decision traces.
    fn name(&self) -> &str;
    /// `Some(denial)` to refuse, `None` to abstain.
    fn check(&self, call: &FrozenCall, tool: &ToolDescriptor) -> Option<GuardDenial>;
}

/// What a post-execute listener does with a result.
#[derive(Debug, Clone, PartialEq)]
pub enum PostAction {
    /// Keep it.
    Accept,
    /// Replace what the model reads (the value stays as the tool produced it).
    ReplaceContent(Vec<ContentBlock>),
    /// Turn the result into a `blocked` failure.
    Block(String),
    /// Attach extra context for the model.
    AddContext(String),
}

/// A post-execute listener.
pub trait PostExecute: Send + Sync {
    /// Name, for decision traces.
    fn name(&self) -> &str;
    /// What to do with the result so far.
    fn after(&self, call: &FrozenCall, result: &ToolResult) -> Result<PostAction, ListenerError>;
}

/// Observes every final result, in process (`tools/result`).
pub trait ResultListener: Send + Sync {
    /// Called once per call with the frozen, authoritative outcome.
    fn on_result(&self, call: &FrozenCall, result: &ToolResult);
}

/// An approver that grants everything (for trusted local use and tests;
/// never the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait::async_trait]
impl Approver for ApproveAll {
    async fn approve(&self, _: &ApprovalRequest) -> Approval {
        Approval::Approved
    }
}
