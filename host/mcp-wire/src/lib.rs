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
    CacheScope, CallToolRequestParams, CallToolResult, ErrorData, ListToolsResult, ProtocolVersion,
    ReadResourceResult, Tool,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use toolhost_contract::{
    ContentBlock, DecisionTrace, Meta, Timings, ToolCall, ToolFailure, ToolResult,
};
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

/// The MCP revisions toolhost speaks, by what their translation differs in.
/// A new revision is a new variant here, with its translation, and the
/// server picks it from the negotiated version ([`Revision::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2024-11-05 through 2025-11-25: a session per connection; an `ask`
    /// is put to the user with `elicitation/create` while the call waits;
    /// `structuredContent` must be an object.
    Sessions,
    /// 2026-07-28 and later: each request stands alone; an `ask` ends the
    /// request `input_required` and the answer comes with the call again;
    /// any JSON value may be `structuredContent`.
    Stateless,
}

impl Revision {
    /// The revision a request came under (no version: the oldest rules).
    pub fn of(version: Option<&ProtocolVersion>) -> Revision {
        match version {
            Some(v) if v.as_str() >= ProtocolVersion::V_2026_07_28.as_str() => Revision::Stateless,
            _ => Revision::Sessions,
        }
    }

    /// Whether `structuredContent` may only be an object: another value is
    /// left out (its rendering is in `content`).
    fn object_only(self) -> bool {
        self == Revision::Sessions
    }

    /// `tools/list` entries as this revision allows them. Before
    /// 2026-07-28 an `outputSchema` must describe an object, and a client
    /// that reads one expects every result to carry `structuredContent`
    /// (the TypeScript SDK refuses the listing otherwise, the Python SDK
    /// the call): a tool whose value is not an object (a plain
    /// component's function returning a string) is listed without it,
    /// and its value reaches such a client as its rendering.
    pub fn listing(self, mut tools: Vec<Value>) -> Vec<Value> {
        if self.object_only() {
            for t in &mut tools {
                let Some(entry) = t.as_object_mut() else {
                    continue;
                };
                let object = entry
                    .get("outputSchema")
                    .is_some_and(|s| s.get("type").and_then(Value::as_str) == Some("object"));
                if !object {
                    entry.remove("outputSchema");
                }
            }
        }
        tools
    }

    /// A pipeline result as an MCP `CallToolResult`. Success:
    /// `structuredContent` is the validated value, `content` the rendered
    /// blocks. Failure: `isError`, the error text (`Error [code]: message`)
    /// as content, and the stable code in `_meta.toolhost.error`.
    pub fn call_result(self, result: ToolResult) -> CallToolResult {
        let (mut wire, meta, error) = call_result_parts(result, self.object_only());
        let toolhost = to_value(ToolhostMeta::of(&meta, error.as_ref()));
        let mut outer = Map::with_capacity(1);
        outer.insert("toolhost".into(), toolhost);
        wire.meta = Some(rmcp::model::MetaObject(outer));
        wire
    }

    /// [`call_result`](Self::call_result) without its `_meta`, and the
    /// `_meta.toolhost` it would carry, as JSON text: for a transport that
    /// writes the response itself, which then writes the trace straight from
    /// its entries (building a `Value` first, for rmcp's `_meta` map, is work
    /// a small call notices). The same JSON, key for key.
    pub fn call_result_raw(self, result: ToolResult) -> (CallToolResult, Box<RawValue>) {
        let (wire, meta, error) = call_result_parts(result, self.object_only());
        let toolhost = ToolhostMeta::of(&meta, error.as_ref());
        // The contract's types always serialize (`null` if one did not).
        let raw = serde_json::value::to_raw_value(&toolhost).unwrap_or_default();
        (wire, raw)
    }
}

/// `_meta.toolhost`, for both routes: the trace, the timings, the extra
/// facts (when there are any) and a failure's error.
#[derive(serde::Serialize)]
struct ToolhostMeta<'a> {
    trace: &'a DecisionTrace,
    timings: Timings,
    #[serde(skip_serializing_if = "Map::is_empty")]
    extra: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ToolFailure>,
}

impl<'a> ToolhostMeta<'a> {
    fn of(meta: &'a Meta, error: Option<&'a ToolFailure>) -> Self {
        ToolhostMeta {
            trace: &meta.trace,
            timings: meta.timings,
            extra: &meta.extra,
            error,
        }
    }
}

/// A result's content and value on the wire, and the facts and failure
/// that go into its `_meta`.
fn call_result_parts(
    result: ToolResult,
    object_only: bool,
) -> (CallToolResult, Meta, Option<ToolFailure>) {
    // Built field by field: going through a JSON value and rmcp's decoder
    // cost about as much as the tool call itself. Taken by value, so the
    // value, the content and the facts move onto the wire (a tool's text is
    // often both its value and its content: two copies saved).
    let (meta, content, success) = match result {
        ToolResult::Success(s) => (s.meta, s.content, Ok((s.value, s.additional_context))),
        ToolResult::Failure {
            error,
            content,
            meta,
        } => (meta, content, Err(error)),
    };
    let mut content: Vec<rmcp::model::ContentBlock> = content.into_iter().map(wire_block).collect();
    match success {
        Ok((value, additional_context)) => {
            // Context a post-execute listener attached is for the model too.
            content.extend(
                additional_context
                    .into_iter()
                    .map(rmcp::model::ContentBlock::text),
            );
            let mut wire = CallToolResult::success(content);
            if !object_only || value.is_object() {
                wire.structured_content = Some(value);
            }
            (wire, meta, None)
        }
        // Not in `structuredContent`: clients validate that against the
        // tool's output schema even on errors (the TypeScript SDK does).
        Err(error) => (CallToolResult::error(content), meta, Some(error)),
    }
}

/// A value as JSON (the contract's types always serialize; `null` if one did not).
fn to_value(v: impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A content block as MCP's.
fn wire_block(b: ContentBlock) -> rmcp::model::ContentBlock {
    match b {
        ContentBlock::Text { text } => rmcp::model::ContentBlock::text(text),
        ContentBlock::Image { data, mime_type } => {
            rmcp::model::ContentBlock::image(data, mime_type)
        }
        ContentBlock::ResourceLink {
            uri,
            name,
            mime_type,
            description,
        } => {
            let mut link = rmcp::model::Resource::new(uri, name);
            link.mime_type = mime_type;
            link.description = description;
            rmcp::model::ContentBlock::resource_link(link)
        }
        ContentBlock::Audio { data, mime_type } => {
            rmcp::model::ContentBlock::audio(data, mime_type)
        }
        ContentBlock::Resource { resource } => {
            use rmcp::model::ResourceContents as R;
            use toolhost_contract::ResourceContents as C;
            let mut contents = match resource.contents {
                C::Text(text) => R::text(text, resource.uri),
                C::Blob(blob) => R::blob(blob, resource.uri),
            };
            if let R::TextResourceContents { mime_type: m, .. }
            | R::BlobResourceContents { mime_type: m, .. } = &mut contents
            {
                *m = resource.mime_type;
            }
            rmcp::model::ContentBlock::resource(contents)
        }
    }
}

/// One page of the MCP projection, as a complete result (`resultType:
/// "complete"`, which every result under 2026-07-28 must carry: a result
/// decoded from JSON without it would be sent without it).
///
/// Caching (2026-07-28): the list may change at any time (hot reload,
/// components still compiling), so it is stale at once (`ttlMs: 0`), and
/// it is kept per caller (`cacheScope: "private"`).
pub fn tools_page(mut all: Vec<Value>, cursor: Option<&str>) -> Result<ListToolsResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= all.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor `{c}`"), None))?,
    };
    let end = (start + TOOLS_PAGE).min(all.len());
    let more = end < all.len();
    let tools = all
        .drain(start..end)
        .map(serde_json::from_value::<Tool>)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ErrorData::internal_error(format!("tool list encoding: {e}"), None))?;
    let mut page = ListToolsResult::with_all_items(tools)
        .with_ttl_ms(0)
        .with_cache_scope(CacheScope::Private);
    if more {
        page.next_cursor = Some(end.to_string());
    }
    Ok(page)
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

/// How long a client may keep a page of an artifact: an artifact's text
/// never changes (its id names one result), so an hour.
pub const ARTIFACT_TTL_MS: u64 = 60 * 60 * 1000;

/// A page of an artifact as a complete `ReadResourceResult`. Cacheable for
/// [`ARTIFACT_TTL_MS`], by its caller only (`private`: it is one caller's
/// result).
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
    let contents = serde_json::from_value(json!({
        "uri": uri,
        "mimeType": "text/plain",
        "text": text,
        "_meta": {"toolhost": meta},
    }))
    .map_err(|e| ErrorData::internal_error(format!("resource encoding: {e}"), None))?;
    Ok(ReadResourceResult::new(vec![contents])
        .with_ttl_ms(ARTIFACT_TTL_MS)
        .with_cache_scope(CacheScope::Private))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::FailureCode;

    #[test]
    fn failures_carry_the_code_everywhere() {
        let r = ToolResult::failure(FailureCode::PathDenied, "outside the workspace");
        let v = serde_json::to_value(Revision::Sessions.call_result(r)).expect("serializes");
        assert_eq!(v["isError"], true);
        assert!(v.get("structuredContent").is_none());
        assert_eq!(v["_meta"]["toolhost"]["error"]["code"], "path_denied");
        assert!(
            v["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("[path_denied]"))
        );
    }

    /// What `call_result` built before it built the result field by field:
    /// the same JSON, through rmcp's decoder.
    fn through_json(result: &ToolResult, object_only: bool) -> Value {
        let meta = result.meta();
        let mut toolhost = json!({"trace": meta.trace, "timings": meta.timings});
        if !meta.extra.is_empty() {
            toolhost["extra"] = Value::Object(meta.extra.clone());
        }
        let (structured, is_error) = match result {
            ToolResult::Success(s) => {
                let keep = !object_only || s.value.is_object();
                (keep.then(|| s.value.clone()), false)
            }
            ToolResult::Failure { error, .. } => {
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
        if let ToolResult::Success(s) = result
            && let Some(blocks) = wire["content"].as_array_mut()
        {
            for text in &s.additional_context {
                blocks.push(json!({"type": "text", "text": text}));
            }
        }
        let decoded: CallToolResult = serde_json::from_value(wire).expect("decodes");
        serde_json::to_value(decoded).expect("encodes")
    }

    #[test]
    fn results_are_what_the_json_route_made() {
        use toolhost_contract::{Meta, Stage, StageVerdict, ToolSuccess};
        let mut meta = Meta::default();
        meta.trace
            .push(Stage::Lookup, StageVerdict::Pass, "registry", None);
        meta.trace.push(
            Stage::Bound,
            StageVerdict::Modify,
            "bound",
            Some("cut".into()),
        );
        meta.extra.insert("attempts".into(), json!(1));
        let content = vec![
            ContentBlock::text("a \"quoted\" line\n"),
            ContentBlock::Image {
                data: "aGk=".into(),
                mime_type: "image/png".into(),
            },
            ContentBlock::ResourceLink {
                uri: "toolhost://artifacts/x".into(),
                name: "x".into(),
                mime_type: Some("text/plain".into()),
                description: None,
            },
            ContentBlock::Audio {
                data: "UklGRg==".into(),
                mime_type: "audio/wav".into(),
            },
            ContentBlock::Resource {
                resource: toolhost_contract::EmbeddedResource {
                    uri: "test://embedded".into(),
                    mime_type: Some("text/plain".into()),
                    contents: toolhost_contract::ResourceContents::Text("inside".into()),
                },
            },
            ContentBlock::Resource {
                resource: toolhost_contract::EmbeddedResource {
                    uri: "test://blob".into(),
                    mime_type: None,
                    contents: toolhost_contract::ResourceContents::Blob("AAE=".into()),
                },
            },
        ];
        let success = |value: Value| {
            ToolResult::Success(ToolSuccess {
                value,
                content: content.clone(),
                meta: meta.clone(),
                additional_context: vec!["also this".into()],
                concludes_turn: false,
            })
        };
        let failure = ToolResult::failure(FailureCode::PathDenied, "outside the workspace");
        for (result, revision) in [
            (success(json!({"n": 1, "s": ["x"]})), Revision::Sessions),
            (success(json!("text")), Revision::Sessions),
            (success(json!("text")), Revision::Stateless),
            (failure.clone(), Revision::Sessions),
            (failure, Revision::Stateless),
        ] {
            let object_only = revision == Revision::Sessions;
            let mut direct =
                serde_json::to_value(revision.call_result(result.clone())).expect("encodes");
            // Set by rmcp's constructors (the handler drops it for older revisions).
            assert_eq!(direct["resultType"], "complete");
            direct.as_object_mut().map(|o| o.remove("resultType"));
            assert_eq!(direct, through_json(&result, object_only), "{result:?}");
            // The raw route: the same result without `_meta`, and the same
            // `_meta.toolhost`, byte for byte.
            let with_meta = revision.call_result(result.clone());
            let (mut bare, raw) = revision.call_result_raw(result);
            assert!(bare.meta.is_none());
            let toolhost = &with_meta.meta.as_ref().expect("meta").0["toolhost"];
            assert_eq!(raw.get(), serde_json::to_string(toolhost).expect("encodes"));
            bare.meta = with_meta.meta.clone();
            assert_eq!(bare, with_meta);
        }
    }

    #[test]
    fn revisions_split_at_2026_07_28() {
        assert_eq!(Revision::of(None), Revision::Sessions);
        for v in ProtocolVersion::KNOWN_VERSIONS {
            let expected = if v.as_str() < "2026-07-28" {
                Revision::Sessions
            } else {
                Revision::Stateless
            };
            assert_eq!(Revision::of(Some(v)), expected, "{}", v.as_str());
        }
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

    /// Every page and every artifact page is a complete, cacheable result
    /// on the wire (2026-07-28 requires `resultType`, `ttlMs` and
    /// `cacheScope`; the server drops `resultType` for older revisions).
    #[test]
    fn lists_and_pages_are_complete_results() {
        let all = vec![json!({"name": "t", "inputSchema": {"type": "object"}})];
        let page = serde_json::to_value(tools_page(all, None).expect("page")).expect("encodes");
        assert_eq!(page["resultType"], "complete");
        assert_eq!(page["ttlMs"], 0);
        assert_eq!(page["cacheScope"], "private");
        let read = artifact_page("toolhost://artifacts/a", "a", 0, "abc".into(), 10).expect("page");
        let read = serde_json::to_value(read).expect("encodes");
        assert_eq!(read["resultType"], "complete");
        assert_eq!(read["ttlMs"], ARTIFACT_TTL_MS);
        assert_eq!(read["cacheScope"], "private");
        assert_eq!(
            read["contents"][0]["_meta"]["toolhost"]["nextUri"],
            "toolhost://artifacts/a?offset=3"
        );
    }
}
