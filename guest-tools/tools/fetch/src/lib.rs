//! The `fetch` tool: HTTP(S) GET through `wasi:http/outgoing-handler`, with
//! HTML rendered to readable text.
//!
//! The host's network policy decides which hosts may be reached; a request it
//! denies (`HTTP-request-denied`) gives the failure `network_denied`.
//! Redirects are followed (at most [`MAX_REDIRECTS`]), each hop going through
//! the host again. The body is read in chunks and reading stops at
//! `max_bytes`. The request logic is written against [`Transport`] so that it
//! is unit-tested natively; the WASI implementation is compiled on `wasm32`.

pub mod html;
pub mod url;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Content, Tool, ToolError};

use crate::url::Url;

/// Default `max_bytes`.
pub const DEFAULT_MAX_BYTES: usize = 200_000;
/// Largest accepted `max_bytes`.
pub const MAX_MAX_BYTES: usize = 10_000_000;
/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// Connect timeout requested from the host.
pub const CONNECT_TIMEOUT_MS: u64 = 10_000;
/// First-byte timeout requested from the host.
pub const FIRST_BYTE_TIMEOUT_MS: u64 = 30_000;
/// Between-bytes timeout requested from the host.
pub const BETWEEN_BYTES_TIMEOUT_MS: u64 = 30_000;

/// Arguments of `fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The http:// or https:// URL to GET.
    pub url: String,
    /// Stop reading the body after this many bytes (default 200000).
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub max_bytes: usize,
}

fn default_max_bytes() -> usize {
    DEFAULT_MAX_BYTES
}

/// Value of `fetch`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FetchValue {
    /// The final URL, after redirects.
    pub url: String,
    /// HTTP status code of the final response.
    pub status: u16,
    /// The response's Content-Type header, if any.
    pub content_type: Option<String>,
    /// The body as text (HTML converted to plain text).
    pub text: String,
    /// True when the body was longer than max_bytes and was cut.
    pub truncated: bool,
    /// Body bytes read.
    pub bytes: usize,
}

/// The `fetch` tool.
pub struct FetchTool;

impl Tool for FetchTool {
    const NAME: &'static str = "fetch";
    const DESCRIPTION: &'static str = "Fetches a web page or text resource over HTTP(S) with a GET \
        request and returns it as text (HTML is converted to readable plain text). \
        Only text content types are supported; the body is cut at max_bytes. \
        Which hosts may be reached is decided by the host's network policy.";
    type Args = FetchArgs;
    type Output = FetchValue;

    fn title() -> Option<&'static str> {
        Some("Fetch a web page")
    }

    fn urls() -> Vec<&'static str> {
        vec!["/url"]
    }

    fn annotations() -> Annotations {
        Annotations::NONE.with_read_only().with_open_world()
    }

    fn execute(args: FetchArgs) -> Result<FetchValue, ToolError> {
        #[cfg(target_arch = "wasm32")]
        {
            fetch_with(&mut wasi_http::WasiTransport, &args)
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = args;
            Err(ToolError::new(
                "unsupported",
                "fetch needs wasi:http and only runs inside a component",
            ))
        }
    }

    fn render(_args: &FetchArgs, v: &FetchValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(v))])
    }
}

/// A response body being read.
pub trait Body {
    /// The next chunk, or `None` at the end.
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ToolError>;
}

/// A response whose body has not been read yet.
pub struct Head {
    /// Status code.
    pub status: u16,
    /// The Content-Type header.
    pub content_type: Option<String>,
    /// The Location header.
    pub location: Option<String>,
    /// The body.
    pub body: Box<dyn Body>,
}

/// Sends GET requests.
pub trait Transport {
    /// Sends a GET request for `url` and returns the response head.
    fn get(&mut self, url: &Url) -> Result<Head, ToolError>;
}

/// Runs a fetch over `transport`.
pub fn fetch_with(
    transport: &mut dyn Transport,
    args: &FetchArgs,
) -> Result<FetchValue, ToolError> {
    if args.max_bytes == 0 || args.max_bytes > MAX_MAX_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "max_bytes must be between 1 and {MAX_MAX_BYTES}"
        )));
    }
    let mut url = Url::parse(&args.url).map_err(ToolError::invalid_arguments)?;
    let mut redirects = 0;
    let mut head = loop {
        let head = transport.get(&url)?;
        let location = head.location.as_deref().filter(|l| !l.trim().is_empty());
        match location {
            Some(loc) if matches!(head.status, 301 | 302 | 303 | 307 | 308) => {
                if redirects == MAX_REDIRECTS {
                    return Err(ToolError::new(
                        "too_many_redirects",
                        format!("{} redirected more than {MAX_REDIRECTS} times", args.url),
                    ));
                }
                redirects += 1;
                url = url.join(loc).map_err(|e| {
                    ToolError::new(
                        "network_error",
                        format!("{url} redirected to an unusable location {loc:?}: {e}"),
                    )
                })?;
            }
            _ => break head,
        }
    };
    let kind = classify(head.content_type.as_deref());
    if kind == Kind::Unsupported {
        return Err(ToolError::new(
            "unsupported_content",
            format!(
                "{url} returned content type {}, which is not text; fetch only returns text content",
                head.content_type.as_deref().unwrap_or("?")
            ),
        )
        .with_info(serde_json::json!({ "status": head.status, "contentType": head.content_type })));
    }
    let (body, truncated) = read_limited(head.body.as_mut(), args.max_bytes)?;
    if kind == Kind::Unknown && body.contains(&0) {
        return Err(ToolError::new(
            "unsupported_content",
            format!("{url} returned binary content without a content type"),
        ));
    }
    let decoded = decode_body(&body, head.content_type.as_deref(), truncated);
    let is_html = kind == Kind::Html || (kind == Kind::Unknown && looks_like_html(&decoded));
    let text = if is_html {
        html::html_to_text(&decoded)
    } else {
        decoded
    };
    Ok(FetchValue {
        url: url.to_string(),
        status: head.status,
        content_type: head.content_type,
        text,
        truncated,
        bytes: body.len(),
    })
}

/// Reads at most `max` bytes; whether more remained.
fn read_limited(body: &mut dyn Body, max: usize) -> Result<(Vec<u8>, bool), ToolError> {
    let mut buf = Vec::new();
    while let Some(chunk) = body.next_chunk()? {
        let room = max - buf.len();
        if chunk.len() > room {
            buf.extend_from_slice(&chunk[..room]);
            return Ok((buf, true));
        }
        buf.extend_from_slice(&chunk);
        if buf.len() == max {
            // Anything more is past the limit.
            loop {
                match body.next_chunk()? {
                    Some(c) if c.is_empty() => continue,
                    Some(_) => return Ok((buf, true)),
                    None => return Ok((buf, false)),
                }
            }
        }
    }
    Ok((buf, false))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Unknown,
    Unsupported,
}

fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn classify(content_type: Option<&str>) -> Kind {
    let Some(ct) = content_type else {
        return Kind::Unknown;
    };
    let m = media_type(ct);
    if m.is_empty() {
        return Kind::Unknown;
    }
    if m == "text/html" || m == "application/xhtml+xml" {
        return Kind::Html;
    }
    let textual = m.starts_with("text/")
        || m.ends_with("+json")
        || m.ends_with("+xml")
        || matches!(
            m.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-ndjson"
                | "application/csv"
        );
    if textual {
        Kind::Text
    } else {
        Kind::Unsupported
    }
}

fn looks_like_html(text: &str) -> bool {
    let head: String = text
        .trim_start()
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Decodes a body with the content type's charset: UTF-8 (the default;
/// invalid sequences become U+FFFD and a sequence cut by truncation is
/// dropped) or ISO-8859-1 / Windows-1252 (as Latin-1).
fn decode_body(body: &[u8], content_type: Option<&str>, truncated: bool) -> String {
    let charset = content_type.and_then(|ct| {
        ct.split(';').skip(1).find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
        })
    });
    if let Some(cs) = charset.as_deref()
        && matches!(
            cs,
            "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252"
        )
    {
        return body.iter().map(|&b| char::from(b)).collect();
    }
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let body = if truncated {
        match std::str::from_utf8(body) {
            Err(e) if e.error_len().is_none() => &body[..e.valid_up_to()],
            _ => body,
        }
    } else {
        body
    };
    String::from_utf8_lossy(body).into_owned()
}

/// A status line and the text.
pub fn render_text(v: &FetchValue) -> String {
    let mut out = format!(
        "HTTP {} {} ({}, {} bytes{})\n\n",
        v.status,
        v.url,
        v.content_type.as_deref().unwrap_or("no content type"),
        v.bytes,
        if v.truncated { ", truncated" } else { "" }
    );
    out.push_str(&v.text);
    if v.truncated {
        out.push_str(&format!(
            "\n\n(content cut after {} bytes; raise max_bytes to read more)",
            v.bytes
        ));
    }
    out
}

#[cfg(target_arch = "wasm32")]
mod wasi_http {
    //! [`Transport`] over `wasi:http/outgoing-handler`.

    use super::{
        BETWEEN_BYTES_TIMEOUT_MS, Body, CONNECT_TIMEOUT_MS, FIRST_BYTE_TIMEOUT_MS, Head, Transport,
    };
    use crate::url::Url;
    use toolhost_kit::ToolError;
    use toolhost_kit::wasi::http::outgoing_handler;
    use toolhost_kit::wasi::http::types::{
        ErrorCode, Fields, IncomingBody, IncomingResponse, Method, OutgoingRequest, RequestOptions,
        Scheme,
    };
    use toolhost_kit::wasi::io::streams::{InputStream, StreamError};

    const MS: u64 = 1_000_000;
    const CHUNK: u64 = 64 * 1024;

    pub struct WasiTransport;

    /// Fields drop in order: the stream before its body before the response.
    struct WasiBody {
        stream: InputStream,
        _body: IncomingBody,
        _response: IncomingResponse,
    }

    impl Body for WasiBody {
        fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ToolError> {
            match self.stream.blocking_read(CHUNK) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(StreamError::Closed) => Ok(None),
                Err(StreamError::LastOperationFailed(e)) => Err(ToolError::new(
                    "network_error",
                    format!("reading the response body failed: {}", e.to_debug_string()),
                )),
            }
        }
    }

    fn error(url: &Url, code: ErrorCode) -> ToolError {
        let target = format!("{}:{}", url.host, url.port_or_default());
        match code {
            ErrorCode::HttpRequestDenied => ToolError::new(
                "network_denied",
                format!("request to {target} denied by policy"),
            )
            .with_info(serde_json::json!({ "host": url.host, "port": url.port_or_default() })),
            ErrorCode::DnsTimeout
            | ErrorCode::ConnectionTimeout
            | ErrorCode::ConnectionReadTimeout
            | ErrorCode::ConnectionWriteTimeout
            | ErrorCode::HttpResponseTimeout => ToolError::new(
                "network_timeout",
                format!("request to {target} timed out ({code:?})"),
            ),
            ErrorCode::DnsError(_) | ErrorCode::DestinationNotFound => ToolError::new(
                "network_error",
                format!("could not resolve host {}", url.host),
            ),
            ErrorCode::ConnectionRefused => {
                ToolError::new("network_error", format!("connection to {target} refused"))
            }
            other => ToolError::new(
                "network_error",
                format!("request to {target} failed: {other:?}"),
            ),
        }
    }

    fn headers() -> Fields {
        let list: [(String, Vec<u8>); 2] = [
            ("user-agent".into(), b"toolhost-fetch/0.1".to_vec()),
            (
                "accept".into(),
                b"text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5"
                    .to_vec(),
            ),
        ];
        Fields::from_list(&list).unwrap_or_else(|_| Fields::new())
    }

    fn header(response: &IncomingResponse, name: &str) -> Option<String> {
        let headers = response.headers();
        let values = headers.get(name);
        values
            .first()
            .map(|v| String::from_utf8_lossy(v).trim().to_string())
    }

    impl Transport for WasiTransport {
        fn get(&mut self, url: &Url) -> Result<Head, ToolError> {
            let internal = |what: &str| {
                ToolError::new("network_error", format!("{what} for {url} was refused"))
            };
            let request = OutgoingRequest::new(headers());
            request
                .set_method(&Method::Get)
                .map_err(|()| internal("the method"))?;
            let scheme = if url.https {
                Scheme::Https
            } else {
                Scheme::Http
            };
            request
                .set_scheme(Some(&scheme))
                .map_err(|()| internal("the scheme"))?;
            request
                .set_authority(Some(&url.authority()))
                .map_err(|()| internal("the authority"))?;
            request
                .set_path_with_query(Some(&url.path_query))
                .map_err(|()| internal("the path"))?;
            let options = RequestOptions::new();
            // A host that does not support a timeout refuses it; the
            // request still goes ahead under the host's own limits.
            let _ = options.set_connect_timeout(Some(CONNECT_TIMEOUT_MS * MS));
            let _ = options.set_first_byte_timeout(Some(FIRST_BYTE_TIMEOUT_MS * MS));
            let _ = options.set_between_bytes_timeout(Some(BETWEEN_BYTES_TIMEOUT_MS * MS));
            let future =
                outgoing_handler::handle(request, Some(options)).map_err(|e| error(url, e))?;
            future.subscribe().block();
            let response = match future.get() {
                Some(Ok(Ok(response))) => response,
                Some(Ok(Err(code))) => return Err(error(url, code)),
                Some(Err(())) | None => {
                    return Err(ToolError::new(
                        "network_error",
                        format!("no response from {url}"),
                    ));
                }
            };
            drop(future);
            let status = response.status();
            let content_type = header(&response, "content-type");
            let location = header(&response, "location");
            let body = response
                .consume()
                .map_err(|()| internal("reading the body"))?;
            let stream = body.stream().map_err(|()| internal("the body stream"))?;
            Ok(Head {
                status,
                content_type,
                location,
                body: Box::new(WasiBody {
                    stream,
                    _body: body,
                    _response: response,
                }),
            })
        }
    }
}

toolhost_kit::export_tools!(FetchTool);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    struct Chunks(VecDeque<Vec<u8>>);
    impl Body for Chunks {
        fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ToolError> {
            Ok(self.0.pop_front())
        }
    }

    /// Status, content type, location and body chunks of a canned response.
    type Canned = (
        u16,
        Option<&'static str>,
        Option<&'static str>,
        Vec<&'static [u8]>,
    );

    /// Answers each request from a list of canned responses and records URLs.
    struct Fake {
        responses: VecDeque<Canned>,
        seen: Vec<String>,
        deny: Option<&'static str>,
    }

    impl Transport for Fake {
        fn get(&mut self, url: &Url) -> Result<Head, ToolError> {
            self.seen.push(url.to_string());
            if self.deny == Some(url.host.as_str()) {
                return Err(ToolError::new(
                    "network_denied",
                    format!(
                        "request to {}:{} denied by policy",
                        url.host,
                        url.port_or_default()
                    ),
                ));
            }
            let (status, ct, loc, chunks) = self.responses.pop_front().expect("unexpected request");
            Ok(Head {
                status,
                content_type: ct.map(str::to_string),
                location: loc.map(str::to_string),
                body: Box::new(Chunks(chunks.into_iter().map(<[u8]>::to_vec).collect())),
            })
        }
    }

    fn fake(responses: Vec<Canned>) -> Fake {
        Fake {
            responses: responses.into(),
            seen: vec![],
            deny: None,
        }
    }

    fn args(url: &str, max_bytes: usize) -> FetchArgs {
        FetchArgs {
            url: url.into(),
            max_bytes,
        }
    }

    #[test]
    fn html_page() {
        let mut t = fake(vec![(
            200,
            Some("text/html; charset=utf-8"),
            None,
            vec![
                b"<html><body><h1>Hi</h1>",
                b"<p>there &amp; you</p><script>x()</script></body></html>",
            ],
        )]);
        let v = fetch_with(&mut t, &args("https://example.com", 1000)).unwrap();
        assert_eq!(v.url, "https://example.com/");
        assert_eq!(v.status, 200);
        assert_eq!(v.text, "# Hi\n\nthere & you");
        assert!(!v.truncated);
        assert_eq!(v.bytes, 79);
        assert!(render_text(&v).starts_with(
            "HTTP 200 https://example.com/ (text/html; charset=utf-8, 79 bytes)\n\n# Hi"
        ));
    }

    #[test]
    fn truncation_at_max_bytes() {
        let mut t = fake(vec![(
            200,
            Some("text/plain"),
            None,
            vec![b"0123456789", b"abcdef"],
        )]);
        let v = fetch_with(&mut t, &args("http://h/x", 12)).unwrap();
        assert_eq!(
            (v.text.as_str(), v.truncated, v.bytes),
            ("0123456789ab", true, 12)
        );
        assert!(render_text(&v).contains("content cut after 12 bytes"));
        // Exactly max_bytes long: not truncated.
        let mut t = fake(vec![(
            200,
            Some("text/plain"),
            None,
            vec![b"0123456789", b""],
        )]);
        let v = fetch_with(&mut t, &args("http://h/x", 10)).unwrap();
        assert!(!v.truncated);
        // A UTF-8 sequence cut by the limit is dropped, not garbled.
        let mut t = fake(vec![(
            200,
            Some("text/plain"),
            None,
            vec!["caf\u{e9}!".as_bytes()],
        )]);
        let v = fetch_with(&mut t, &args("http://h/x", 4)).unwrap();
        assert_eq!((v.text.as_str(), v.truncated), ("caf", true));
    }

    #[test]
    fn redirects() {
        let mut t = fake(vec![
            (301, Some("text/html"), Some("/moved"), vec![]),
            (302, None, Some("https://other.org/final?x=1"), vec![]),
            (200, Some("application/json"), None, vec![br#"{"a":1}"#]),
        ]);
        let v = fetch_with(&mut t, &args("http://h.com/start", 1000)).unwrap();
        assert_eq!(
            t.seen,
            vec![
                "http://h.com/start",
                "http://h.com/moved",
                "https://other.org/final?x=1"
            ]
        );
        assert_eq!(v.url, "https://other.org/final?x=1");
        assert_eq!(v.text, r#"{"a":1}"#);
        let loops = (0..=MAX_REDIRECTS)
            .map(|_| (302, None, Some("/again"), vec![]))
            .collect();
        let e = fetch_with(&mut fake(loops), &args("http://h.com/", 1000)).unwrap_err();
        assert_eq!(e.code, "too_many_redirects");
    }

    #[test]
    fn content_types() {
        let mut t = fake(vec![(200, Some("image/png"), None, vec![b"\x89PNG"])]);
        let e = fetch_with(&mut t, &args("http://h/x.png", 1000)).unwrap_err();
        assert_eq!(e.code, "unsupported_content");
        assert!(e.message.contains("image/png"));
        let mut t = fake(vec![(200, None, None, vec![b"<!DOCTYPE html><p>x</p>"])]);
        assert_eq!(
            fetch_with(&mut t, &args("http://h/", 1000)).unwrap().text,
            "x"
        );
        let mut t = fake(vec![(200, None, None, vec![b"\0\x01bin"])]);
        assert_eq!(
            fetch_with(&mut t, &args("http://h/", 1000))
                .unwrap_err()
                .code,
            "unsupported_content"
        );
        let mut t = fake(vec![(
            200,
            Some("text/plain; charset=ISO-8859-1"),
            None,
            vec![b"caf\xe9"],
        )]);
        assert_eq!(
            fetch_with(&mut t, &args("http://h/", 1000)).unwrap().text,
            "caf\u{e9}"
        );
        let mut t = fake(vec![(404, Some("text/plain"), None, vec![b"nope"])]);
        let v = fetch_with(&mut t, &args("http://h/", 1000)).unwrap();
        assert_eq!((v.status, v.text.as_str()), (404, "nope"));
        assert_eq!(classify(Some("application/vnd.api+json")), Kind::Text);
        assert_eq!(
            classify(Some("application/octet-stream")),
            Kind::Unsupported
        );
    }

    #[test]
    fn denied_and_invalid() {
        let mut t = fake(vec![]);
        t.deny = Some("example.com");
        let e = fetch_with(&mut t, &args("https://example.com/", 1000)).unwrap_err();
        assert_eq!(e.code, "network_denied");
        assert_eq!(e.message, "request to example.com:443 denied by policy");
        let e = fetch_with(&mut fake(vec![]), &args("ftp://x/", 1000)).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
        let e = fetch_with(&mut fake(vec![]), &args("http://x/", 0)).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
    }
}
