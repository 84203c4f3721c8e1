//! The outgoing-HTTP gate: every `wasi:http` request a guest makes passes
//! the policy's host allow-list here, on the host, before any connection.

use http_body_util::{BodyExt, Limited};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_policy::NetRule;
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
