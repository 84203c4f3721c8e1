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

mod canonical;
pub mod clock;
mod code;
mod content;
mod context;
mod descriptor;
mod event;
mod result;
pub mod unique;
pub mod visible;

pub use canonical::{HashWriter, canonical_json, canonical_sha256};
pub use code::{ErrorCode, FailureCode};
pub use content::{ContentBlock, EmbeddedResource, ResourceContents};
pub use context::{ContextEvent, ContextSink, LogLevel};
pub use descriptor::{
    Annotations, DEFAULT_MAX_DESCRIPTION_BYTES, DEFAULT_MAX_SCHEMA_BYTES, DEFAULT_MAX_TOOLS,
    DEFAULT_MAX_TOTAL_BYTES, DeclaredSizes, DescriptorError, DescriptorLimits, PathAccess,
    PathParam, ToolDescriptor, valid_name,
};
pub use event::{SessionEvent, ToolCallEvent, ToolResultEvent};
pub use result::{
    DecisionTrace, Meta, SPAN_TARGET, Stage, StageVerdict, Timings, ToolCall, ToolFailure,
    ToolResult, ToolSuccess, TraceEntry,
};

/// Lowercase hex SHA-256 of `bytes`, the one hash used for values, baselines
/// and component ids.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Whether `text` is exactly `digits` lowercase hex digits, as [`hex`]
/// writes them (ids and digests checked before they are used as names).
pub fn is_hex(text: &str, digits: usize) -> bool {
    text.len() == digits
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The `N` bytes `text` is the hex of (as [`hex`] writes them); `None`
/// when it is not `2 * N` hex digits.
pub fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn is_hex_takes_lowercase_digits_of_the_length_only() {
        assert!(super::is_hex("00ff", 4));
        assert!(!super::is_hex("00FF", 4));
        assert!(!super::is_hex("00f", 4));
        assert!(!super::is_hex("+0ff", 4));
        assert!(!super::is_hex("00fg", 4));
    }

    #[test]
    fn hex_is_lowercase_and_padded() {
        assert_eq!(super::hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn unhex_reads_what_hex_writes_and_nothing_else() {
        let bytes = [0x00, 0x0f, 0xa5, 0xff];
        assert_eq!(super::unhex::<4>(&super::hex(&bytes)), Some(bytes));
        assert_eq!(super::unhex::<4>("000fa5f"), None, "too short");
        assert_eq!(super::unhex::<4>("000fa5ff00"), None, "too long");
        assert_eq!(super::unhex::<4>("000fa5fg"), None, "not hex");
        assert_eq!(super::unhex::<2>("é0a"), None, "not ASCII");
    }
}
