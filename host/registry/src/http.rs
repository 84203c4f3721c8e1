//! A small HTTP/1.1 client for registries and pinned downloads: one
//! connection per request, TLS with the webpki roots (plain HTTP only where
//! the caller allows it), every body bounded in size, redirects followed a
//! few times. Time is bounded per fetch ([`Fetch`]): one deadline for all
//! the requests a fetch makes (redirects, a token, the retry with it), and
//! a minimum average rate for each body, so a registry that drips bytes,
//! never silent long enough for the idle bound, is still cut off.

use crate::RegistryError;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How long each step may take, how slow a body may be, and how large a
/// response may be.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connecting (TCP and TLS), and reading one response head.
    pub connect: Duration,
    /// Silence while a body streams in: a registry that stalls is cut off.
    pub idle: Duration,
    /// The deadline of one fetch (a manifest, a token, a signature): every
    /// request it makes and every body included. A blob of known size gets
    /// longer ([`Fetch::sized`]).
    pub total: Duration,
    /// The least average rate of a body, in bytes per second, from its
    /// response head on, once `grace` has passed (0: no minimum).
    pub min_rate: u64,
    /// How long a body may start slowly before `min_rate` applies (TCP's
    /// slow start, a registry warming up).
    pub grace: Duration,
    /// The largest manifest (or token, or signature, or error body) read
    /// into memory.
    pub max_document: u64,
    /// The largest blob (a component) written to disk.
    pub max_blob: u64,
}

/// A fetch's deadline unless the registry's table sets `deadline_secs`:
/// far more than an honest registry needs for a document, far less than a
/// person waits.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// The minimum rate unless the registry's table sets `min_rate`, in bytes
/// per second: 16 KiB/s (128 kbit/s), slower than any working link, and a
/// dripping registry (a few bytes a second) falls below it at once.
pub const DEFAULT_MIN_RATE: u64 = 16 << 10;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            total: DEFAULT_DEADLINE,
            min_rate: DEFAULT_MIN_RATE,
            grace: Duration::from_secs(5),
            max_document: 4 << 20,
            max_blob: 512 << 20,
        }
    }
}

/// One fetch: what it is, for its errors, and its clock, shared by every
/// request it makes (redirects, a token, the retry with it), so no step
/// restarts the deadline.
#[derive(Debug, Clone)]
pub struct Fetch {
    from: String,
    what: String,
    settings: Option<String>,
    started: Instant,
    deadline: Duration,
    min_rate: u64,
    grace: Duration,
}

impl Fetch {
    /// A fetch of `what` (`the manifest of oci://…`) from `from` (the
    /// registry's `host:port`), starting now, within `limits`.
    pub fn new(from: impl Into<String>, what: impl Into<String>, limits: &Limits) -> Fetch {
        Fetch {
            from: from.into(),
            what: what.into(),
            settings: None,
            started: Instant::now(),
            deadline: limits.total,
            min_rate: limits.min_rate,
            grace: limits.grace,
        }
    }

    /// The same fetch of a blob of `bytes`: its deadline longer by the time
    /// they take at the minimum rate, so an honest large blob downloads
    /// (the minimum rate still cuts a dripping one).
    pub fn sized(mut self, bytes: u64) -> Fetch {
        if let Some(more) = bytes.checked_div(self.min_rate) {
            self.deadline = self.deadline.saturating_add(Duration::from_secs(more));
        }
        self
    }

    /// The same fetch, its errors pointing at the toolbox table that sets
    /// its bounds (`[registries."HOST:PORT"]`).
    pub fn configured_in(mut self, table: impl Into<String>) -> Fetch {
        self.settings = Some(table.into());
        self
    }

    /// A part of this fetch under its own name (the token a manifest
    /// needs): the same clock and deadline.
    pub fn part(&self, what: impl Into<String>) -> Fetch {
        Fetch {
            what: what.into(),
            ..self.clone()
        }
    }

    /// What is fetched.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Time left before the deadline.
    fn left(&self) -> Duration {
        self.deadline.saturating_sub(self.started.elapsed())
    }

    /// The deadline, for messages.
    fn deadline_text(&self) -> String {
        let d = self.deadline;
        if d.subsec_millis() == 0 {
            format!("{} s", d.as_secs())
        } else {
            format!("{:.1} s", d.as_secs_f64())
        }
    }

    /// Which toolbox key moves a bound, for messages.
    fn hint(&self, key: &str) -> String {
        match &self.settings {
            Some(table) => format!(" (`{key}` in the toolbox's {table} moves it)"),
            None => String::new(),
        }
    }

    fn too_slow(&self, url: &str, reason: String) -> RegistryError {
        RegistryError::TooSlow {
            from: self.from.clone(),
            what: self.what.clone(),
            url: url.to_owned(),
            reason,
        }
    }

    /// The deadline passed: the error, `state` saying how far it got.
    fn past_deadline(&self, url: &str, state: &str) -> RegistryError {
        self.too_slow(
            url,
            format!(
                "the deadline of {} passed {state}{}",
                self.deadline_text(),
                self.hint("deadline_secs")
            ),
        )
    }
}

/// Whether plain HTTP may be used for a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {
    /// Never: TLS only.
    Refused,
    /// Allowed (a loopback registry, or one marked `insecure`).
    Allowed,
}

/// A response whose head was read; its body still streams.
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    body: Incoming,
    limits: Limits,
    fetch: Fetch,
    /// When the head arrived: the body's rate is measured from here.
    head_at: Instant,
    url: String,
    read: u64,
}

impl Response {
    /// The URL that answered (after redirects).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The body's length as its head declares it, for messages.
    fn declared(&self) -> Option<u64> {
        self.headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
    }

    /// How long, from now, the body may go on without another byte before
    /// its average rate falls below the minimum (`None`: no minimum).
    fn rate_left(&self) -> Option<Duration> {
        if self.fetch.min_rate == 0 {
            return None;
        }
        // Below the minimum once `read < min_rate × t`, t since the head.
        let due = Duration::from_secs_f64(self.read as f64 / self.fetch.min_rate as f64)
            .max(self.fetch.grace);
        Some(due.saturating_sub(self.head_at.elapsed()))
    }

    /// `N bytes in` or `N of M bytes in`.
    fn bytes_in(&self) -> String {
        match self.declared() {
            Some(m) => format!("{} of {m} bytes in", self.read),
            None => format!("{} bytes in", self.read),
        }
    }

    /// Why waiting for the next frame ended without one.
    fn stalled(&self) -> RegistryError {
        if self.fetch.left().is_zero() {
            return self
                .fetch
                .past_deadline(&self.url, &format!("with {}", self.bytes_in()));
        }
        if self.rate_left().is_some_and(|r| r.is_zero()) {
            let secs = self.head_at.elapsed().as_secs_f64();
            return self.fetch.too_slow(
                &self.url,
                format!(
                    "{} B/s over the {secs:.1} s since the response head ({}), below the minimum of {} B/s{}",
                    (self.read as f64 / secs.max(0.001)) as u64,
                    self.bytes_in(),
                    self.fetch.min_rate,
                    self.fetch.hint("min_rate")
                ),
            );
        }
        self.fetch.too_slow(
            &self.url,
            format!(
                "the server sent nothing for {} s ({})",
                self.limits.idle.as_secs(),
                self.bytes_in()
            ),
        )
    }

    /// The next chunk of the body (`None` at its end), within the idle
    /// bound, the fetch's deadline and its minimum rate, the body so far
    /// at most `max` bytes.
    pub async fn chunk(&mut self, max: u64) -> Result<Option<Bytes>, RegistryError> {
        loop {
            let mut wait = self.limits.idle.min(self.fetch.left());
            if let Some(r) = self.rate_left() {
                wait = wait.min(r);
            }
            // A frame already there is taken even when the wait is zero.
            let frame = match tokio::time::timeout(wait, self.body.frame()).await {
                Err(_) => return Err(self.stalled()),
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => {
                    return Err(RegistryError::Io {
                        url: self.url.clone(),
                        reason: e.to_string(),
                    });
                }
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            self.read += data.len() as u64;
            if self.read > max {
                return Err(RegistryError::TooLarge {
                    url: self.url.clone(),
                    limit: max,
                });
            }
            return Ok(Some(data));
        }
    }

    /// The body, at most `Limits::max_document` bytes.
    pub async fn document(mut self) -> Result<Bytes, RegistryError> {
        let max = self.limits.max_document;
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk(max).await? {
            out.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(out))
    }

    /// Streams the body (at most `max` bytes) into `file`, hashing it as it
    /// goes: its SHA-256 (hex) and length.
    pub async fn to_file(
        mut self,
        max: u64,
        file: &mut tokio::fs::File,
    ) -> Result<(String, u64), RegistryError> {
        use sha2::Digest as _;
        let mut hasher = sha2::Sha256::new();
        while let Some(chunk) = self.chunk(max).await? {
            hasher.update(&chunk);
            file.write_all(&chunk)
                .await
                .map_err(|e| RegistryError::Io {
                    url: self.url.clone(),
                    reason: format!("writing the download: {e}"),
                })?;
        }
        Ok((hex(&hasher.finalize()), self.read))
    }
}

/// The client: TLS settings made once.
#[derive(Clone)]
pub struct Http {
    tls: tokio_rustls::TlsConnector,
    limits: Limits,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Redirects followed at most.
const MAX_REDIRECTS: usize = 5;

impl Http {
    /// A client with `limits`, trusting the webpki roots, and the
    /// certificates of the PEM file `SSL_CERT_FILE` names (a private CA,
    /// the convention OpenSSL and most tools follow).
    pub fn new(limits: Limits) -> Result<Http, RegistryError> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
            use rustls::pki_types::pem::PemObject as _;
            let bad = |reason: String| RegistryError::Io {
                url: String::new(),
                reason: format!("SSL_CERT_FILE {}: {reason}", Path::new(&file).display()),
            };
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(&file)
                .map_err(|e| bad(e.to_string()))?;
            for cert in certs {
                let cert = cert.map_err(|e| bad(e.to_string()))?;
                roots.add(cert).map_err(|e| bad(e.to_string()))?;
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| RegistryError::Io {
            url: String::new(),
            reason: format!("TLS configuration: {e}"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Http {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            limits,
        })
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sends a request and reads the response head, following redirects
    /// (`Authorization` is dropped when one leaves the host), as a fetch of
    /// its own: `url` from its host, within the client's limits. `plain`
    /// says whether `http://` may be used for the first host.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
        plain: Plain,
    ) -> Result<Response, RegistryError> {
        let fetch = Fetch::new(authority_of(url)?, url, &self.limits);
        self.send_within(&fetch, method, url, headers, body, plain)
            .await
    }

    /// [`Http::send`] as part of `fetch`: within its deadline, and its
    /// body within its minimum rate.
    pub async fn send_within(
        &self,
        fetch: &Fetch,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
        plain: Plain,
    ) -> Result<Response, RegistryError> {
        let mut url = url.to_owned();
        let mut headers = headers.clone();
        let first_host = authority_of(&url)?;
        for _ in 0..=MAX_REDIRECTS {
            let uri: Uri = url.parse().map_err(|e| RegistryError::Io {
                url: url.clone(),
                reason: format!("not a URL: {e}"),
            })?;
            let same_host = uri.authority().map(|a| a.as_str()) == Some(first_host.as_str());
            let allow_plain = plain == Plain::Allowed && same_host;
            let response = self
                .once(fetch, &method, &uri, &headers, body.clone(), allow_plain)
                .await?;
            let redirect = matches!(
                response.status,
                StatusCode::MOVED_PERMANENTLY
                    | StatusCode::FOUND
                    | StatusCode::SEE_OTHER
                    | StatusCode::TEMPORARY_REDIRECT
                    | StatusCode::PERMANENT_REDIRECT
            );
            if !redirect {
                return Ok(response);
            }
            let Some(location) = response
                .headers
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
            else {
                return Ok(response);
            };
            let next = resolve(&uri, location);
            if authority_of(&next).ok().as_deref() != Some(first_host.as_str()) {
                // Credentials are for the registry, not for its storage.
                headers.remove(http::header::AUTHORIZATION);
            }
            url = next;
        }
        Err(RegistryError::Io {
            url,
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    async fn once(
        &self,
        fetch: &Fetch,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
        allow_plain: bool,
    ) -> Result<Response, RegistryError> {
        let url = uri.to_string();
        let io = |reason: String| RegistryError::Io {
            url: url.clone(),
            reason,
        };
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") if allow_plain => false,
            Some("http") => {
                return Err(RegistryError::Insecure { url: url.clone() });
            }
            _ => return Err(io("only http:// and https:// URLs".into())),
        };
        let host = uri.host().ok_or_else(|| io("no host".into()))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        // Each step within the connect bound and what is left of the
        // fetch's deadline; the error says which ran out.
        let step = || self.limits.connect.min(fetch.left());
        let timeout = |what: &str, until: &str| {
            if fetch.left().is_zero() {
                fetch.past_deadline(&url, &format!("before {until}"))
            } else {
                fetch.too_slow(
                    &url,
                    format!(
                        "{what} took longer than {} s",
                        self.limits.connect.as_secs()
                    ),
                )
            }
        };
        let tcp = tokio::time::timeout(step(), TcpStream::connect((host.as_str(), port)))
            .await
            .map_err(|_| timeout("connecting", "the connection was made"))?
            .map_err(|e| io(format!("cannot connect: {e}")))?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let mut request = http::Request::builder().method(method.clone()).uri(path);
        for (k, v) in headers {
            request = request.header(k, v);
        }
        let authority = uri.authority().map_or(host.clone(), |a| a.to_string());
        request = request.header(http::header::HOST, authority).header(
            http::header::USER_AGENT,
            concat!("toolhost/", env!("CARGO_PKG_VERSION")),
        );
        let request = request
            .body(Full::new(body))
            .map_err(|e| io(e.to_string()))?;
        let head = async {
            if tls {
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| io(format!("not a TLS server name: {e}")))?;
                let stream = self
                    .tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| io(format!("TLS: {e}")))?;
                exchange(TokioIo::new(stream), request).await.map_err(io)
            } else {
                exchange(TokioIo::new(tcp), request).await.map_err(io)
            }
        };
        let (status, headers, body) = tokio::time::timeout(step(), head)
            .await
            .map_err(|_| timeout("the response head", "the response head arrived"))??;
        Ok(Response {
            status,
            headers,
            body,
            limits: self.limits,
            fetch: fetch.clone(),
            head_at: Instant::now(),
            url,
            read: 0,
        })
    }
}

/// Sends one request on a fresh connection; the response head and body.
async fn exchange<T>(
    io: TokioIo<T>,
    request: http::Request<Full<Bytes>>,
) -> Result<(StatusCode, HeaderMap, Incoming), String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("registry connection: {e}");
        }
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    Ok((parts.status, parts.headers, body))
}

/// `host[:port]` of a URL.
fn authority_of(url: &str) -> Result<String, RegistryError> {
    url.parse::<Uri>()
        .ok()
        .and_then(|u| u.authority().map(|a| a.to_string()))
        .ok_or_else(|| RegistryError::Io {
            url: url.to_owned(),
            reason: "not a URL with a host".into(),
        })
}

/// `location` (absolute, or a path on the same server) against `base`.
fn resolve(base: &Uri, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let scheme = base.scheme_str().unwrap_or("https");
    let authority = base.authority().map_or("", |a| a.as_str());
    if location.starts_with('/') {
        format!("{scheme}://{authority}{location}")
    } else {
        let path = base.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{scheme}://{authority}{dir}{location}")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server on loopback answering every request after `think`, with a
    /// body of `chunks` chunks of `size` bytes, one every `every`.
    fn server(think: Duration, chunks: usize, size: usize, every: Duration) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf);
                    std::thread::sleep(think);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                        chunks * size
                    );
                    if stream.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    for _ in 0..chunks {
                        if stream.write_all(&vec![b'x'; size]).is_err() {
                            return;
                        }
                        std::thread::sleep(every);
                    }
                });
            }
        });
        format!("http://127.0.0.1:{port}/blob")
    }

    /// Limits short enough for a test: a deadline of 1 s, 16 KiB/s after
    /// 300 ms.
    fn short() -> Limits {
        Limits {
            total: Duration::from_secs(1),
            grace: Duration::from_millis(300),
            ..Limits::default()
        }
    }

    async fn get(fetch: &Fetch, url: &str) -> Result<Bytes, RegistryError> {
        let http = Http::new(short()).expect("client");
        http.send_within(
            fetch,
            Method::GET,
            url,
            &HeaderMap::new(),
            Bytes::new(),
            Plain::Allowed,
        )
        .await?
        .document()
        .await
    }

    #[tokio::test]
    async fn an_honest_blob_outlasts_the_deadline_by_its_size_at_the_minimum_rate() {
        // 400 KB at about 200 KB/s: 2 s, past the 1 s deadline of a document.
        let url = server(Duration::ZERO, 40, 10_000, Duration::from_millis(50));
        let fetch = Fetch::new("127.0.0.1", "a blob", &short());
        let e = get(&fetch, &url).await.expect_err("a document's deadline");
        assert!(
            e.to_string().contains("the deadline of 1 s passed with"),
            "{e}"
        );
        // Sized, its deadline is 1 s + 400 KB at 16 KiB/s.
        let fetch = Fetch::new("127.0.0.1", "a blob", &short()).sized(400_000);
        let body = get(&fetch, &url).await.expect("an honest blob");
        assert_eq!(body.len(), 400_000);
    }

    #[tokio::test]
    async fn the_rate_is_measured_from_the_head_and_spares_a_body_already_in() {
        // The head after 700 ms (past the grace), the body at once.
        let url = server(Duration::from_millis(700), 1, 300, Duration::ZERO);
        let fetch = Fetch::new("127.0.0.1", "a manifest", &short());
        assert_eq!(get(&fetch, &url).await.expect("in time").len(), 300);
        // A trickle: 100 bytes every 100 ms, 1 KB/s.
        let url = server(Duration::ZERO, 9, 100, Duration::from_millis(100));
        let fetch = Fetch::new("127.0.0.1", "a manifest", &short());
        let e = get(&fetch, &url).await.expect_err("too slow");
        let e = e.to_string();
        assert!(
            e.starts_with("127.0.0.1: a manifest: too slow: ")
                && e.contains("below the minimum of 16384 B/s"),
            "{e}"
        );
    }

    #[test]
    fn redirects_resolve() {
        let base: Uri = "https://r.io/v2/a/blobs/sha256:1".parse().expect("uri");
        assert_eq!(resolve(&base, "https://s3.x/obj"), "https://s3.x/obj");
        assert_eq!(resolve(&base, "/store/1"), "https://r.io/store/1");
        assert_eq!(resolve(&base, "x"), "https://r.io/v2/a/blobs/x");
    }
}
