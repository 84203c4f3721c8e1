//! Errors of the runtime itself (not of a call: calls end in results).

use std::path::PathBuf;

/// The runtime could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The wasmtime engine rejected the configuration.
    #[error("engine configuration: {0}")]
    Engine(String),
    /// The compiled-component cache directory is unusable.
    #[error("cache directory {path}: {reason}")]
    Cache {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// A component could not be loaded. Each variant names the failing step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("reading component {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not a valid component, or failed to compile.
    #[error("compiling component {path}: {reason}")]
    Compile {
        /// The file.
        path: PathBuf,
        /// The compiler's message.
        reason: String,
    },
    /// The component imports something toolhost does not provide.
    #[error("component {path} imports `{import}`, which toolhost does not provide")]
    UnknownImport {
        /// The file.
        path: PathBuf,
        /// The import's name.
        import: String,
    },
    /// Linking or instantiating failed.
    #[error("instantiating component {path}: {reason}")]
    Instantiate {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `list-tools` failed or trapped.
    #[error("component {path}: list-tools failed: {reason}")]
    ListTools {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Its tool descriptors are not those its lock pinned.
    #[error("component {path}: {reason}")]
    Pinned {
        /// The origin.
        path: PathBuf,
        /// What changed, and what to do.
        reason: String,
    },
    /// A plain component (one that does not implement `toolhost:tool`)
    /// exports no function that can be served.
    #[error("component {path} exports no function toolhost can serve as a tool{}", why(.unserved))]
    NothingToServe {
        /// The file.
        path: PathBuf,
        /// Each exported function, and why it is not served.
        unserved: Vec<crate::plain::Unserved>,
    },
    /// A declared tool is malformed, or what it declares passes a bound.
    #[error("component {path}: {source}")]
    Descriptor {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: Box<toolhost_contract::DescriptorError>,
    },
}

/// The reasons of [`LoadError::NothingToServe`], one a line.
fn why(unserved: &[crate::plain::Unserved]) -> String {
    if unserved.is_empty() {
        return " (it exports no functions)".to_owned();
    }
    unserved
        .iter()
        .map(|u| format!("\n  {}: {}", u.function, u.reason))
        .collect()
}
