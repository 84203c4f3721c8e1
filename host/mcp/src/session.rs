//! The server (shared by every connection) and one session per connection.

use crate::ServeError;
use crate::approve::ElicitApprover;
use crate::convert;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, broadcast};
use toolhost_pipeline::advertise::{self, Format};
use toolhost_pipeline::replay::Replay;
use toolhost_pipeline::{Pipeline, SessionLog};
use toolhost_toolbox::Host;

/// Default time the person at the client has to answer an approval.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings shared by every session.
#[derive(Clone)]
pub struct ServerOptions {
    /// How long an approval may wait for the user before it is denied.
    pub approval_timeout: Duration,
    /// The session log every session appends to.
    pub log: Option<Arc<SessionLog>>,
    /// Deterministic sessions: each session's clocks, randomness and ids
    /// derive from this seed (and the session's number, from 1).
    pub seed: Option<u64>,
    /// A cassette every session records to or plays back from (meant for
    /// one session at a time: a harness testing an agent against recorded
    /// tools).
    pub cassette: Option<Arc<Replay>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            log: None,
            seed: None,
            cassette: None,
        }
    }
}

struct Shared {
    host: Arc<Host>,
    options: ServerOptions,
    changed: broadcast::Sender<()>,
    in_flight: AtomicUsize,
    idle: Notify,
    /// Sessions started so far.
    sessions: AtomicU64,
}

/// The MCP server: a host, the options, and the sessions' shared state.
/// Cheap to clone.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// A server over `host`.
    pub fn new(host: Arc<Host>, options: ServerOptions) -> Server {
        let (changed, _) = broadcast::channel(16);
        Server {
            shared: Arc::new(Shared {
                host,
                options,
                changed,
                in_flight: AtomicUsize::new(0),
                idle: Notify::new(),
                sessions: AtomicU64::new(0),
            }),
        }
    }

    /// The host.
    pub fn host(&self) -> &Arc<Host> {
        &self.shared.host
    }

    /// A new session (one per client connection): its own pipeline over
    /// the shared registry, artifacts and log.
    pub fn session(&self) -> Session {
        let options = &self.shared.options;
        let approver = Arc::new(ElicitApprover::new(options.approval_timeout));
        let number = self.shared.sessions.fetch_add(1, Ordering::SeqCst) + 1;
        let id = match options.seed {
            Some(seed) => format!("{seed:x}s{number}"),
            None => uuid::Uuid::new_v4().simple().to_string(),
        };
        let mut b = self
            .shared
            .host
            .session()
            .session_id(id)
            .approver(approver.clone());
        if let Some(seed) = options.seed {
            b = b.deterministic(seed.wrapping_add(number - 1));
        }
        if let Some(c) = &options.cassette {
            b = b.cassette(c.clone());
        }
        if let Some(log) = &options.log {
            b = b.session_log(log.clone());
        }
        Session {
            shared: self.shared.clone(),
            pipeline: Arc::new(b.build()),
            approver,
        }
    }

    /// Tells every connected session that the tool list changed
    /// (`notifications/tools/list_changed`).
    pub fn tools_changed(&self) {
        // No receiver means no session is listening: nothing to tell.
        let _ = self.shared.changed.send(());
    }

    /// Calls running now, across sessions.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no call is running, or `grace` passed; returns whether
    /// every call finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        let wait = async {
            loop {
                let idle = self.shared.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(grace, wait).await.is_ok()
    }

    /// Serves one session over stdin/stdout until the client closes it.
    ///
    /// When both are pipes (as MCP clients launch servers) they are read and
    /// written on the runtime's reactor, not through the blocking pool: each
    /// hand-off to a pool thread and back was a thread wake-up on the path
    /// of every message. Anything else (a terminal, a file) is read and
    /// written through the blocking pool.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let running = self
            .session()
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| ServeError::Start(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Start(e.to_string()))?;
        Ok(())
    }
}

/// One client connection's session.
pub struct Session {
    shared: Arc<Shared>,
    pipeline: Arc<Pipeline>,
    approver: Arc<ElicitApprover>,
}

impl Session {
    /// This session's pipeline.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }
}

/// Counts a call as running until dropped.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

const INSTRUCTIONS: &str = "Tools run sandboxed by toolhost. Paths are inside /workspace. \
A failed call's result says why, starting `Error [code]:` with a stable code (also in _meta.toolhost.error.code). \
A result cut to its budget links its full text as a toolhost://artifacts/ resource: \
read it with resources/read (add ?offset=N to page).";

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.shared.changed.subscribe();
        let peer = context.peer;
        tokio::spawn(async move {
            // Lagging behind only means several changes came at once: one
            // notification covers them.
            while !matches!(
                changes.recv().await,
                Err(broadcast::error::RecvError::Closed)
            ) {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let all = advertise::schemas(self.pipeline.registry(), None, Format::Mcp);
        convert::tools_page(all, request.as_ref().and_then(|r| r.cursor.as_deref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _running = InFlight::enter(&self.shared);
        self.approver
            .set_peer(context.peer.clone(), context.client_capabilities().as_ref());
        let object_only = context
            .protocol_version()
            .is_none_or(|v| v < ProtocolVersion::V_2026_07_28);
        let call = convert::tool_call(&context.id.to_string(), request);
        let result = self.pipeline.execute(call, context.ct.clone()).await;
        Ok(convert::call_result(result, object_only).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        // Artifacts are reached by the links in results, not listed.
        Ok(ListResourcesResult::default())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some((id, offset, limit)) = convert::artifact_request(&uri) else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource `{uri}`: toolhost serves only toolhost://artifacts/ID[?offset=N&limit=M]"
                ),
                None,
            ));
        };
        match self.pipeline.artifacts().page(&id, offset, limit) {
            Some((text, total)) => {
                Ok(convert::artifact_page(&uri, &id, offset, text, total)?.into())
            }
            None => Err(ErrorData::resource_not_found(
                format!(
                    "artifact `{id}` is not (or no longer) kept: the store keeps the newest results within its size bound"
                ),
                None,
            )),
        }
    }
}
