//! The MCP request path on arbitrary bytes, as `toolhost serve` reads its
//! standard input: rmcp's own stdio transport splits and decodes the bytes
//! into JSON-RPC messages (a line at a time, skipping what is not JSON),
//! toolhost's wire layer translates each request, the stages before
//! dispatch check each `tools/call` (with the oracles of `world.rs`), and
//! the answer is encoded as the server would send it.
//!
//! Besides "no panic, no hang, no unbounded allocation": every answer
//! encodes and decodes again as a message a client reads; a failure answer
//! is `isError` with its stable code in `_meta` and none of it in
//! `structuredContent`; an artifact URI is only ever paged inside the
//! artifact scheme.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use std::sync::OnceLock;
use toolhost_contract::{ContentBlock, FailureCode, ToolFailure, ToolResult, ToolSuccess};
use toolhost_mcp_wire::Revision;
use toolhost_stages::bound::ARTIFACT_SCHEME;

mod world;

/// Most messages one input is read for (the transport is a loop).
const MAX_MESSAGES: usize = 64;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    })
}

/// Every message the server's transport decodes from `data`.
fn decode(data: &[u8]) -> Vec<RxJsonRpcMessage<RoleServer>> {
    runtime().block_on(async {
        let mut transport =
            AsyncRwTransport::<RoleServer, _, _>::new_server(data, tokio::io::sink());
        let mut out = Vec::new();
        while out.len() < MAX_MESSAGES {
            match transport.receive().await {
                Some(m) => out.push(m),
                None => break,
            }
        }
        out
    })
}

/// Encodes `result` as the server's answer to `id`, checks that a client
/// decodes it, and returns it as sent.
fn answer(id: RequestId, result: ServerResult) -> Value {
    let message = ServerJsonRpcMessage::response(result, id);
    let text = serde_json::to_string(&message).expect("an answer encodes");
    if let Err(e) = serde_json::from_str::<ServerJsonRpcMessage>(&text) {
        panic!("a client cannot read {text}: {e}");
    }
    serde_json::from_str(&text).expect("JSON")
}

fn call(id: RequestId, params: rmcp::model::CallToolRequestParams, revision: Revision) -> Value {
    let w = world::world();
    let call = toolhost_mcp_wire::tool_call(&id.to_string(), params);
    assert!(call.call_id.starts_with("mcp-"));
    let result = match w.tools.iter().position(|(d, _)| d.name == call.name) {
        None => ToolResult::from_failure(ToolFailure::new(
            FailureCode::UnknownTool,
            format!("there is no tool named `{}`", call.name),
        )),
        Some(i) => match world::check_call(w, i, &call.arguments) {
            Ok(args) => ToolResult::Success(ToolSuccess {
                content: vec![ContentBlock::text(args.to_string())],
                value: args,
                meta: Default::default(),
                additional_context: Vec::new(),
                concludes_turn: false,
            }),
            Err(f) => ToolResult::from_failure(f),
        },
    };
    let is_error = result.is_error();
    let wire = answer(
        id,
        ServerResult::CallToolResult(revision.call_result(result)),
    );
    let r = &wire["result"];
    assert_eq!(r["isError"], json!(is_error), "{wire}");
    if is_error {
        assert!(r.get("structuredContent").is_none(), "{wire}");
        assert!(
            r["_meta"]["toolhost"]["error"]["code"].is_string(),
            "{wire}"
        );
    } else if let Some(s) = r.get("structuredContent") {
        assert!(revision == Revision::Stateless || s.is_object(), "{wire}");
    }
    wire
}

fuzz_target!(|data: &[u8]| {
    for message in decode(data) {
        let JsonRpcMessage::Request(request) = message else {
            continue;
        };
        let id = request.id.clone();
        match request.request {
            ClientRequest::CallToolRequest(r) => {
                let revision = if id.to_string().len() % 2 == 0 {
                    Revision::Sessions
                } else {
                    Revision::Stateless
                };
                call(id, r.params, revision);
            }
            ClientRequest::ReadResourceRequest(r) => {
                let uri = r.params.uri;
                if let Some((aid, offset, limit)) = toolhost_mcp_wire::artifact_request(&uri) {
                    assert!(uri.starts_with(ARTIFACT_SCHEME), "{uri}");
                    assert!(!aid.is_empty() && (1..=1 << 20).contains(&limit), "{uri}");
                    let text = "x".repeat(limit.min(64));
                    let total = offset.saturating_add(text.len()).saturating_add(1);
                    if let Ok(page) =
                        toolhost_mcp_wire::artifact_page(&uri, &aid, offset, text, total)
                    {
                        answer(id, ServerResult::ReadResourceResult(page));
                    }
                }
            }
            ClientRequest::ListToolsRequest(r) => {
                let all: Vec<Value> = world::world()
                    .tools
                    .iter()
                    .map(|(d, _)| json!({"name": d.name, "inputSchema": d.input_schema}))
                    .collect();
                let cursor = r.params.as_ref().and_then(|p| p.cursor.as_deref());
                if let Ok(page) = toolhost_mcp_wire::tools_page(all, cursor) {
                    answer(id, ServerResult::ListToolsResult(page));
                }
            }
            _ => {}
        }
    }
});

// The type the transport yields is the one the server handles.
const _: fn(ClientJsonRpcMessage) -> RxJsonRpcMessage<RoleServer> = |m| m;
