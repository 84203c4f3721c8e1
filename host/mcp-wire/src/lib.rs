//! Translation between toolhost's contract types and MCP's wire shapes:
//! a `tools/call` request becomes a [`ToolCall`], a [`ToolResult`] becomes a
//! `CallToolResult`, the advertised tools become `tools/list` pages, an
//! artifact URI becomes a page of its text. Nothing here decides anything:
//! every decision is the pipeline's, so the CLI, the server and replay give
//! the same answer for the same call.
//!
//! A crate of its own, apart from the server (`toolhost-mcp`), because it
//! handles every byte a client sends before the pipeline sees it: it builds
//! without the sandbox and is fuzzed with rmcp's own decoding of JSON-RPC
//! messages (`tests/fuzz`).
//!
//! ```
//! use rmcp::model::CallToolRequestParams;
//! let params: CallToolRequestParams =
//!     serde_json::from_str(r#"{"name":"read","arguments":{"path":"a.rs"}}"#).unwrap();
//! let call = toolhost_mcp_wire::tool_call("7", params);
//! assert_eq!((call.call_id.as_str(), call.arguments.as_str()), ("mcp-7", r#"{"path":"a.rs"}"#));
//! ```

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorData, ListToolsResult, ReadResourceResult,
};
use serde_json::{Value, json};
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_stages::bound::ARTIFACT_SCHEME;

/// Tools per `tools/list` page.
pub const TOOLS_PAGE: usize = 100;

/// Default bytes of an artifact per `resources/read` page.
pub const ARTIFACT_PAGE: usize = 32 * 1024;

/// A `tools/call` request as the pipeline's [`ToolCall`]; `request_id` is the
/// JSON-RPC id as text. The arguments go on as the client sent them (absent
/// = empty): the pipeline parses them defensively and validates them
/// against the tool's schema.
pub fn tool_call(request_id: &str, params: CallToolRequestParams) -> ToolCall {
    let arguments = params
        .arguments
        .map(|a| Value::Object(a).to_string())
        .unwrap_or_default();
    ToolCall::new(format!("mcp-{request_id}"), params.name, arguments)
}

/// A pipeline result as an MCP `CallToolResult`. Success: `structuredContent`
/// is the validated value, `content` the rendered blocks. Failure: `isError`,
/// the error text (`Error [code]: message`) as content, and the stable code
/// in `_meta.toolhost.error`. `object_only`: the negotiated revision requires
/// `structuredContent` to be an object (before 2026-07-28), so another value
/// is left out (its rendering is in `content`).
pub fn call_result(result: &ToolResult, object_only: bool) -> CallToolResult {
    let meta = result.meta();
    let mut toolhost = json!({
        "trace": meta.trace,
        "timings": meta.timings,
    });
    if !meta.extra.is_empty() {
        toolhost["extra"] = Value::Object(meta.extra.clone());
    }
    let (structured, is_error) = match result {
        ToolResult::Success(s) => {
            let keep = !object_only || s.value.is_object();
            (keep.then(|| s.value.clone()), false)
        }
        ToolResult::Failure { error, .. } => {
            // Not in `structuredContent`: clients validate that against the
            // tool's output schema even on errors (the TypeScript SDK does).
            toolhost["error"] = json!(error);
            (None, true)
        }
    };
    let mut wire = json!({
        "content": result.content(),
        "isError": is_error,
        "_meta": {"toolhost": toolhost},
    });
    if let Some(s) = structured {
        wire["structuredContent"] = s;
    }
    if let ToolResult::Success(s) = result {
        // Context a post-execute listener attached is for the model too.
        if !s.additional_context.is_empty()
            && let Some(blocks) = wire["content"].as_array_mut()
        {
            for text in &s.additional_context {
                blocks.push(json!({"type": "text", "text": text}));
            }
        }
    }
    serde_json::from_value(wire).unwrap_or_else(|e| {
        CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
            "Error [host_error]: the result could not be encoded: {e}"
        ))])
    })
}

/// One page of the MCP projection.
pub fn tools_page(all: Vec<Value>, cursor: Option<&str>) -> Result<ListToolsResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= all.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor `{c}`"), None))?,
    };
    let end = (start + TOOLS_PAGE).min(all.len());
    let mut wire = json!({"tools": &all[start..end]});
    if end < all.len() {
        wire["nextCursor"] = json!(end.to_string());
    }
    serde_json::from_value(wire)
        .map_err(|e| ErrorData::internal_error(format!("tool list encoding: {e}"), None))
}

/// Where in an artifact a `resources/read` starts and how much it reads:
/// `toolhost://artifacts/ID?offset=N&limit=M` (both optional).
pub fn artifact_request(uri: &str) -> Option<(String, usize, usize)> {
    let rest = uri.strip_prefix(ARTIFACT_SCHEME)?;
    let (id, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (mut offset, mut limit) = (0, ARTIFACT_PAGE);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=')?;
        let n: usize = v.parse().ok()?;
        match k {
            "offset" => offset = n,
            "limit" => limit = n.clamp(1, 1 << 20),
            _ => return None,
        }
    }
    (!id.is_empty()).then(|| (id.to_owned(), offset, limit))
}

/// A page of an artifact as a `ReadResourceResult`.
pub fn artifact_page(
    uri: &str,
    id: &str,
    offset: usize,
    text: String,
    total: usize,
) -> Result<ReadResourceResult, ErrorData> {
    let next = offset + text.len();
    let mut meta = json!({"totalBytes": total, "offset": offset});
    if next < total {
        meta["nextUri"] = json!(format!("{ARTIFACT_SCHEME}{id}?offset={next}"));
    }
    serde_json::from_value(json!({
        "contents": [{
            "uri": uri,
            "mimeType": "text/plain",
            "text": text,
            "_meta": {"toolhost": meta},
        }]
    }))
    .map_err(|e| ErrorData::internal_error(format!("resource encoding: {e}"), None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::FailureCode;

    #[test]
    fn failures_carry_the_code_everywhere() {
        let r = ToolResult::failure(FailureCode::PathDenied, "outside the workspace");
        let v = serde_json::to_value(call_result(&r, true)).expect("serializes");
        assert_eq!(v["isError"], true);
        assert!(v.get("structuredContent").is_none());
        assert_eq!(v["_meta"]["toolhost"]["error"]["code"], "path_denied");
        assert!(
            v["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("[path_denied]"))
        );
    }

    #[test]
    fn artifact_uris_page() {
        assert_eq!(
            artifact_request("toolhost://artifacts/a-1?offset=10&limit=5"),
            Some(("a-1".into(), 10, 5))
        );
        assert_eq!(
            artifact_request("toolhost://artifacts/a-1"),
            Some(("a-1".into(), 0, ARTIFACT_PAGE))
        );
        assert_eq!(artifact_request("toolhost://artifacts/a?x=1"), None);
        assert_eq!(artifact_request("toolhost://artifacts/"), None);
        assert_eq!(artifact_request("file:///etc/passwd"), None);
    }

    #[test]
    fn tools_are_paged() {
        let all: Vec<Value> = (0..250)
            .map(|i| json!({"name": format!("t{i:03}"), "inputSchema": {"type": "object"}}))
            .collect();
        let first = tools_page(all.clone(), None).expect("page");
        assert_eq!(first.tools.len(), 100);
        assert_eq!(first.next_cursor.as_deref(), Some("100"));
        let last = tools_page(all.clone(), Some("200")).expect("page");
        assert_eq!(last.tools.len(), 50);
        assert!(last.next_cursor.is_none());
        assert!(tools_page(all, Some("999")).is_err());
    }
}
