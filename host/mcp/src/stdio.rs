//! The stdio front end: one client, on a thread of its own.
//!
//! The transport, rmcp's service loop and the handlers run on one thread
//! (a current-thread runtime), and so does a call while it runs without
//! waiting, which most calls do from start to end: a sequential client's
//! round trip then crosses no thread at all. On a multi-threaded runtime
//! every message would hop between workers (reader, service loop, handler,
//! writer), a large share of a small call's CPU.
//!
//! A call leaves the thread for the worker pool (the runtime the server was
//! started on) when it waits (a long call yields at the epoch tick, a call
//! may wait on an approval or a large commit), and at once when another
//! `tools/call` of the client is unanswered or already read, so the calls an
//! agent sends together run in parallel.
//!
//! The transport answers `tools/call` requests itself, through rmcp's own
//! request handler but around its service loop (see [`StdioTransport`]);
//! every other message goes through rmcp. It writes the result's
//! `_meta.toolhost` from the trace as it is ([`RawMeta`], in the request's
//! [`Origin`]), and a call's sandbox ends after the response is out (a
//! [`Retirement`] in the same Origin):
//! the pool's reset of the instance overlaps the client reading it.
//! `--bench stdio` measures what this design buys.

use crate::origin::{Origin, RawMeta};
use crate::placement::{OpenCalls, Placement};
use crate::{ServeError, Server, Session};
use rmcp::Service;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientNotification, ClientRequest, ErrorData,
    JsonRpcMessage, RequestId, ServerResult,
};
use rmcp::service::{Peer, RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{StdioReader, StdioWriter, Transport};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::runtime::Handle;
use toolhost_pipeline::Retirement;

/// The stdio transport: reads the client's lines, answers the calls it can
/// answer itself, and passes everything else to rmcp.
///
/// Once the session opened, a `tools/call` is decoded here, once, straight
/// into its parameters, and answered here: it goes to rmcp's own request
/// handler (which checks the request's protocol version and metadata, and
/// shapes the result for the revision, as it does for every request), and
/// the response is written from where the call finished. rmcp's service
/// loop decodes each message through its untagged enums (the message
/// buffered and read twice), spawns a task per request, and routes the
/// response back through its loop to the writer, which costs a small call
/// much of its CPU. What the loop does besides is not needed here: the
/// cancellation of a call answered here is kept by [`OpenCalls`], and the
/// handler's record of the request it serves (which rmcp keeps to refuse
/// server-to-client requests on 2026-07-28) falls back to the same version
/// the session decides by. Anything else (another method, a message this
/// decoder does not take as it is) goes to rmcp unchanged, and rmcp answers
/// it, errors included.
struct StdioTransport {
    read: BufReader<StdioReader>,
    /// The line being read (kept across cancelled reads: rmcp polls
    /// `receive` in a `select!`).
    line: Vec<u8>,
    /// Dropping the rest of a line over [`MAX_LINE`].
    discarding: bool,
    /// A well-formed JSON line that is no message: answered `Invalid
    /// Request` before the next read.
    invalid: bool,
    out: Out,
    calls: OpenCalls,
    /// Set once the session opened (with `initialize` or `server/discover`).
    direct: Arc<OnceLock<Direct>>,
}

/// The longest line read (rmcp's own bound): a longer one is dropped.
const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// What answering a call here needs: the session and its peer.
struct Direct {
    session: Session,
    peer: Peer<RoleServer>,
}

/// The writer every message goes out through, whole.
#[derive(Clone)]
struct Out(Arc<tokio::sync::Mutex<Option<StdioWriter>>>);

impl Out {
    /// Writes `message` as one line (as rmcp's codec frames it).
    fn write<M: Serialize>(
        &self,
        message: &M,
    ) -> impl Future<Output = std::io::Result<()>> + Send + use<M> {
        let framed = serde_json::to_vec(message).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        let out = self.0.clone();
        async move {
            let bytes = framed.map_err(std::io::Error::other)?;
            let mut out = out.lock().await;
            let w = out
                .as_mut()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotConnected))?;
            w.write_all(&bytes).await?;
            w.flush().await
        }
    }
}

/// The envelope of a request, its parameters left undecoded.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// Whether `line` (JSON, but no message rmcp reads) is a notification:
/// it has no id, or a `notifications/` method. Those get no answer.
fn is_notification(line: &[u8]) -> bool {
    serde_json::from_slice::<Envelope<'_>>(line)
        .is_ok_and(|e| e.id.is_none() || e.method.is_some_and(|m| m.starts_with("notifications/")))
}

/// `line` as a `tools/call` this transport answers itself: a JSON-RPC 2.0
/// request with an id and parameters of the right shape. `None` sends the
/// line to rmcp.
fn direct_call(line: &[u8]) -> Option<(RequestId, CallToolRequestParams)> {
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    if envelope.jsonrpc != "2.0" || envelope.method.as_deref() != Some("tools/call") {
        return None;
    }
    let id = envelope.id?;
    let params: CallToolRequestParams = serde_json::from_str(envelope.params?.get()).ok()?;
    Some((id, params))
}

impl Direct {
    /// Answers one call: the handler's response (or error), written unless
    /// the client cancelled the request.
    fn answer(
        &self,
        id: RequestId,
        mut params: CallToolRequestParams,
        calls: OpenCalls,
        out: Out,
    ) -> impl Future<Output = ()> + Send + 'static {
        let session = self.session.clone();
        let mut context = RequestContext::new(id.clone(), self.peer.clone());
        context.ct = calls.open(id.clone());
        if let Some(meta) = params.meta.take() {
            context.meta = meta;
        }
        let meta = RawMeta::default();
        let retired = Retirement::new();
        context.extensions.insert(Origin {
            reply: Some(meta.clone()),
            retire: Some(retired.clone()),
            ..Origin::stdio()
        });
        async move {
            // rmcp's own request handler, with every check and shaping it
            // does for a call (only its service loop is skipped).
            let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
            let response = session.handle_request(request, context).await;
            // A request the client cancelled gets no response (as rmcp does).
            if !calls.close(&id) {
                return;
            }
            let written = match (response, meta.take()) {
                (Ok(ServerResult::CallToolResult(result)), Some(meta)) if result.meta.is_none() => {
                    out.write(&CallReply::new(&id, &result, &meta)).await
                }
                (Ok(mut response), meta) => {
                    if let (ServerResult::CallToolResult(r), Some(meta)) = (&mut response, meta) {
                        // A `_meta` of the result's own (none is set today):
                        // toolhost's goes in beside it.
                        let toolhost = serde_json::from_str(meta.get()).unwrap_or_default();
                        r.meta
                            .get_or_insert_default()
                            .0
                            .insert("toolhost".into(), toolhost);
                    }
                    out.write(&TxJsonRpcMessage::<RoleServer>::response(response, id))
                        .await
                }
                (Err(error), _) => {
                    out.write(&TxJsonRpcMessage::<RoleServer>::error(error, Some(id)))
                        .await
                }
            };
            if let Err(e) = written {
                tracing::error!("writing a response: {e}");
            }
            // The last handle: the call's sandboxes end now, after the
            // response went out.
            drop(retired);
        }
    }
}

/// A `tools/call` response with its `_meta.toolhost` written as it is:
/// the same JSON rmcp writes for the result with that `_meta`.
#[derive(Serialize)]
struct CallReply<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: WithMeta<'a>,
}

#[derive(Serialize)]
struct WithMeta<'a> {
    #[serde(flatten)]
    result: &'a CallToolResult,
    #[serde(rename = "_meta")]
    meta: ToolhostMeta<'a>,
}

#[derive(Serialize)]
struct ToolhostMeta<'a> {
    toolhost: &'a RawValue,
}

impl<'a> CallReply<'a> {
    fn new(id: &'a RequestId, result: &'a CallToolResult, toolhost: &'a RawValue) -> Self {
        CallReply {
            jsonrpc: "2.0",
            id,
            result: WithMeta {
                result,
                meta: ToolhostMeta { toolhost },
            },
        }
    }
}

/// How reading one line ended.
enum Read {
    Line,
    Oversized,
    Eof,
    Failed(std::io::Error),
}

impl StdioTransport {
    /// Reads one line into `self.line`, never past [`MAX_LINE`] (rmcp's
    /// bounded reader: a cancelled read keeps what it read).
    async fn read_line(&mut self) -> Read {
        loop {
            let (consumed, done) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => return Read::Failed(e),
                };
                if available.is_empty() {
                    return Read::Eof;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len().saturating_add(take) > MAX_LINE {
                    self.line.clear();
                    self.discarding = newline.is_none();
                    (take, Some(Read::Oversized))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| Read::Line))
                }
            };
            self.read.consume(consumed);
            if let Some(read) = done {
                return read;
            }
        }
    }

    /// Whether another whole line is already read (calls sent together).
    fn backlog(&self) -> bool {
        self.read.buffer().contains(&b'\n')
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            self.calls.close(id);
        }
        self.out.write(&item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.invalid {
                let error = TxJsonRpcMessage::<RoleServer>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if self.out.write(&error).await.is_err() {
                    return None;
                }
                self.invalid = false;
            }
            match self.read_line().await {
                Read::Line => {}
                Read::Oversized => {
                    tracing::error!("a message over {MAX_LINE} bytes was dropped");
                    continue;
                }
                Read::Eof => {
                    self.calls.cancel_all();
                    return None;
                }
                Read::Failed(e) => {
                    tracing::error!("reading stdin: {e}");
                    self.calls.cancel_all();
                    return None;
                }
            }
            let mut line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
            line = line.strip_suffix(b"\r").unwrap_or(line);
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            if line.is_empty() {
                self.line.clear();
                continue;
            }
            self.calls.set_backlog(self.backlog());
            if let Some(direct) = self.direct.get()
                && let Some((id, params)) = direct_call(line)
            {
                self.line.clear();
                // Polled here first: a call that finishes without waiting is
                // answered before the next line is read; one that waits goes
                // on in a task of its own.
                let mut answer =
                    Box::pin(direct.answer(id, params, self.calls.clone(), self.out.clone()));
                let polled = std::future::poll_fn(|cx| Poll::Ready(answer.as_mut().poll(cx))).await;
                if polled.is_pending() {
                    tokio::spawn(answer);
                }
                continue;
            }
            let parsed = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line);
            self.invalid = match &parsed {
                Ok(_) => false,
                // Not JSON: nothing to answer (answering can start an
                // error storm with a peer that echoes it back).
                Err(e) if e.is_syntax() || e.is_eof() => {
                    tracing::debug!("ignoring a line that is not JSON: {e}");
                    false
                }
                // JSON, but not a message: a request is answered `Invalid
                // Request`; a notification (or a non-MCP one) is ignored.
                Err(e) => {
                    tracing::debug!("not a message: {e}");
                    !is_notification(line)
                }
            };
            self.line.clear();
            if let Ok(message) = parsed {
                match &message {
                    JsonRpcMessage::Request(r)
                        if matches!(r.request, ClientRequest::CallToolRequest(_)) =>
                    {
                        self.calls.track(r.id.clone());
                    }
                    JsonRpcMessage::Notification(n) => {
                        if let ClientNotification::CancelledNotification(c) = &n.notification
                            && let Some(id) = &c.params.request_id
                        {
                            self.calls.cancel(id);
                        }
                    }
                    _ => {}
                }
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.calls.cancel_all();
        self.out.0.lock().await.take();
        Ok(())
    }
}

impl Server {
    /// Serves one session over stdin/stdout until the client closes it.
    ///
    /// The session runs on a thread of its own, and so do its calls while
    /// they run without waiting; calls that wait, and calls sent together,
    /// run on the runtime this is awaited on (the stdio module says how). When
    /// stdin and stdout are pipes (as MCP clients launch servers) they are
    /// read and written on that thread's reactor, not through a blocking
    /// pool: each hand-off to a pool thread and back was a thread wake-up on
    /// the path of every message. Anything else (a terminal, a file) is read
    /// and written through the blocking pool.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        serve(self.clone()).await
    }
}

/// Serves `server` over stdin and stdout on a thread of its own until the
/// client closes them; calls that leave the thread run on the runtime this
/// is awaited on.
async fn serve(server: Server) -> Result<(), ServeError> {
    let pool = Handle::current();
    let (done, finished) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolhost-stdio".into())
        .spawn(move || {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(ServeError::Io)
                .and_then(|rt| rt.block_on(serve_here(server, pool)));
            // Nobody waiting means the server is shutting down anyway.
            let _ = done.send(result);
        })?;
    finished
        .await
        .unwrap_or_else(|_| Err(ServeError::Start("the stdio thread ended".into())))
}

/// The session, on this thread's runtime.
async fn serve_here(server: Server, pool: Handle) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let calls = OpenCalls::default();
    // The pipes register with this thread's reactor (as pipes, when they
    // are: what MCP clients start servers with).
    let (read, write) = rmcp::transport::stdio_pipes();
    let direct = Arc::new(OnceLock::new());
    let transport = StdioTransport {
        read: BufReader::new(read),
        line: Vec::new(),
        discarding: false,
        invalid: false,
        out: Out(Arc::new(tokio::sync::Mutex::new(Some(write)))),
        calls: calls.clone(),
        direct: direct.clone(),
    };
    let session = server.session().placed(Placement::new(pool, calls));
    let running = session
        .clone()
        .serve(transport)
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    // Set once: the OnceLock is new.
    let _ = direct.set(Direct {
        session,
        peer: running.peer().clone(),
    });
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::{FailureCode, ToolFailure, ToolResult};
    use toolhost_mcp_wire::Revision;

    /// A response written with its meta as text is what rmcp writes for
    /// the result with that meta as a map, byte for byte: a success with
    /// facts, a failure, a legacy result without `resultType`.
    #[test]
    fn a_call_reply_is_the_response_rmcp_writes() {
        use serde_json::json;
        use toolhost_contract::{Meta, Stage, StageVerdict, ToolSuccess};
        let mut meta = Meta::default();
        for (stage, verdict, note) in [
            (Stage::Lookup, StageVerdict::Pass, None),
            (Stage::Bound, StageVerdict::Modify, Some("cut \"x\"".into())),
        ] {
            meta.trace.push(stage, verdict, "test", note);
        }
        meta.extra = json!({"attempts": 1, "sandbox": {"fuelConsumed": 9}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let success = ToolResult::Success(ToolSuccess {
            value: json!({"n": 1}),
            content: vec![toolhost_contract::ContentBlock::text("n é 1\n")],
            meta,
            additional_context: vec![],
            concludes_turn: false,
        });
        let failure = ToolResult::from_failure(ToolFailure::new(FailureCode::Denied, "no"));
        for (result, legacy, id) in [
            (success.clone(), false, RequestId::Number(7)),
            (success, true, RequestId::String("s-1".into())),
            (failure, false, RequestId::Number(8)),
        ] {
            let revision = if legacy {
                Revision::Sessions
            } else {
                Revision::Stateless
            };
            let mut expected = ServerResult::CallToolResult(revision.call_result(result.clone()));
            let (bare, meta) = revision.call_result_raw(result);
            let mut bare = ServerResult::CallToolResult(bare);
            if legacy {
                expected.strip_result_type_for_legacy_peer();
                bare.strip_result_type_for_legacy_peer();
            }
            let ServerResult::CallToolResult(bare) = bare else {
                unreachable!()
            };
            let expected = TxJsonRpcMessage::<RoleServer>::response(expected, id.clone());
            assert_eq!(
                serde_json::to_string(&CallReply::new(&id, &bare, &meta)).expect("encodes"),
                serde_json::to_string(&expected).expect("encodes"),
            );
        }
    }

    #[test]
    fn only_a_plain_well_formed_call_is_answered_by_the_transport() {
        let (id, params) = direct_call(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":"p"}}}"#,
        )
        .expect("a plain call");
        assert_eq!(id, RequestId::Number(7));
        assert_eq!(params.name, "echo");
        assert!(params.meta.and_then(|m| m.get_progress_token()).is_some());
        // Everything else goes to rmcp, which answers it (errors included).
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}"#,
            "[]",
        ] {
            assert!(direct_call(line.as_bytes()).is_none(), "{line}");
        }
    }
}
