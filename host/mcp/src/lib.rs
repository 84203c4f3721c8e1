//! The MCP front end: serves a [`toolhost_toolbox::Host`]'s tools to agent
//! clients over stdio and streamable HTTP, on the official Rust SDK (rmcp).
//!
//! The protocol layer translates, it does not decide: a `tools/call` becomes
//! a [`toolhost_contract::ToolCall`] run through the session's pipeline, and
//! the [`toolhost_contract::ToolResult`] becomes a `CallToolResult`
//! (`structuredContent` is the validated value, `content` what render
//! produced, failures are `isError` results carrying the stable code). The
//! only protocol errors are the ones the spec calls for: an unknown method,
//! a malformed request, an unknown resource.
//!
//! Each client connection is its own session with its own pipeline (its own
//! fresh-baseline state, repeat check and call sequence); every session shares
//! the host's registry, runtime, artifact store and session log. `ask`
//! decisions go to the person at the client through `elicitation/create`
//! (or, from 2026-07-28, an `input_required` result); anything but an
//! explicit accept denies.
//!
//! A long call of a client that declared the tasks extension (SEP-2663)
//! becomes a task the client polls; its question is the task's
//! `input_required`. A request's W3C trace context (`_meta.traceparent`,
//! SEP-414) parents the spans of its call.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use toolhost_mcp::{Server, ServerOptions};
//! use toolhost_toolbox::{Host, HostConfig, embedded_default};
//! let host = Arc::new(Host::new(HostConfig::default())?);
//! host.load(&embedded_default(&std::env::current_dir()?)).await?;
//! Server::new(host, ServerOptions::default())?.serve_stdio().await?;
//! # Ok(()) }
//! ```

mod approve;
pub mod http;
pub mod metrics;
pub mod notices;
mod origin;
mod placement;
mod quota;
mod relay;
pub mod reload;
mod session;
mod stdio;
mod tasks;
mod trace;

pub use notices::{Notices, Severity};

/// The MCP protocol revisions `toolhost serve` speaks, newest first.
pub fn protocol_revisions() -> impl Iterator<Item = &'static str> {
    rmcp::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .rev()
        .map(|v| v.as_str())
}
pub use session::{Server, ServerOptions, Session};

/// Serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The transport failed (stdio closed badly, a socket could not bind).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The MCP session could not start.
    #[error("starting the MCP session: {0}")]
    Start(String),
    /// The HTTP options are unsafe or inconsistent.
    #[error("{0}")]
    Config(String),
}
