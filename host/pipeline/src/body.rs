//! The tool body: what runs at the centre of the wrappers.

use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ContentBlock, ToolFailure};
use toolhost_policy::ToolPolicy;
use toolhost_runtime::{Execution, Invocation, LoadedComponent};

/// Runs a tool and renders its values. Implemented by wasm components;
/// tests substitute their own.
#[async_trait::async_trait]
pub trait ToolBody: Send + Sync {
    /// Executes the tool: everything the body gets for one attempt.
    async fn execute(&self, input: Invocation<'_>) -> Execution;
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
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        LoadedComponent::execute(self, input).await
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
