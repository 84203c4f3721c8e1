//! The tool body: what runs at the centre of the wrappers.

use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::Clock;
use toolhost_contract::{ContentBlock, ContextSink, ToolFailure};
use toolhost_policy::ToolPolicy;
use toolhost_runtime::{Budget, Entropy, Execution, Invocation, LoadedComponent, Scope};

/// Everything the body gets for one attempt.
#[derive(Clone)]
pub struct BodyInput<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The validated arguments as JSON text.
    pub arguments: &'a str,
    /// The tool's policy.
    pub policy: &'a ToolPolicy,
    /// The budget the wrappers set.
    pub budget: Budget,
    /// The re-joined signal: cancelled by the caller or by any wrapper.
    pub cancel: CancellationToken,
    /// Randomness source.
    pub entropy: Entropy,
    /// The guest's clocks (`None`: the runtime's).
    pub clock: Option<Arc<dyn Clock>>,
    /// Where what the tool reports while it runs goes live.
    pub sink: Option<Arc<dyn ContextSink>>,
    /// A code runner's tool calls, and the script the call is part of.
    pub scope: Scope,
    /// What the caller may call, when its front end limits it (OAuth
    /// scopes): a body that lists tools (`search_tools`) lists only those.
    pub reach: Option<Arc<dyn crate::Reach>>,
}

impl std::fmt::Debug for BodyInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyInput")
            .field("tool", &self.tool)
            .field("arguments", &self.arguments)
            .field("budget", &self.budget)
            .field("reach", &self.reach.is_some())
            .finish_non_exhaustive()
    }
}

/// Runs a tool and renders its values. Implemented by wasm components;
/// tests substitute their own.
#[async_trait::async_trait]
pub trait ToolBody: Send + Sync {
    /// Executes the tool.
    async fn execute(&self, input: BodyInput<'_>) -> Execution;
    /// Renders a value; `Ok(None)` means use the host's default rendering
    /// (what a body that does not render returns).
    async fn render(
        &self,
        _tool: &str,
        _arguments: &str,
        _value: &str,
        _policy: &ToolPolicy,
        _cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        Ok(None)
    }
    /// The SHA-256 of the component that runs the tool, when it is one
    /// (recorded in cassettes, so a changed component is noticed).
    fn component_id(&self) -> Option<&str> {
        None
    }
}

/// A tool of a loaded wasm component.
#[async_trait::async_trait]
impl ToolBody for Arc<LoadedComponent> {
    async fn execute(&self, input: BodyInput<'_>) -> Execution {
        let inv = Invocation {
            tool: input.tool,
            arguments: input.arguments,
            policy: input.policy,
            budget: input.budget,
            cancel: input.cancel,
            entropy: input.entropy,
            clock: input.clock,
            sink: input.sink,
            scope: input.scope,
        };
        LoadedComponent::execute(self, inv).await
    }

    async fn render(
        &self,
        tool: &str,
        arguments: &str,
        value: &str,
        policy: &ToolPolicy,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        LoadedComponent::render(self, tool, arguments, value, policy, cancel).await
    }

    fn component_id(&self) -> Option<&str> {
        Some(self.id())
    }
}
