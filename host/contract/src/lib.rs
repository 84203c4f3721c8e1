//! The tool-calling contract, as types.
//!
//! Every toolhost crate and every front end (CLI, MCP server, tests) speaks
//! these types: what a tool declares ([`ToolDescriptor`]), what one call is
//! ([`ToolCall`]), how it ends ([`ToolResult`], always a value: every failure is
//! normalized into a [`ToolFailure`] with a stable [`FailureCode`]), and what is
//! written to the durable session log ([`SessionEvent`]).
//!
//! The key design decision, from the contract: a tool's canonical **value**
//! (typed JSON, validated against the tool's output schema, execution-local)
//! is kept apart from the **content** the model reads (rendered from the value
//! by separate code, durable). Neither side parses the other's format.
//!
//! ```
//! use toolhost_contract::{FailureCode, ToolResult};
//! let r = ToolResult::failure(FailureCode::UnknownTool, "no tool named `rd`");
//! assert!(r.is_error());
//! assert_eq!(r.error().map(|e| e.code.as_str()), Some("unknown_tool"));
//! ```
//!
//! This crate has no wasm or I/O dependencies; the only clock read in the core
//! lives in [`clock::SystemClock`].

pub mod clock;
mod code;
mod content;
mod descriptor;
mod event;
mod result;

pub use code::{ErrorCode, FailureCode};
pub use content::ContentBlock;
pub use descriptor::{
    Annotations, DescriptorError, PathAccess, PathParam, ToolDescriptor, valid_name,
};
pub use event::{SessionEvent, ToolCallEvent, ToolResultEvent};
pub use result::{
    DecisionTrace, Meta, Stage, StageVerdict, Timings, ToolCall, ToolFailure, ToolResult,
    ToolSuccess, TraceEntry,
};

/// Lowercase hex SHA-256 of `bytes`, the one hash used for values, baselines
/// and component ids.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}
