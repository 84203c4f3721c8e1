//! What a transport knows of one request, in one typed value: who sent it,
//! what that caller may reach, and how its response is written.
//!
//! Each transport builds it where it reads the request (stdio's direct
//! path, HTTP's middleware) and hands it to the session with the request;
//! the session reads it once ([`Origin::of`]) and passes it down. Nothing
//! else about the transport reaches the session.

use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_contract::{ContextSink, ToolResult};
use toolhost_mcp_wire::Revision;
use toolhost_pipeline::{Handoff, Retirement};

/// Where one request came from, as its transport tells the session.
#[derive(Clone)]
pub(crate) struct Origin {
    /// Who is calling: over HTTP, the OAuth token's subject, a digest of a
    /// bearer token or an anonymous local client; over stdio, the process
    /// that started the server.
    pub(crate) principal: String,
    /// The OAuth caller, when the server checks tokens: its scopes bound
    /// what it may list and call.
    pub(crate) caller: Option<Arc<Caller>>,
    /// Whether the connection carries no session of its own: over HTTP a
    /// 2026-07-28 request stands alone, so the repeat check looks at the
    /// principal's latest call instead.
    pub(crate) connectionless: bool,
    /// Where the transport takes the result's `_meta.toolhost` when it
    /// writes the response itself (stdio); `None`: rmcp writes all of it.
    pub(crate) reply: Option<RawMeta>,
    /// Where the call's sandboxes end when the transport writes the
    /// response itself: after it is out (the pool's reset of an instance
    /// overlaps the client reading the response).
    pub(crate) retire: Option<Retirement>,
}

impl Origin {
    /// The process at the other end of stdin and stdout.
    pub(crate) fn stdio() -> Origin {
        Origin {
            principal: "stdio".into(),
            caller: None,
            connectionless: false,
            reply: None,
            retire: None,
        }
    }

    /// An HTTP request's origin: the OAuth `caller` when the server checks
    /// tokens, else the bearer token's holder (a digest of the token) or an
    /// anonymous local client.
    pub(crate) fn http(caller: Option<Caller>, bearer: Option<&str>) -> Origin {
        let principal = match (&caller, bearer) {
            (Some(c), _) => c.identity.principal.clone(),
            (None, Some(token)) => {
                let digest = toolhost_contract::sha256_hex(token.trim().as_bytes());
                format!("bearer:{}", &digest[..16])
            }
            (None, None) => "http:anonymous".into(),
        };
        Origin {
            principal,
            caller: caller.map(Arc::new),
            connectionless: true,
            reply: None,
            retire: None,
        }
    }

    /// The origin the transport handed over with `context`: in the
    /// request's extensions (stdio) or its HTTP parts' (HTTP). A request
    /// rmcp routed on stdio carries none: it is the stdio client's.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Origin {
        context
            .extensions
            .get::<Origin>()
            .or_else(|| {
                context
                    .extensions
                    .get::<http::request::Parts>()?
                    .extensions
                    .get::<Origin>()
            })
            .cloned()
            .unwrap_or_else(Origin::stdio)
    }

    /// The caller's reach, for the pipeline: `None` when nothing bounds it.
    pub(crate) fn reach(&self) -> Option<Arc<dyn toolhost_pipeline::Reach>> {
        self.caller
            .clone()
            .map(|c| c as Arc<dyn toolhost_pipeline::Reach>)
    }

    /// What the pipeline is handed with a call from here: its reach, where
    /// its sandboxes end, and `sink` for what the tool reports.
    pub(crate) fn handoff(&self, sink: Option<Arc<dyn ContextSink>>) -> Handoff {
        Handoff {
            sink,
            reach: self.reach(),
            retire: self.retire.clone(),
        }
    }

    /// `result` on the wire for `revision`. A transport that writes the
    /// response itself gets the `_meta.toolhost` as JSON text, beside it.
    pub(crate) fn reply(&self, result: ToolResult, revision: Revision) -> CallToolResult {
        match &self.reply {
            Some(slot) => {
                let (wire, meta) = revision.call_result_raw(result);
                slot.put(meta);
                wire
            }
            None => revision.call_result(result),
        }
    }
}

/// Where the session leaves a call's `_meta.toolhost`, as JSON text, for
/// the transport to write beside the result (see
/// [`toolhost_mcp_wire::Revision::call_result_raw`]).
#[derive(Clone, Default)]
pub(crate) struct RawMeta(Arc<Mutex<Option<Box<RawValue>>>>);

impl RawMeta {
    /// Leaves `meta` for the transport.
    fn put(&self, meta: Box<RawValue>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(meta);
    }

    /// What the session left, once.
    pub(crate) fn take(&self) -> Option<Box<RawValue>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Who is calling, as the OAuth check found.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) identity: toolhost_auth::Identity,
    pub(crate) rules: Arc<toolhost_auth::Verifier>,
}

/// An OAuth caller's reach, handed to the pipeline with its call: the
/// tools its token's scopes grant, for the call and for every call a script
/// it runs makes.
impl toolhost_pipeline::Reach for Caller {
    /// Why this caller may not call `tool` (a scope its token lacks), if so.
    fn refuse(&self, tool: &str) -> Option<toolhost_contract::ToolFailure> {
        if self.allows(tool) {
            return None;
        }
        let scopes = &self.rules.config().scopes;
        let scope = scopes.for_tool(tool).unwrap_or_default().to_owned();
        Some(
            toolhost_contract::ToolFailure::new(
                toolhost_contract::FailureCode::Denied,
                format!(
                    "`{tool}` needs the scope `{scope}`, which your access token does not grant"
                ),
            )
            .with_info(serde_json::json!({ "scope": scope })),
        )
    }

    /// Whether the token's scopes grant `tool` (no failure built).
    fn allows(&self, tool: &str) -> bool {
        self.rules.config().scopes.allows(&self.identity, tool)
    }
}
