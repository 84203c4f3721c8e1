//! Where a remote component comes from: an OCI reference
//! (`oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`) or an HTTPS URL
//! pinned by its digest, and the content digests that pin them. Parsing
//! only: nothing here touches the network.

use std::fmt;

/// A content digest: `sha256:` and 64 lowercase hexadecimal digits, the
/// only algorithm toolhost pins with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Parses `sha256:` and 64 lowercase hex digits.
    pub fn parse(text: &str) -> Result<Digest, String> {
        let Some(hex) = text.strip_prefix("sha256:") else {
            return Err(format!(
                "`{}` is not a digest: expected `sha256:` and 64 hex digits",
                clip(text)
            ));
        };
        if !toolhost_contract::is_hex(hex, 64) {
            return Err(format!(
                "`{}` is not a sha256 digest: expected 64 lowercase hex digits after `sha256:`",
                clip(text)
            ));
        }
        Ok(Digest(text.to_owned()))
    }

    /// The digest of `hex`, 64 lowercase hexadecimal digits of a SHA-256.
    pub fn from_sha256_hex(hex: &str) -> Result<Digest, String> {
        Digest::parse(&format!("sha256:{hex}"))
    }

    /// The digest whose SHA-256 is `sha256`.
    pub fn from_sha256(sha256: [u8; 32]) -> Digest {
        let mut text = String::with_capacity(71);
        text.push_str("sha256:");
        for b in sha256 {
            text.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            text.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        }
        Digest(text)
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// `sha256:…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What starts an OCI source.
pub const OCI_SCHEME: &str = "oci://";

/// An OCI artifact: a registry, a repository, and a tag, a digest or both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OciRef {
    /// `host` or `host:port` (always named: there is no default registry).
    pub registry: String,
    /// `name/space/repo`, lowercase.
    pub repository: String,
    /// The tag, when the reference names one.
    pub tag: Option<String>,
    /// The manifest digest, when the reference pins one.
    pub digest: Option<Digest>,
}

impl OciRef {
    /// Parses `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]` (a tag, a
    /// digest, or both).
    pub fn parse(text: &str) -> Result<OciRef, String> {
        let rest = text
            .strip_prefix(OCI_SCHEME)
            .ok_or_else(|| format!("`{}` does not start with `{OCI_SCHEME}`", clip(text)))?;
        let (registry, path) = rest.split_once('/').ok_or_else(|| {
            format!(
                "`{}` names no repository: write oci://REGISTRY/REPOSITORY:TAG",
                clip(text)
            )
        })?;
        check_registry(registry)?;
        let (name, digest) = match path.split_once('@') {
            Some((name, digest)) => (name, Some(Digest::parse(digest)?)),
            None => (path, None),
        };
        // A tag follows the last `:` of the last path component.
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match name[last_slash..].rfind(':') {
            Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
            None => (name, None),
        };
        check_repository(repository)?;
        if let Some(tag) = tag {
            check_tag(tag)?;
        }
        if tag.is_none() && digest.is_none() {
            return Err(format!(
                "`{}` names neither a tag nor a digest: add `:TAG` or `@sha256:…`",
                clip(text)
            ));
        }
        Ok(OciRef {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// The registry's host, without its port.
    pub fn host(&self) -> &str {
        host_of(&self.registry)
    }

    /// Whether the registry is on this machine (`localhost`, `127.0.0.0/8`,
    /// `::1`): plain HTTP is allowed there without marking it `insecure`.
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(self.host())
    }

    /// `REGISTRY/REPOSITORY`, what trust rules are matched against.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The same artifact pinned to `digest` (the tag kept, for messages).
    pub fn pinned(&self, digest: Digest) -> OciRef {
        OciRef {
            digest: Some(digest),
            ..self.clone()
        }
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OCI_SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// The host of `host[:port]` (a bracketed IPv6 address keeps no brackets).
pub fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// Whether `host` is this machine.
pub fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn check_registry(registry: &str) -> Result<(), String> {
    let valid = !registry.is_empty()
        && registry.len() <= 255
        && registry
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
    if !valid {
        return Err(format!(
            "`{}` is not a registry: expected HOST or HOST:PORT",
            clip(registry)
        ));
    }
    Ok(())
}

/// Repository names as the OCI distribution spec has them: path
/// components of `[a-z0-9]+` joined by `.`, `_`, `__` or `-`s.
fn check_repository(repository: &str) -> Result<(), String> {
    let component_ok = |c: &str| {
        let b = c.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || b"._-".contains(x))
    };
    if repository.is_empty() || repository.len() > 255 || !repository.split('/').all(component_ok) {
        return Err(format!(
            "`{}` is not a repository name: lowercase letters and digits in `/`-separated parts (`.`, `_` and `-` between them)",
            clip(repository)
        ));
    }
    Ok(())
}

/// Tags: `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), String> {
    let b = tag.as_bytes();
    let valid = !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|x| x.is_ascii_alphanumeric() || b"._-".contains(x));
    if !valid {
        return Err(format!(
            "`{}` is not a tag: letters, digits, `_`, `.` and `-`, at most 128",
            clip(tag)
        ));
    }
    Ok(())
}

/// At most 80 characters of `text`, for messages.
fn clip(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_parse_and_print_back() {
        for text in [
            "oci://ghcr.io/acme/csv:1.2",
            "oci://127.0.0.1:5000/tools/hello:v1",
            &format!("oci://localhost:5000/a/b/c@{D}"),
            &format!("oci://registry.example.com/x:latest@{D}"),
        ] {
            let r = OciRef::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(r.to_string(), text);
        }
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/hello:v1").expect("parses");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "tools/hello", Some("v1"))
        );
        assert!(r.is_loopback());
        assert_eq!(r.name(), "127.0.0.1:5000/tools/hello");
        assert!(
            !OciRef::parse("oci://ghcr.io/a:1")
                .expect("parses")
                .is_loopback()
        );
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        for (text, says) in [
            ("ghcr.io/a:1", "does not start with"),
            ("oci://ghcr.io", "names no repository"),
            ("oci://ghcr.io/acme/csv", "neither a tag nor a digest"),
            ("oci://ghcr.io/Acme/csv:1", "not a repository name"),
            ("oci://ghcr.io/acme//csv:1", "not a repository name"),
            ("oci://ghcr.io/acme/csv:", "not a tag"),
            ("oci://ghcr.io/acme/csv:-x", "not a tag"),
            ("oci://ghcr.io/acme/csv@sha256:abc", "not a sha256 digest"),
            ("oci://ghcr.io/acme/csv@md5:abc", "not a digest"),
            ("oci://gh cr.io/acme/csv:1", "not a registry"),
        ] {
            let e = OciRef::parse(text).expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn digests_are_lowercase_sha256() {
        let d = Digest::parse(D).expect("valid");
        assert_eq!(d.hex().len(), 64);
        assert!(Digest::parse(&D.to_uppercase()).is_err());
        assert!(Digest::parse("sha512:00").is_err());
        assert_eq!(Digest::from_sha256_hex(d.hex()).expect("valid"), d);
        let mut raw = [0u8; 32];
        raw[0] = 0xab;
        raw[31] = 0x01;
        let d = Digest::from_sha256(raw);
        assert_eq!(Digest::parse(d.as_str()).expect("valid"), d);
        assert!(d.hex().starts_with("ab00") && d.hex().ends_with("0001"));
    }

    #[test]
    fn loopback_hosts() {
        assert_eq!(host_of("127.0.0.1:5000"), "127.0.0.1");
        assert_eq!(host_of("[::1]:5000"), "::1");
        assert_eq!(host_of("ghcr.io"), "ghcr.io");
        for h in ["localhost", "127.0.0.1", "127.1.2.3", "::1"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["ghcr.io", "10.0.0.1", "localhost.evil.com"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
