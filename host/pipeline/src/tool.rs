//! A tool as the registry holds it, and as it is given to the registry.
//!
//! Its own module, apart from the registry's bookkeeping, because the
//! stages that read a tool (dispatch, discovery's index) need the tool and
//! not the registry.

use crate::body::ToolBody;
use jsonschema::Validator;
use std::sync::Arc;
use toolhost_contract::ToolDescriptor;
use toolhost_policy::ToolPolicy;

/// A registered tool: its declaration, its resolved policy, its body and
/// its compiled validators. Host-only: never serialized for a model.
pub struct RegisteredTool {
    /// What the tool declared.
    pub descriptor: ToolDescriptor,
    /// Its resolved policy.
    pub policy: ToolPolicy,
    /// What runs it.
    pub body: Arc<dyn ToolBody>,
    /// Where it came from (component path or a label).
    pub source: String,
    /// The descriptor's digest ([`ToolDescriptor::digest`]), computed once.
    pub digest: String,
    /// Callable by name and found by `search_tools`, but not advertised
    /// (progressive discovery).
    pub deferred: bool,
    /// How it is listed where the host issues baseline handles, when that
    /// is not what [`crate::baseline::advertised_descriptor`] derives from
    /// its descriptor (see [`ToolSpec::listed_with_handles`]).
    pub listed_with_handles: Option<ToolDescriptor>,
    pub(crate) input: Validator,
    pub(crate) output: Validator,
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("name", &self.descriptor.name)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// A tool to register.
pub struct ToolSpec {
    /// Its declaration.
    pub descriptor: ToolDescriptor,
    /// Its resolved policy.
    pub policy: ToolPolicy,
    /// What runs it.
    pub body: Arc<dyn ToolBody>,
    /// Where it came from.
    pub source: String,
    /// Not advertised, found by search instead (see [`RegisteredTool::deferred`]).
    pub deferred: bool,
    /// How it is listed where the host issues baseline handles, when its
    /// description depends on that: code mode's `run_code` declares the
    /// tools its scripts call, with their `baseline` argument only there.
    /// `None`: derived from `descriptor` as for any tool.
    pub listed_with_handles: Option<ToolDescriptor>,
}
