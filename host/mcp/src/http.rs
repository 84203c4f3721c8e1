//! Streamable HTTP: the MCP endpoint at `/mcp`, bound to loopback unless
//! told otherwise, with DNS-rebinding protection (`Host` and `Origin`
//! checked), an optional bearer token (required off loopback), bounded
//! request bodies and concurrency, and a graceful shutdown.
//!
//! Beside it, for operators and orchestrators, without authentication (they
//! say nothing about any call's content): `/healthz` (200 while the process
//! serves), `/readyz` (200 once the toolbox's first load finished, 503
//! before) and `/metrics` (Prometheus text format, see [`crate::metrics`]).

use crate::origin::{Caller, Origin};
use crate::{ServeError, Server};
use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Largest request body accepted: 4 MiB. Tool arguments are small; a
/// bigger body is a mistake or an attack, refused with 413 before parsing.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Requests handled at once; more wait their turn. Calls themselves are
/// further bounded (and queued) by the runtime's instance pool.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 256;

/// After the last call finished on shutdown, time for its response to be
/// written before the sessions end.
const RESPONSE_FLUSH: Duration = Duration::from_millis(500);

/// Time running calls get to finish after SIGINT/SIGTERM.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub bind: SocketAddr,
    /// The bearer token every request must carry (`Authorization: Bearer
    /// TOKEN`). Required when `bind` is not a loopback address (unless
    /// `oauth` is set).
    pub token: Option<String>,
    /// An OAuth resource server instead of one shared token: JWT access
    /// tokens of the configured issuer, scopes mapped to tools.
    pub oauth: Option<Arc<toolhost_auth::Verifier>>,
    /// Extra `Host` values accepted besides loopback names (for a
    /// non-loopback bind, its public name).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`scheme://host[:port|:*]`), besides loopback.
    pub allowed_origins: Vec<String>,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Requests handled at once.
    pub max_concurrent_requests: usize,
    /// Time running calls get to finish on shutdown.
    pub shutdown_grace: Duration,
}

impl HttpOptions {
    /// Defaults for `bind`.
    pub fn new(bind: SocketAddr) -> HttpOptions {
        HttpOptions {
            bind,
            token: None,
            oauth: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// Refuses unsafe settings: a non-loopback bind without a token.
    pub fn check(&self) -> Result<(), ServeError> {
        if self.token.is_some() && self.oauth.is_some() {
            return Err(ServeError::Config(
                "--token-file and --oauth-issuer exclude each other: one way to authenticate"
                    .into(),
            ));
        }
        if !self.bind.ip().is_loopback() && self.token.is_none() && self.oauth.is_none() {
            return Err(ServeError::Config(format!(
                "binding {} (not loopback) needs authentication: pass --token-file FILE or --oauth-issuer URL",
                self.bind
            )));
        }
        if self.token.as_deref().is_some_and(|t| t.trim().len() < 16) {
            return Err(ServeError::Config(
                "the bearer token is too short (at least 16 characters)".into(),
            ));
        }
        Ok(())
    }
}

/// Compares in time independent of where the inputs differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_token(token: Arc<String>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match presented {
        Some(p) if same_secret(p.trim().as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => (
            http::StatusCode::UNAUTHORIZED,
            [(http::header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required",
        )
            .into_response(),
    }
}

/// `/healthz`, `/readyz` and `/metrics`: outside authentication and the
/// request limit, so a busy or locked-down server still answers its probes.
fn operations(server: Server) -> Router {
    let ready = server.clone();
    let metrics = server;
    Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route(
            "/readyz",
            axum::routing::get(move || {
                let is_ready = ready.is_ready();
                let walls = ready.host().walls_line();
                async move {
                    if is_ready {
                        (http::StatusCode::OK, format!("ready\n{walls}\n"))
                    } else {
                        (
                            http::StatusCode::SERVICE_UNAVAILABLE,
                            "loading the toolbox\n".to_owned(),
                        )
                    }
                }
            }),
        )
        .route(
            "/metrics",
            axum::routing::get(move || {
                let text = metrics.metrics_text();
                async move {
                    (
                        [(
                            http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        )
}

/// Hands the session the request's [`Origin`] (the innermost layer: the
/// OAuth check, when there is one, has put its caller in the request).
async fn origin(mut request: Request, next: Next) -> Response {
    let caller = request.extensions_mut().remove::<Caller>();
    let bearer = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let origin = Origin::http(caller, bearer);
    request.extensions_mut().insert(origin);
    next.run(request).await
}

/// Gives a `tasks/get`, `tasks/update` or `tasks/cancel` without an
/// `Mcp-Name` header the one its body implies (the task id). The header
/// lets a load balancer route a task's requests; this server needs no
/// routing (any replica answers from the shared task store), and a client
/// that leaves it out (FastMCP's tasks client, 4.1) is served instead of
/// refused. A body that is not JSON goes on as it came, to be refused as
/// such.
async fn task_name(request: Request, next: Next, max_body: usize) -> Response {
    let headers = request.headers();
    let tasks = headers
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|m| matches!(m, "tasks/get" | "tasks/update" | "tasks/cancel"));
    if !tasks || headers.contains_key("mcp-name") {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return (
            http::StatusCode::PAYLOAD_TOO_LARGE,
            "request body too large",
        )
            .into_response();
    };
    let id = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["params"]["taskId"].as_str().map(str::to_owned))
        .filter(|id| id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if let Some(value) = id.and_then(|id| http::HeaderValue::from_str(&id).ok()) {
        parts.headers.insert("mcp-name", value);
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Checks a request's OAuth access token (and, for a `tools/call` that
/// names its tool in `Mcp-Name`, the tool's scope); the caller's identity
/// goes into the request's extensions, for its [`Origin`].
async fn require_oauth(
    verifier: Arc<toolhost_auth::Verifier>,
    server: Server,
    mut request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let authorization = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let tool = (headers.get("mcp-method").and_then(|v| v.to_str().ok()) == Some("tools/call"))
        .then(|| headers.get("mcp-name").and_then(|v| v.to_str().ok()))
        .flatten();
    match verifier.check(authorization, tool).await {
        Ok(identity) => {
            request.extensions_mut().insert(Caller {
                identity,
                rules: verifier.clone(),
            });
            next.run(request).await
        }
        Err(refusal) => {
            server.metrics().reject(if refusal.status == 401 {
                crate::metrics::Rejection::Unauthenticated
            } else {
                crate::metrics::Rejection::Forbidden
            });
            let status = http::StatusCode::from_u16(refusal.status)
                .unwrap_or(http::StatusCode::UNAUTHORIZED);
            let challenge = http::HeaderValue::from_str(&refusal.challenge)
                .unwrap_or_else(|_| http::HeaderValue::from_static("Bearer"));
            (
                status,
                [(http::header::WWW_AUTHENTICATE, challenge)],
                refusal.message,
            )
                .into_response()
        }
    }
}

/// Serves `server` over streamable HTTP at `http://BIND/mcp` until
/// `shutdown` is cancelled; then stops accepting, lets running calls finish
/// for up to the grace period, and ends every session.
pub async fn serve(
    server: Server,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    options.check()?;
    let listener = tokio::net::TcpListener::bind(options.bind).await?;
    let local = listener.local_addr()?;
    let sessions_ct = CancellationToken::new();
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    if !local.ip().is_loopback() && !local.ip().is_unspecified() {
        hosts.push(local.ip().to_string());
    }
    let mut origins: Vec<String> = vec![
        "http://localhost:*".into(),
        "http://127.0.0.1:*".into(),
        "http://[::1]:*".into(),
    ];
    origins.extend(options.allowed_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(sessions_ct.clone());
    let factory = {
        let server = server.clone();
        move || Ok(server.session())
    };
    let service =
        StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    let max_body = options.max_body_bytes;
    let mut app = Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn(origin))
        .layer(middleware::from_fn(move |req, next| {
            task_name(req, next, max_body)
        }));
    if let Some(token) = options.token.clone() {
        let token = Arc::new(token.trim().to_owned());
        app = app.layer(middleware::from_fn(move |req, next| {
            require_token(token.clone(), req, next)
        }));
    }
    if let Some(verifier) = options.oauth.clone() {
        let server = server.clone();
        app = app.layer(middleware::from_fn(move |req, next| {
            require_oauth(verifier.clone(), server.clone(), req, next)
        }));
    }
    let mut app = app
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            options.max_concurrent_requests,
        ))
        .merge(operations(server.clone()));
    if let Some(verifier) = options.oauth.clone() {
        // RFC 9728: at the path-inserted location, and at the bare one for
        // clients that look there first.
        let document = verifier.metadata();
        let mut paths = vec![verifier.metadata_path()];
        if paths[0] != "/.well-known/oauth-protected-resource" {
            paths.push("/.well-known/oauth-protected-resource".into());
        }
        for path in paths {
            let document = document.clone();
            app = app.route(
                &path,
                axum::routing::get(move || {
                    let document = document.to_string();
                    async move { ([(http::header::CONTENT_TYPE, "application/json")], document) }
                }),
            );
        }
    }
    tracing::info!("serving MCP over streamable HTTP at http://{local}/mcp");
    eprintln!("toolhost: serving MCP at http://{local}/mcp");

    let stop = shutdown.clone();
    // No Nagle: a response goes out in several writes (head, then event
    // stream chunks), and Nagle's wait for the client's delayed ACK put
    // about 40 ms into one call in a hundred.
    use axum::serve::ListenerExt as _;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
    });
    let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
        stop.cancelled().await;
    });
    let grace = options.shutdown_grace;
    let server_for_drain = server.clone();
    let drained = async move {
        shutdown.cancelled().await;
        let done = server_for_drain.drain(grace).await;
        if !done {
            tracing::warn!(
                running = server_for_drain.in_flight(),
                "shutdown grace period over; ending the remaining calls"
            );
        }
        // The last results are on their way to the clients (rmcp writes a
        // response after the handler returns): let them be written before
        // ending the sessions, whose event streams keep connections open.
        tokio::time::sleep(RESPONSE_FLUSH).await;
        sessions_ct.cancel();
    };
    let (served, ()) = tokio::join!(serving, drained);
    served?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_needs_a_token() {
        let mut o = HttpOptions::new("0.0.0.0:8080".parse().expect("addr"));
        assert!(o.check().is_err());
        o.token = Some("short".into());
        assert!(o.check().is_err());
        o.token = Some("a-long-enough-secret-token".into());
        assert!(o.check().is_ok());
        assert!(
            HttpOptions::new("127.0.0.1:0".parse().expect("addr"))
                .check()
                .is_ok()
        );
    }

    #[test]
    fn secrets_compare_exactly() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
