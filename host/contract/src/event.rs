//! The durable session record: one JSON object per line.

use crate::{ContentBlock, DecisionTrace, Timings, ToolResult};
use serde::{Deserialize, Serialize};

/// The event written before anything of a call runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    /// Wall-clock time, ms since the epoch (from the injected clock).
    pub ts_ms: u64,
    /// Pairs this event with its result.
    pub call_id: String,
    /// The opaque execution token assigned to this call.
    pub token: String,
    /// The tool asked for.
    pub tool: String,
    /// The raw arguments, exactly as emitted.
    pub arguments: String,
    /// The agent, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The parent call, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The digest of the descriptor the tool was served with
    /// ([`crate::ToolDescriptor::digest`]; absent when no such tool was
    /// served): which description and schemas the model had read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descriptor: Option<String>,
    /// Who made the call, as the front end identified them (a bearer
    /// token's digest, an OAuth subject, `stdio`); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The W3C trace the call belongs to, when there is one: its spans
    /// are found by it in the trace backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// The event written when a call has its final result. The value itself is
/// execution-local: only its hash is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent {
    /// Wall-clock time, ms since the epoch.
    pub ts_ms: u64,
    /// Pairs this event with its call.
    pub call_id: String,
    /// The execution token.
    pub token: String,
    /// The tool.
    pub tool: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// The error code, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What the model read.
    pub content: Vec<ContentBlock>,
    /// SHA-256 of the canonical value's JSON, when succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_sha256: Option<String>,
    /// Which stages decided what.
    pub trace: DecisionTrace,
    /// Timings.
    pub timings: Timings,
    /// The file effects the call committed (paths, kinds, hashes and sizes;
    /// never contents), as in the result's `meta.effects`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effects: Option<serde_json::Value>,
    /// What the tool reported while it ran (progress, log messages), as in
    /// the result's `meta.context`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<crate::ContextEvent>,
}

impl ToolResultEvent {
    /// The durable record of `result`.
    pub fn from_result(
        ts_ms: u64,
        call_id: &str,
        token: &str,
        tool: &str,
        result: &ToolResult,
    ) -> ToolResultEvent {
        ToolResultEvent {
            ts_ms,
            call_id: call_id.to_owned(),
            token: token.to_owned(),
            tool: tool.to_owned(),
            is_error: result.is_error(),
            code: result.code().map(str::to_owned),
            content: result.content().to_vec(),
            value_sha256: result
                .value()
                .map(|v| crate::sha256_hex(v.to_string().as_bytes())),
            trace: result.meta().trace.clone(),
            timings: result.meta().timings,
            effects: result.meta().extra.get("effects").cloned(),
            context: result.meta().context.clone(),
        }
    }
}

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SessionEvent {
    /// A call entered the pipeline (written before anything runs).
    #[serde(rename = "tool/call")]
    ToolCall(ToolCallEvent),
    /// A call's final result.
    #[serde(rename = "tool/result")]
    ToolResult(ToolResultEvent),
}

impl SessionEvent {
    /// When it was written, ms since the epoch.
    pub fn ts_ms(&self) -> u64 {
        match self {
            SessionEvent::ToolCall(e) => e.ts_ms,
            SessionEvent::ToolResult(e) => e.ts_ms,
        }
    }

    /// The call id the event belongs to.
    pub fn call_id(&self) -> &str {
        match self {
            SessionEvent::ToolCall(e) => &e.call_id,
            SessionEvent::ToolResult(e) => &e.call_id,
        }
    }
}
