//! One call in, one result out: the types every front end shares.

use crate::{ContentBlock, ErrorCode, FailureCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A tool call as the model emitted it: the arguments stay a raw string
/// until the pipeline parses them defensively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's call id; results pair with calls by it.
    pub call_id: String,
    /// The tool the model asked for.
    pub name: String,
    /// The raw arguments string, exactly as emitted.
    pub arguments: String,
    /// The agent making the call (selects per-agent tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The parent call, for calls made on behalf of another call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Who is calling, as the front end identified them (a bearer token's
    /// digest, an OAuth subject, `stdio`). Baseline handles are bound to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Where an earlier attempt of this call stopped to wait for a person's
    /// answer, as the host said with its `approval_pending` failure
    /// (`info.resume`): a script goes on from there instead of starting
    /// over. The host checks it belongs to this caller and this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// The W3C trace the call belongs to (32 hex digits): the client's,
    /// from its request's `traceparent`, or the one the host started.
    /// Recorded in the session log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl ToolCall {
    /// A call with no agent and no parent.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            agent: None,
            parent: None,
            principal: None,
            resume: None,
            trace_id: None,
        }
    }
}

/// The pipeline stages, in order. A trace names the stage that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Resolving the tool name.
    Lookup,
    /// Parsing the raw arguments.
    Parse,
    /// Validating arguments against the input schema.
    Schema,
    /// Checking declared path arguments (grants, create/overwrite/patch, baselines).
    Path,
    /// Checking declared URL arguments against the network allow-list.
    Network,
    /// Refusing the identical call that just failed.
    Repeat,
    /// Pre-execute listeners (the policy's decision is the first).
    PreExecute,
    /// The one-shot approval on `ask`.
    Approval,
    /// Deny-only guards.
    Guard,
    /// Around-dispatch wrappers and the tool body in the sandbox.
    Dispatch,
    /// Validating the value against the output schema.
    Output,
    /// Committing the call's staged file effects (all or nothing), after
    /// approving them when the policy asks for effects-first approval.
    Commit,
    /// Rendering the value into content.
    Render,
    /// Post-execute listeners.
    PostExecute,
    /// Bounding the content.
    Bound,
}

impl Stage {
    /// Its name, as traces and spans spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Lookup => "lookup",
            Stage::Parse => "parse",
            Stage::Schema => "schema",
            Stage::Path => "path",
            Stage::Network => "network",
            Stage::Repeat => "repeat",
            Stage::PreExecute => "pre_execute",
            Stage::Approval => "approval",
            Stage::Guard => "guard",
            Stage::Dispatch => "dispatch",
            Stage::Output => "output",
            Stage::Commit => "commit",
            Stage::Render => "render",
            Stage::PostExecute => "post_execute",
            Stage::Bound => "bound",
        }
    }
}

/// The `tracing` target of the spans a call's trace is made of (the front
/// end's request, admission, each stage, the body, a worker): what an
/// OpenTelemetry exporter subscribes to. Their fields are names, sizes,
/// codes and hashes, never an argument's or a result's value.
pub const SPAN_TARGET: &str = "toolhost::span";

/// What one stage said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageVerdict {
    /// Checked and passed.
    Pass,
    /// Allowed.
    Allow,
    /// Asked for approval.
    Ask,
    /// Approval granted.
    Approved,
    /// Abstained (guards).
    Abstain,
    /// Denied or failed the call.
    Deny,
    /// Replaced content (post-execute) or truncated it (bound).
    Modify,
}

/// One line of a decision trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// The stage.
    pub stage: Stage,
    /// What it said.
    pub verdict: StageVerdict,
    /// Which listener, guard, wrapper or policy rule spoke (the pipeline's
    /// own stages name themselves with static strings, so most entries
    /// allocate nothing here).
    pub by: Cow<'static, str>,
    /// A short reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Trace entries of a call that passes every stage.
const TYPICAL_TRACE_LEN: usize = 16;

/// The ordered record of what each stage decided: "why was this denied?"
/// has an answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionTrace {
    /// Entries in pipeline order.
    pub entries: Vec<TraceEntry>,
}

impl DecisionTrace {
    /// Records one verdict.
    pub fn push(
        &mut self,
        stage: Stage,
        verdict: StageVerdict,
        by: impl Into<Cow<'static, str>>,
        note: Option<String>,
    ) {
        if self.entries.capacity() == 0 {
            // A call passes about a dozen stages: one allocation for them all.
            self.entries.reserve(TYPICAL_TRACE_LEN);
        }
        self.entries.push(TraceEntry {
            stage,
            verdict,
            by: by.into(),
            note,
        });
    }

    /// The entry that denied the call, if any.
    pub fn denial(&self) -> Option<&TraceEntry> {
        self.entries
            .iter()
            .find(|e| e.verdict == StageVerdict::Deny)
    }
}

/// Where the time went, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// From the call entering the pipeline to the result leaving it.
    pub total_us: u64,
    /// Inside the around-dispatch wrappers (sandbox set-up and tool body).
    pub dispatch_us: u64,
}

/// Host-side facts about a call: the trace, timings and what wrappers and
/// listeners added. Never model content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// The decision trace.
    pub trace: DecisionTrace,
    /// Timings.
    pub timings: Timings,
    /// Extra facts (metrics, truncation, attempts, ...), keyed by who added them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// What the tool reported while it ran (progress, log messages), in
    /// order: what the policy let through, whether or not a client heard it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<crate::ContextEvent>,
}

/// The error part of a failed call: a stable code and a message the model
/// can act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFailure {
    /// Stable code.
    pub code: ErrorCode,
    /// Model-readable message.
    pub message: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Value>,
}

impl ToolFailure {
    /// A host failure.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            code: code.into(),
            message: message.into(),
            info: None,
        }
    }

    /// Adds details.
    pub fn with_info(mut self, info: Value) -> ToolFailure {
        self.info = Some(info);
        self
    }
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSuccess {
    /// The canonical value, validated against the output schema.
    /// Execution-local: never written to the session log (its hash is).
    pub value: Value,
    /// What the model reads.
    pub content: Vec<ContentBlock>,
    /// Host-side facts.
    pub meta: Meta,
    /// Extra context a post-execute listener attached for the model.
    pub additional_context: Vec<String>,
    /// Whether this result ends the agent's turn.
    pub concludes_turn: bool,
}

/// The outcome of one call. There is no third case: every failure, from an
/// unknown tool to a trapping guest, is a [`ToolResult::Failure`].
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    /// The call succeeded.
    Success(ToolSuccess),
    /// The call failed; `content` tells the model why.
    Failure {
        /// The error.
        error: ToolFailure,
        /// What the model reads.
        content: Vec<ContentBlock>,
        /// Host-side facts.
        meta: Meta,
    },
}

impl ToolResult {
    /// A failure whose content is its message.
    pub fn failure(code: impl Into<ErrorCode>, message: impl Into<String>) -> ToolResult {
        ToolResult::from_failure(ToolFailure::new(code, message))
    }

    /// A failure whose content is rendered from the error.
    pub fn from_failure(error: ToolFailure) -> ToolResult {
        let content = vec![ContentBlock::text(format!(
            "Error [{}]: {}",
            error.code, error.message
        ))];
        ToolResult::Failure {
            error,
            content,
            meta: Meta::default(),
        }
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        matches!(self, ToolResult::Failure { .. })
    }

    /// The error, when failed.
    pub fn error(&self) -> Option<&ToolFailure> {
        match self {
            ToolResult::Failure { error, .. } => Some(error),
            ToolResult::Success(_) => None,
        }
    }

    /// The error code as a string, when failed.
    pub fn code(&self) -> Option<&str> {
        self.error().map(|e| e.code.as_str())
    }

    /// Whether the call failed with this host code.
    pub fn failed_with(&self, code: FailureCode) -> bool {
        self.error()
            .is_some_and(|e| e.code == ErrorCode::Host(code))
    }

    /// The value, when succeeded.
    pub fn value(&self) -> Option<&Value> {
        match self {
            ToolResult::Success(s) => Some(&s.value),
            ToolResult::Failure { .. } => None,
        }
    }

    /// What the model reads.
    pub fn content(&self) -> &[ContentBlock] {
        match self {
            ToolResult::Success(s) => &s.content,
            ToolResult::Failure { content, .. } => content,
        }
    }

    /// Mutable content (for the bounding stage).
    pub fn content_mut(&mut self) -> &mut Vec<ContentBlock> {
        match self {
            ToolResult::Success(s) => &mut s.content,
            ToolResult::Failure { content, .. } => content,
        }
    }

    /// Host-side facts.
    pub fn meta(&self) -> &Meta {
        match self {
            ToolResult::Success(s) => &s.meta,
            ToolResult::Failure { meta, .. } => meta,
        }
    }

    /// Mutable host-side facts.
    pub fn meta_mut(&mut self) -> &mut Meta {
        match self {
            ToolResult::Success(s) => &mut s.meta,
            ToolResult::Failure { meta, .. } => meta,
        }
    }

    /// The content's text blocks joined by blank lines.
    pub fn text(&self) -> String {
        self.content()
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The wire form: `{"isError": false, "value", "content", "meta", ...}` or
/// `{"isError": true, "error", "content", "meta"}`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ToolFailure>,
    content: Vec<ContentBlock>,
    #[serde(default)]
    meta: Meta,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    additional_context: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    concludes_turn: bool,
}

impl Serialize for ToolResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = match self.clone() {
            ToolResult::Success(ok) => Wire {
                is_error: false,
                value: Some(ok.value),
                error: None,
                content: ok.content,
                meta: ok.meta,
                additional_context: ok.additional_context,
                concludes_turn: ok.concludes_turn,
            },
            ToolResult::Failure {
                error,
                content,
                meta,
            } => Wire {
                is_error: true,
                value: None,
                error: Some(error),
                content,
                meta,
                additional_context: vec![],
                concludes_turn: false,
            },
        };
        wire.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        if w.is_error {
            let error = w
                .error
                .ok_or_else(|| serde::de::Error::missing_field("error"))?;
            Ok(ToolResult::Failure {
                error,
                content: w.content,
                meta: w.meta,
            })
        } else {
            Ok(ToolResult::Success(ToolSuccess {
                value: w
                    .value
                    .ok_or_else(|| serde::de::Error::missing_field("value"))?,
                content: w.content,
                meta: w.meta,
                additional_context: w.additional_context,
                concludes_turn: w.concludes_turn,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_form_round_trips() {
        let ok = ToolResult::Success(ToolSuccess {
            value: json!({"n": 1}),
            content: vec![ContentBlock::text("one")],
            meta: Meta::default(),
            additional_context: vec![],
            concludes_turn: false,
        });
        let v = serde_json::to_value(&ok).unwrap();
        assert_eq!(v["isError"], json!(false));
        assert_eq!(v["value"], json!({"n": 1}));
        assert!(v.get("error").is_none());
        let back: ToolResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, ok);

        let bad = ToolResult::failure(FailureCode::Denied, "no");
        let v = serde_json::to_value(&bad).unwrap();
        assert_eq!(v["isError"], json!(true));
        assert_eq!(v["error"]["code"], json!("denied"));
        assert!(v.get("value").is_none());
        assert_eq!(serde_json::from_value::<ToolResult>(v).unwrap(), bad);
    }
}
