//! A small HTTP/1.1 client for registries and pinned downloads: one
//! connection per request, TLS with the webpki roots (plain HTTP only where
//! the caller allows it), every step bounded in time and every body in
//! size, redirects followed a few times.

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

/// How long each step may take, and how large a response may be.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connecting (TCP and TLS) and reading the response head.
    pub connect: Duration,
    /// Silence while a body streams in: a registry that stalls is cut off.
    pub idle: Duration,
    /// One whole request, body included.
    pub total: Duration,
    /// The largest manifest (or token, or error body) read into memory.
    pub max_document: u64,
    /// The largest blob (a component) written to disk.
    pub max_blob: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            total: Duration::from_secs(600),
            max_document: 4 << 20,
            max_blob: 512 << 20,
        }
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
    started: Instant,
    url: String,
    read: u64,
}

impl Response {
    /// The URL that answered (after redirects).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next chunk of the body (`None` at its end), within the idle and
    /// total time limits, the body so far at most `max` bytes.
    pub async fn chunk(&mut self, max: u64) -> Result<Option<Bytes>, RegistryError> {
        loop {
            let left = self.limits.total.saturating_sub(self.started.elapsed());
            let wait = self.limits.idle.min(left);
            let frame = match tokio::time::timeout(wait, self.body.frame()).await {
                Err(_) if left <= self.limits.idle => {
                    return Err(RegistryError::Timeout {
                        url: self.url.clone(),
                        what: format!(
                            "the response did not complete within {} s",
                            self.limits.total.as_secs()
                        ),
                    });
                }
                Err(_) => {
                    return Err(RegistryError::Timeout {
                        url: self.url.clone(),
                        what: format!(
                            "the server sent nothing for {} s ({} bytes in)",
                            self.limits.idle.as_secs(),
                            self.read
                        ),
                    });
                }
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
    /// (`Authorization` is dropped when one leaves the host). `plain` says
    /// whether `http://` may be used for the first host.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
        plain: Plain,
    ) -> Result<Response, RegistryError> {
        let started = Instant::now();
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
                .once(&method, &uri, &headers, body.clone(), allow_plain, started)
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
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
        allow_plain: bool,
        started: Instant,
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
        let timeout = |what: &str| RegistryError::Timeout {
            url: url.clone(),
            what: format!(
                "{what} took longer than {} s",
                self.limits.connect.as_secs()
            ),
        };
        let tcp = tokio::time::timeout(
            self.limits.connect,
            TcpStream::connect((host.as_str(), port)),
        )
        .await
        .map_err(|_| timeout("connecting"))?
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
        let (status, headers, body) = tokio::time::timeout(self.limits.connect, head)
            .await
            .map_err(|_| timeout("the response head"))??;
        Ok(Response {
            status,
            headers,
            body,
            limits: self.limits,
            started,
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

    #[test]
    fn redirects_resolve() {
        let base: Uri = "https://r.io/v2/a/blobs/sha256:1".parse().expect("uri");
        assert_eq!(resolve(&base, "https://s3.x/obj"), "https://s3.x/obj");
        assert_eq!(resolve(&base, "/store/1"), "https://r.io/store/1");
        assert_eq!(resolve(&base, "x"), "https://r.io/v2/a/blobs/x");
    }
}
