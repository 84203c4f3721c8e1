//! Why a host could not be set up or a toolbox not loaded.

use std::path::PathBuf;

use toolhost_pipeline::RegistryError;
use toolhost_policy::PolicyError;
use toolhost_runtime::{LoadError, RuntimeError};

use crate::file::ToolboxError;

/// Why a host could not be set up or a toolbox not loaded. Loading is all
/// or nothing: on any error the tools served before stay served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The runtime could not start.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The artifacts directory cannot be created.
    #[error("the artifacts directory {path}: {error}")]
    Artifacts {
        /// The directory.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The commit journal cannot be opened or recovered.
    #[error("the commit journal: {0}")]
    Journal(#[from] toolhost_effects::CommitError),
    /// The toolbox file is invalid.
    #[error(transparent)]
    Toolbox(Box<ToolboxError>),
    /// A policy (file, inline or built-in default) is invalid.
    #[error("{origin}:{line}: component {source_name}: {error}")]
    Policy {
        /// The toolbox file.
        origin: String,
        /// The component entry's line.
        line: usize,
        /// The component.
        source_name: String,
        /// The policy's own error (with its file and position).
        error: Box<PolicyError>,
    },
    /// A component could not be loaded.
    #[error("{origin}:{line}: {error}")]
    Load {
        /// The toolbox file.
        origin: String,
        /// The component entry's line.
        line: usize,
        /// Why.
        error: LoadError,
    },
    /// A prefixed name is not a valid tool name.
    #[error(
        "{origin}:{line}: prefix `{prefix}` makes the tool name `{name}`, which is not a valid tool name ([a-z][a-z0-9_]*, at most 64 bytes)"
    )]
    BadName {
        /// The toolbox file.
        origin: String,
        /// The component entry's line.
        line: usize,
        /// The prefix.
        prefix: String,
        /// The resulting name.
        name: String,
    },
    /// Two components serve a tool of the same name.
    #[error(
        "tool `{name}` is declared by both {first} and {second}; set a `prefix` on one of them"
    )]
    DuplicateTool {
        /// The tool name (after prefixes).
        name: String,
        /// The first component (`source (file:line)`).
        first: String,
        /// The second.
        second: String,
    },
    /// The registry refused the tools (a schema that does not compile).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The lock file is invalid.
    #[error(transparent)]
    Lock(Box<ToolboxError>),
    /// A remote component is not locked (or its lock disagrees with it).
    #[error(
        "{origin}:{line}: `{source_name}` is not locked ({why}): run `toolhost lock`, which resolves it, verifies it and pins it"
    )]
    Unlocked {
        /// The toolbox file.
        origin: String,
        /// The component entry's line.
        line: usize,
        /// The source.
        source_name: String,
        /// What is missing or disagrees.
        why: String,
    },
    /// Resolving, pulling or verifying a remote component failed.
    #[error("{origin}:{line}: {source_name}: {reason}")]
    Remote {
        /// The toolbox file.
        origin: String,
        /// The component entry's line.
        line: usize,
        /// The source.
        source_name: String,
        /// Why.
        reason: String,
    },
}

impl From<ToolboxError> for HostError {
    fn from(e: ToolboxError) -> HostError {
        HostError::Toolbox(Box::new(e))
    }
}
