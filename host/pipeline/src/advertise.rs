//! Advertisement: the model-facing projection of the visible tools.
//!
//! The projection is an explicit allow-list (name, description, input
//! schema; title, output schema and annotations where the format has them). Policy,
//! limits, bodies, sources and validators never leave the host. Order is by
//! name, so the serialized tool block is byte-identical from run to run and
//! a provider's prompt-cache prefix stays valid.

use crate::registry::Registry;
use serde_json::{Value, json};
use toolhost_contract::ToolDescriptor;

/// A target format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// MCP `tools/list` entries.
    Mcp,
    /// OpenAI function calling (`tools` of chat completions).
    OpenAi,
    /// Anthropic tool use (`tools` of messages).
    Anthropic,
}

/// Keys each format may carry at the top level of one tool entry.
pub fn allowed_keys(format: Format) -> &'static [&'static str] {
    match format {
        Format::Mcp => &[
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ],
        Format::OpenAi => &["type", "function"],
        Format::Anthropic => &["name", "description", "input_schema"],
    }
}

/// One tool in one format.
pub fn project(d: &ToolDescriptor, format: Format) -> Value {
    match format {
        Format::Mcp => {
            let mut v = json!({
                "name": d.name,
                "description": d.description,
                "inputSchema": d.input_schema,
                "outputSchema": d.output_schema,
                "annotations": {
                    "readOnlyHint": d.annotations.read_only,
                    "destructiveHint": d.annotations.destructive,
                    "idempotentHint": d.annotations.idempotent,
                    "openWorldHint": d.annotations.open_world,
                },
            });
            if let Some(title) = &d.title {
                v["title"] = json!(title);
            }
            v
        }
        Format::OpenAi => json!({
            "type": "function",
            "function": {
                "name": d.name,
                "description": d.description,
                "parameters": d.input_schema,
            },
        }),
        Format::Anthropic => json!({
            "name": d.name,
            "description": d.description,
            "input_schema": d.input_schema,
        }),
    }
}

/// The tools advertised to `agent` (see [`Registry::advertised`]: the
/// toolbox's mode decides), projected to `format`, sorted by name.
pub fn schemas(registry: &Registry, agent: Option<&str>, format: Format) -> Vec<Value> {
    registry
        .advertised(agent)
        .iter()
        .map(|t| project(&t.descriptor, format))
        .collect()
}

/// As [`schemas`], for a host that issues baseline handles: the tools that
/// take or return them show the `baseline` argument and the `baselines`
/// value ([`crate::baseline::advertised_descriptor`]).
pub fn schemas_with_handles(
    registry: &Registry,
    agent: Option<&str>,
    format: Format,
) -> Vec<Value> {
    registry
        .advertised(agent)
        .iter()
        .map(|t| {
            project(
                &crate::baseline::advertised_descriptor(&t.descriptor),
                format,
            )
        })
        .collect()
}
