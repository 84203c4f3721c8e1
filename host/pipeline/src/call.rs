//! From emitted call to frozen execution: defensive parsing, immutable
//! identity, an opaque token.

use serde_json::Value;
use std::sync::Arc;
use toolhost_contract::{ContextSink, ToolCall};
use toolhost_runtime::{Reach, Retirement};
pub use toolhost_stages::args::{ParsedArguments, parse_arguments};

/// What a front end hands down with one call besides the call itself, all
/// of it optional (the CLI hands nothing).
#[derive(Clone, Default)]
pub struct Handoff {
    /// Where what the tool reports while it runs (progress, log messages)
    /// goes live, as well as into the result's `meta.context`. A call
    /// played back from a cassette relays its recorded reports.
    pub sink: Option<Arc<dyn ContextSink>>,
    /// What the caller may call, when its front end limits it: it refuses
    /// the tools it may not, for this call and for every call a script it
    /// runs makes.
    pub reach: Option<Arc<dyn Reach>>,
    /// Where the call's sandboxes end, for a front end that writes the
    /// response itself: they are dropped after it is out, not before.
    pub retire: Option<Retirement>,
}

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
pub struct FrozenCall(Arc<Frozen>);

/// What a [`FrozenCall`] shares: one allocation, the call's own strings
/// moved in.
#[derive(Debug)]
struct Frozen {
    call_id: String,
    name: String,
    raw_arguments: String,
    arguments: ParsedArguments,
    agent: Option<String>,
    parent: Option<String>,
    principal: Option<String>,
    resume: Option<String>,
    trace_id: Option<String>,
    token: ExecutionToken,
}

impl FrozenCall {
    /// Freezes `call`, whose arguments parsed as `arguments`.
    pub(crate) fn freeze(
        call: ToolCall,
        arguments: ParsedArguments,
        token: ExecutionToken,
    ) -> FrozenCall {
        FrozenCall(Arc::new(Frozen {
            call_id: call.call_id,
            name: call.name,
            raw_arguments: call.arguments,
            arguments,
            agent: call.agent,
            parent: call.parent,
            principal: call.principal,
            resume: call.resume,
            trace_id: call.trace_id,
            token,
        }))
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        &self.0.call_id
    }
    /// The tool name asked for.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The raw argument string, as emitted.
    pub fn raw_arguments(&self) -> &str {
        &self.0.raw_arguments
    }
    /// The parsed arguments.
    pub fn arguments(&self) -> &ParsedArguments {
        &self.0.arguments
    }
    /// The arguments as JSON, when they parsed.
    pub fn json(&self) -> Option<&Value> {
        match &self.0.arguments {
            ParsedArguments::Json(v) => Some(v),
            ParsedArguments::Raw(_) => None,
        }
    }
    /// The calling agent.
    pub fn agent(&self) -> Option<&str> {
        self.0.agent.as_deref()
    }
    /// The parent call.
    pub fn parent(&self) -> Option<&str> {
        self.0.parent.as_deref()
    }
    /// Who is calling, when the front end said.
    pub fn principal(&self) -> Option<&str> {
        self.0.principal.as_deref()
    }
    /// The W3C trace the call belongs to ([`ToolCall::trace_id`]).
    pub fn trace_id(&self) -> Option<&str> {
        self.0.trace_id.as_deref()
    }
    /// Where an earlier attempt stopped to wait for an answer, when the
    /// front end brought it back ([`ToolCall::resume`]).
    pub fn resume(&self) -> Option<&str> {
        self.0.resume.as_deref()
    }
    /// The execution token.
    pub fn token(&self) -> &ExecutionToken {
        &self.0.token
    }
}
