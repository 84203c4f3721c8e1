//! From emitted call to frozen execution: defensive parsing, immutable
//! identity, an opaque token.

use serde_json::Value;
use std::sync::Arc;
use toolhost_contract::ToolCall;
pub use toolhost_stages::args::{ParsedArguments, parse_arguments};

/// An opaque handle for one execution, assigned when the call is frozen.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExecutionToken(String);

impl ExecutionToken {
    pub(crate) fn new(session: &str, seq: u64) -> ExecutionToken {
        ExecutionToken(format!("exec-{session}-{seq:06}"))
    }

    /// The token's string form (used in session events).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A call whose identity can no longer change: call id, tool name,
/// arguments and agent are fixed from the moment it is frozen, so history,
/// audit and execution agree on what was called. Fields are private and
/// there is no `&mut` access.
#[derive(Debug, Clone)]
pub struct FrozenCall {
    call_id: Arc<str>,
    name: Arc<str>,
    raw_arguments: Arc<str>,
    arguments: Arc<ParsedArguments>,
    agent: Option<Arc<str>>,
    parent: Option<Arc<str>>,
    token: ExecutionToken,
}

impl FrozenCall {
    pub(crate) fn freeze(call: &ToolCall, token: ExecutionToken) -> FrozenCall {
        FrozenCall {
            call_id: call.call_id.as_str().into(),
            name: call.name.as_str().into(),
            raw_arguments: call.arguments.as_str().into(),
            arguments: Arc::new(parse_arguments(&call.arguments)),
            agent: call.agent.as_deref().map(Into::into),
            parent: call.parent.as_deref().map(Into::into),
            token,
        }
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
    /// The tool name asked for.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The raw argument string, as emitted.
    pub fn raw_arguments(&self) -> &str {
        &self.raw_arguments
    }
    /// The parsed arguments.
    pub fn arguments(&self) -> &ParsedArguments {
        &self.arguments
    }
    /// The arguments as JSON, when they parsed.
    pub fn json(&self) -> Option<&Value> {
        match &*self.arguments {
            ParsedArguments::Json(v) => Some(v),
            ParsedArguments::Raw(_) => None,
        }
    }
    /// The calling agent.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }
    /// The parent call.
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
    /// The execution token.
    pub fn token(&self) -> &ExecutionToken {
        &self.token
    }
}
