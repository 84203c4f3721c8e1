//! The outgoing-HTTP gate: every `wasi:http` request a guest makes passes
//! the policy's host allow-list here, on the host, before any connection.

use http_body_util::{BodyExt, Limited};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_policy::NetRule;
use toolhost_worker_wire::{RelayError, RelayedRequest, RelayedResponse};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

/// Per-call egress hooks built from the policy. Deny by default: with no
/// rules, every request is refused.
pub(crate) struct EgressHooks {
    /// Where allowed requests are sent from, when not from this process
    /// (a worker's go to the serving process's gate).
    pub(crate) relay: Option<Arc<dyn EgressRelay>>,
    pub(crate) rules: Vec<NetRule>,
    pub(crate) max_response_bytes: usize,
    pub(crate) timeout: Duration,
    /// Every `host:port` a request was refused for, for the result's message.
    pub(crate) denied: Arc<Mutex<Vec<String>>>,
}

/// The `(host, port)` a request goes to; IPv6 hosts without brackets.
fn destination(uri: &http::Uri) -> Option<(String, u16)> {
    let authority = uri.authority()?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = authority.port_u16().or_else(|| match uri.scheme_str() {
        Some("http") => Some(80),
        _ => Some(443),
    })?;
    Some((host, port))
}

impl WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        _ = fut;
        let dest = destination(request.uri());
        let allowed = dest
            .as_ref()
            .is_some_and(|(h, p)| self.rules.iter().any(|r| r.matches(h, *p)));
        if !allowed {
            let what = dest.map_or_else(
                || request.uri().to_string(),
                |(h, p)| {
                    if h.contains(':') {
                        format!("[{h}]:{p}")
                    } else {
                        format!("{h}:{p}")
                    }
                },
            );
            tracing::warn!(destination = %what, "outgoing request denied by policy");
            self.denied
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(what);
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        let t = Some(self.timeout);
        let mut opts = options.unwrap_or_default();
        opts.connect_timeout = opts.connect_timeout.min(t).or(t);
        opts.first_byte_timeout = opts.first_byte_timeout.min(t).or(t);
        opts.between_bytes_timeout = opts.between_bytes_timeout.min(t).or(t);
        let max = self.max_response_bytes;
        if let Some(relay) = self.relay.clone() {
            return Box::new(async move {
                let request = collect(request).await?;
                let response = relay.send(request).await.map_err(relay_error_into_http)?;
                let done: Box<dyn Future<Output = Result<(), Error>> + Send> =
                    Box::new(async { Ok(()) });
                Ok((response_into_http(response)?, done))
            });
        }
        Box::new(async move {
            let (res, io) = wasmtime_wasi_http::default_send_request(request, Some(opts)).await?;
            let res = res.map(|body| {
                Limited::new(body, max)
                    .map_err(move |e| match e.downcast::<Error>() {
                        Ok(e) => *e,
                        Err(_) => Error::HttpResponseBodySize(Some(max as u64)),
                    })
                    .boxed_unsync()
            });
            Ok((res, Box::new(io) as Box<dyn Future<Output = _> + Send>))
        })
    }
}

/// Where a worker's outgoing requests go: the serving process, which
/// checks them against the call's policy again and sends them.
pub trait EgressRelay: Send + Sync + std::fmt::Debug {
    /// Sends `request` through the serving process's gate.
    fn send(
        &self,
        request: RelayedRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<RelayedResponse, RelayError>> + Send>>;
}

/// Most bytes of a request body a worker relays.
const MAX_RELAYED_REQUEST: usize = 16 << 20;

/// A guest's request, whole, to relay (its body at most
/// [`MAX_RELAYED_REQUEST`]).
async fn collect(request: http::Request<WasiBody>) -> Result<RelayedRequest, Error> {
    let (parts, body) = request.into_parts();
    let body = Limited::new(body, MAX_RELAYED_REQUEST)
        .collect()
        .await
        .map_err(|_| Error::HttpRequestBodySize(Some(MAX_RELAYED_REQUEST as u64)))?
        .to_bytes()
        .to_vec();
    Ok(RelayedRequest {
        method: parts.method.to_string(),
        uri: parts.uri.to_string(),
        headers: relayed_headers(&parts.headers),
        body,
    })
}

/// A relayed request as the gate takes it (a malformed one is refused).
fn request_into_http(r: RelayedRequest) -> Result<http::Request<WasiBody>, RelayError> {
    let invalid = |e: &dyn std::fmt::Display| RelayError::Invalid(e.to_string());
    let mut b = http::Request::builder()
        .method(r.method.as_str())
        .uri(r.uri.as_str());
    for (k, v) in &r.headers {
        b = b.header(k.as_str(), v.as_slice());
    }
    b.body(whole(r.body)).map_err(|e| invalid(&e))
}

/// A relayed response as the guest gets it.
fn response_into_http(r: RelayedResponse) -> Result<http::Response<WasiBody>, Error> {
    let mut b = http::Response::builder().status(r.status);
    for (k, v) in &r.headers {
        b = b.header(k.as_str(), v.as_slice());
    }
    b.body(whole(r.body))
        .map_err(|e| Error::InternalError(Some(e.to_string())))
}

/// Headers as they are relayed: each name and value, in order.
fn relayed_headers(headers: &http::HeaderMap) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect()
}

/// A relayed body, whole, as a guest or the gate reads it.
fn whole(body: Vec<u8>) -> WasiBody {
    http_body_util::Full::new(bytes::Bytes::from(body))
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Why a relayed request failed, as the guest sees it.
fn relay_error_into_http(e: RelayError) -> Error {
    match e {
        RelayError::Denied => Error::HttpRequestDenied,
        RelayError::Invalid(_) => Error::HttpRequestUriInvalid,
        RelayError::TooLarge(n) => Error::HttpResponseBodySize(Some(n)),
        RelayError::Failed(why) => Error::InternalError(Some(why)),
    }
}

/// Sends a worker's request from this process, through the same gate as
/// a call of its own: `policy`'s allow-list, timeouts and response bound.
/// A request it refuses is recorded in `denied` (as `host:port`).
pub async fn send_relayed(
    policy: &toolhost_policy::ToolPolicy,
    request: RelayedRequest,
    denied: &Mutex<Vec<String>>,
) -> Result<RelayedResponse, RelayError> {
    let limits = &policy.limits;
    let max = usize::try_from(limits.max_http_response_bytes).unwrap_or(usize::MAX);
    let shared = Arc::new(Mutex::new(Vec::new()));
    let mut hooks = EgressHooks {
        relay: None,
        rules: policy.sandbox.network.clone(),
        max_response_bytes: max,
        timeout: Duration::from_millis(limits.http_timeout_ms),
        denied: shared.clone(),
    };
    let request = request_into_http(request)?;
    let sent = Box::into_pin(hooks.send_request(request, None, Box::new(async { Ok(()) }))).await;
    let refused = std::mem::take(&mut *shared.lock().unwrap_or_else(|p| p.into_inner()));
    if !refused.is_empty() {
        denied
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(refused);
        return Err(RelayError::Denied);
    }
    let (response, io) = sent.map_err(|e| RelayError::Failed(e.to_string()))?;
    // The connection is driven while the body is read.
    let io = tokio::spawn(Box::into_pin(io));
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| match e {
        Error::HttpResponseBodySize(n) => RelayError::TooLarge(n.unwrap_or(max as u64)),
        e => RelayError::Failed(e.to_string()),
    })?;
    io.abort();
    Ok(RelayedResponse {
        status: parts.status.as_u16(),
        headers: relayed_headers(&parts.headers),
        body: body.to_bytes().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations() {
        let d = |s: &str| destination(&s.parse().unwrap());
        assert_eq!(
            d("https://Example.com/x"),
            Some(("example.com".into(), 443))
        );
        assert_eq!(d("http://example.com/x"), Some(("example.com".into(), 80)));
        assert_eq!(
            d("http://127.0.0.1:8080/"),
            Some(("127.0.0.1".into(), 8080))
        );
        assert_eq!(d("http://[::1]:9/"), Some(("::1".into(), 9)));
        assert_eq!(d("/relative"), None);
    }
}
