//! Advertisement: the model-facing projection of the visible tools.
//!
//! The projection is an explicit allow-list (name, description, input
//! schema; title, output schema and annotations where the format has them). Policy,
//! limits, bodies, sources and validators never leave the host. Order is
//! the registry's advertised order ([`Registry::visible`]), so the
//! serialized tool block is byte-identical from run to run, only grows at
//! its end, and a provider's prompt-cache prefix stays valid.
//!
//! Deferred tools (progressive discovery) are left out, except in the
//! Anthropic projection: its API defers them itself (`defer_loading`, and
//! its own BM25 tool search in place of the host's `search_tools`).

use crate::registry::{RegisteredTool, Registry};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use toolhost_contract::ToolDescriptor;

/// The Anthropic API's own tool search (BM25 over the deferred tools), as
/// its tool-search documentation names it.
pub const ANTHROPIC_TOOL_SEARCH: (&str, &str) =
    ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25");

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
        Format::Anthropic => &[
            "type",
            "name",
            "description",
            "input_schema",
            "defer_loading",
        ],
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
/// toolbox's mode decides), projected to `format`, in the advertised order.
pub fn schemas(registry: &Registry, agent: Option<&str>, format: Format) -> Vec<Value> {
    listing(registry, agent, format, |t| Cow::Borrowed(&t.descriptor))
}

/// As [`schemas`], as a host lists them that issues baseline `handles` or
/// not (see [`listed_descriptor`]).
pub fn schemas_listed(
    registry: &Registry,
    agent: Option<&str>,
    format: Format,
    handles: bool,
) -> Vec<Value> {
    listing(registry, agent, format, |t| listed_descriptor(t, handles))
}

/// `t` as a listing shows it: where the host issues baseline `handles`, a
/// tool that takes or returns them shows its `baseline` argument and its
/// `baselines` value ([`crate::baseline::advertised_descriptor`]), or
/// what it says it shows then ([`RegisteredTool::listed_with_handles`]);
/// else as declared.
pub fn listed_descriptor(t: &RegisteredTool, handles: bool) -> Cow<'_, ToolDescriptor> {
    match (&t.listed_with_handles, handles) {
        (_, false) => Cow::Borrowed(&t.descriptor),
        (Some(listed), true) => Cow::Borrowed(listed),
        (None, true) => crate::baseline::advertised_descriptor(&t.descriptor),
    }
}

/// `schemas` without the tools `reach` refuses: a caller is not shown
/// what it may not call.
pub fn within_reach(mut schemas: Vec<Value>, reach: Option<&dyn crate::Reach>) -> Vec<Value> {
    if let Some(reach) = reach {
        schemas.retain(|t| t["name"].as_str().is_some_and(|n| reach.allows(n)));
    }
    schemas
}

fn listing(
    registry: &Registry,
    agent: Option<&str>,
    format: Format,
    describe: impl Fn(&RegisteredTool) -> Cow<'_, ToolDescriptor>,
) -> Vec<Value> {
    let one = |t: &Arc<RegisteredTool>| project(&describe(t), format);
    let advertised = registry.advertised(agent);
    if format != Format::Anthropic {
        return advertised.iter().map(one).collect();
    }
    let deferred = registry.deferred(agent);
    if deferred.is_empty() {
        return advertised.iter().map(one).collect();
    }
    // The API searches the deferred tools itself: its search replaces the
    // host's, and the deferred tools follow the advertised ones (the
    // cached prefix is the same whatever is deferred after it).
    let mut out: Vec<Value> = advertised
        .iter()
        .filter(|t| t.descriptor.name != crate::discovery::SEARCH_TOOL)
        .map(one)
        .collect();
    out.push(json!({"type": ANTHROPIC_TOOL_SEARCH.0, "name": ANTHROPIC_TOOL_SEARCH.1}));
    out.extend(deferred.iter().map(|t| {
        let mut v = one(t);
        v["defer_loading"] = json!(true);
        v
    }));
    out
}
