//! Just enough URL handling for HTTP(S) GET requests: parsing into scheme,
//! authority and path-with-query, and resolving redirect locations.

use std::fmt;

/// An `http` or `https` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// True for `https`.
    pub https: bool,
    /// Host name (lowercase) or IP address (IPv6 in brackets).
    pub host: String,
    /// Explicit port, if any.
    pub port: Option<u16>,
    /// Path and query, starting with `/`; the fragment is dropped.
    pub path_query: String,
}

impl Url {
    /// Parses an absolute `http://` or `https://` URL.
    pub fn parse(input: &str) -> Result<Url, String> {
        let input = input.trim();
        let (scheme, rest) = input
            .split_once("://")
            .ok_or_else(|| format!("{input:?} is not an absolute http(s) URL"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            other => {
                return Err(format!(
                    "unsupported URL scheme {other:?}: only http and https are supported"
                ));
            }
        };
        let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(auth_end);
        if authority.contains('@') {
            return Err("URLs with credentials (user@host) are not supported".into());
        }
        let (host, port) = split_host_port(authority)?;
        let tail = tail.split('#').next().unwrap_or("");
        let path_query = if tail.starts_with('/') {
            tail.to_string()
        } else {
            format!("/{tail}")
        };
        Ok(Url {
            https,
            host,
            port,
            path_query: encode_path(&path_query),
        })
    }

    /// The port, explicit or the scheme's default.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(if self.https { 443 } else { 80 })
    }

    /// `host` or `host:port` as given.
    pub fn authority(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.host),
            None => self.host.clone(),
        }
    }

    /// Resolves a `Location` header value against this URL.
    pub fn join(&self, location: &str) -> Result<Url, String> {
        let location = location.trim();
        let scheme_end = location.find("://");
        let first_sep = location.find(['/', '?', '#']);
        if scheme_end.is_some_and(|s| first_sep.is_none_or(|f| s < f)) {
            return Url::parse(location);
        }
        let scheme = if self.https { "https" } else { "http" };
        if let Some(rest) = location.strip_prefix("//") {
            return Url::parse(&format!("{scheme}://{rest}"));
        }
        let base_path = self.path_query.split('?').next().unwrap_or("/");
        let path = if location.starts_with('/') {
            location.to_string()
        } else if location.starts_with('?') {
            format!("{base_path}{location}")
        } else if location.is_empty() || location.starts_with('#') {
            self.path_query.clone()
        } else {
            let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{location}")
        };
        Url::parse(&format!(
            "{scheme}://{}{}",
            self.authority(),
            remove_dot_segments(&path)
        ))
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority(), self.path_query)
    }
}

fn split_host_port(authority: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let close = v6.find(']').ok_or("unterminated IPv6 address in URL")?;
        let host = &authority[..close + 2];
        let after = &v6[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("invalid authority {authority:?}")),
        };
        if !v6[..close]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return Err(format!("invalid IPv6 address {host:?}"));
        }
        (host.to_string(), port)
    } else {
        let (h, p) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if !h.is_ascii() {
            return Err(format!(
                "host {h:?} is not ASCII: give internationalized domain names in punycode (xn--…)"
            ));
        }
        if !h
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        {
            return Err(format!("invalid host name {h:?}"));
        }
        (h.to_ascii_lowercase(), p)
    };
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&n| n != 0)
                .ok_or_else(|| format!("invalid port {p:?}"))?,
        ),
    };
    Ok((host, port))
}

/// Percent-encodes the bytes that may not appear in a request target.
fn encode_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        if b <= 0x20
            || b >= 0x7f
            || matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
        {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

/// RFC 3986 section 5.2.4, on the path part (the query is left alone).
fn remove_dot_segments(path_query: &str) -> String {
    let (path, query) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_query, None),
    };
    let mut segments: Vec<&str> = vec![];
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    for (i, seg) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match *seg {
            "." => {
                if last {
                    segments.push("");
                }
            }
            ".." => {
                segments.pop();
                if last {
                    segments.push("");
                }
            }
            s => segments.push(s),
        }
    }
    let mut out = format!("/{}", segments.join("/"));
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        let u = Url::parse("https://Example.COM/a/b?x=1#frag").unwrap();
        assert_eq!(
            u,
            Url {
                https: true,
                host: "example.com".into(),
                port: None,
                path_query: "/a/b?x=1".into()
            }
        );
        assert_eq!(u.port_or_default(), 443);
        assert_eq!(u.to_string(), "https://example.com/a/b?x=1");
        let u = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((u.port, u.path_query.as_str()), (Some(8080), "/"));
        assert_eq!(u.authority(), "127.0.0.1:8080");
        let u = Url::parse("http://h?q").unwrap();
        assert_eq!(u.path_query, "/?q");
        let u = Url::parse("http://[::1]:81/x y").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path_query.as_str()),
            ("[::1]", Some(81), "/x%20y")
        );
        let u = Url::parse("http://h/caf\u{e9}").unwrap();
        assert_eq!(u.path_query, "/caf%C3%A9");
        for bad in [
            "ftp://x/",
            "example.com",
            "http://",
            "http://u:p@h/",
            "http://h:99999/",
            "http://bad host/",
            "http://caf\u{e9}.fr/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn join() {
        let base = Url::parse("https://h.com/a/b/c?q=1").unwrap();
        let j = |l: &str| base.join(l).unwrap().to_string();
        assert_eq!(j("http://o.org/x"), "http://o.org/x");
        assert_eq!(j("//cdn.h.com/y"), "https://cdn.h.com/y");
        assert_eq!(j("/root"), "https://h.com/root");
        assert_eq!(j("d"), "https://h.com/a/b/d");
        assert_eq!(j("../d?z"), "https://h.com/a/d?z");
        assert_eq!(j("./"), "https://h.com/a/b/");
        assert_eq!(j("?p=2"), "https://h.com/a/b/c?p=2");
        assert_eq!(j("/x/../../y"), "https://h.com/y");
    }
}
