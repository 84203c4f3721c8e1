//! Who is calling toolhost over HTTP, and how much they may call.
//!
//! - [`Verifier`]: an OAuth 2.1 resource server as the MCP authorization
//!   spec describes it. It publishes Protected Resource Metadata (RFC 9728),
//!   answers a request without a valid token with `401` and
//!   `WWW-Authenticate: Bearer resource_metadata="…"`, and validates JWT
//!   access tokens against the issuer's JWKS (signature; `iss`; `aud` naming
//!   this server's resource URI; `exp` and `nbf`). The JWKS is fetched from
//!   the issuer's metadata, cached, and fetched again when a token names a
//!   key it does not hold (at most every [`JWKS_REFETCH`]).
//! - [`ScopeRules`]: which scope a tool needs. A token without the base
//!   scope gets `403`; a tool whose scope the token lacks is not listed, and
//!   calling it is `403 insufficient_scope` naming the scope.
//! - [`Quotas`]: per-principal bounds on calls at once and calls per minute.
//!
//! An [`Identity`] (the principal, `oauth:SUB`, and its scopes) is what the
//! rest of the server sees: it goes into the session log, the artifacts'
//! owner, the baseline handles and the quotas.

mod jwt;
pub mod quota;

pub use jwt::{MAX_TOKEN_BYTES, TokenError};
pub use quota::{Limits as QuotaLimits, QuotaRefusal, Quotas, Running};

use jwt::Jwk;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolhost_contract::clock::{Clock, SystemClock};
use toolhost_registry::http::{Http, Limits, Plain};

/// Shortest time between two JWKS fetches caused by unknown `kid`s.
pub const JWKS_REFETCH: Duration = Duration::from_secs(30);

/// How long a fetched JWKS is used before it is fetched again.
pub const JWKS_TTL: Duration = Duration::from_secs(600);

/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_S: u64 = 30;

/// Who a valid token says is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The principal: `oauth:` and the token's `sub` (or `client_id`).
    pub principal: String,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
}

impl Identity {
    /// Whether the token grants `scope`.
    pub fn has(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Which scope each tool needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeRules {
    /// Every request needs this scope (none: any valid token will do).
    pub base: Option<String>,
    /// Tools that need a scope of their own, besides the base one.
    pub tools: BTreeMap<String, String>,
}

impl ScopeRules {
    /// Parses `SCOPE=TOOL[,TOOL…]` (as `--oauth-tool-scope` gives it).
    pub fn add(&mut self, spec: &str) -> Result<(), String> {
        let (scope, tools) = spec
            .split_once('=')
            .ok_or_else(|| format!("`{spec}`: expected SCOPE=TOOL[,TOOL…]"))?;
        let scope = scope.trim();
        if scope.is_empty() || scope.contains(char::is_whitespace) {
            return Err(format!("`{spec}`: the scope must be one word"));
        }
        for tool in tools.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if let Some(other) = self.tools.insert(tool.to_owned(), scope.to_owned())
                && other != scope
            {
                return Err(format!(
                    "tool `{tool}` is given two scopes: `{other}` and `{scope}`"
                ));
            }
        }
        Ok(())
    }

    /// The scope `tool` needs beyond the base one, if any.
    pub fn for_tool(&self, tool: &str) -> Option<&str> {
        self.tools.get(tool).map(String::as_str)
    }

    /// Whether `who` may see and call `tool`.
    pub fn allows(&self, who: &Identity, tool: &str) -> bool {
        self.for_tool(tool).is_none_or(|s| who.has(s))
    }

    /// Every scope named, base first.
    pub fn all(&self) -> Vec<String> {
        let mut all: Vec<String> = self.base.iter().cloned().collect();
        for s in self.tools.values() {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        all
    }
}

/// How the resource server is set up.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier (exactly as its tokens
    /// say `iss`).
    pub issuer: String,
    /// This server's resource URI (tokens must name it in `aud`), e.g.
    /// `https://tools.example.com/mcp`.
    pub resource: String,
    /// The JWKS URL; `None`: from the issuer's metadata.
    pub jwks_uri: Option<String>,
    /// Scopes.
    pub scopes: ScopeRules,
}

/// A fetched key set.
struct KeySet {
    keys: Vec<Jwk>,
    fetched: Instant,
}

/// Validates access tokens; publishes the metadata. Share it behind an `Arc`.
pub struct Verifier {
    config: OAuthConfig,
    http: Http,
    keys: tokio::sync::RwLock<Option<KeySet>>,
    /// The last fetch (any cause), to space refetches.
    last_fetch: Mutex<Option<Instant>>,
    /// The JWKS URL once known.
    jwks_uri: tokio::sync::OnceCell<String>,
    /// What `exp` and `nbf` are checked against.
    clock: Arc<dyn Clock>,
}

/// Why a request is refused: the HTTP status and the `WWW-Authenticate`
/// header value to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` value.
    pub challenge: String,
    /// The body (a sentence).
    pub message: String,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// A verifier for `config` (nothing is fetched yet).
    pub fn new(config: OAuthConfig) -> Result<Verifier, String> {
        let http = Http::new(Limits {
            connect: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            total: Duration::from_secs(10),
            max_document: 1 << 20,
            max_blob: 1 << 20,
            ..Limits::default()
        })
        .map_err(|e| e.to_string())?;
        Ok(Verifier {
            config,
            http,
            keys: tokio::sync::RwLock::new(None),
            last_fetch: Mutex::new(None),
            jwks_uri: tokio::sync::OnceCell::new(),
            clock: SystemClock::shared(),
        })
    }

    /// The same verifier, checking times against `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Verifier {
        self.clock = clock;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The path this server's metadata is at (RFC 9728: the well-known
    /// prefix inserted before the resource's path).
    pub fn metadata_path(&self) -> String {
        let path = resource_path(&self.config.resource);
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The metadata's URL, as `WWW-Authenticate` names it.
    pub fn metadata_url(&self) -> String {
        let r = &self.config.resource;
        let origin_end = r
            .find("://")
            .and_then(|i| r[i + 3..].find('/').map(|j| i + 3 + j))
            .unwrap_or(r.len());
        format!("{}{}", &r[..origin_end], self.metadata_path())
    }

    /// The Protected Resource Metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.config.resource,
            "authorization_servers": [self.config.issuer],
            "scopes_supported": self.config.scopes.all(),
            "bearer_methods_supported": ["header"],
            "resource_name": "toolhost",
        })
    }

    /// `401`: no token, or an invalid one (`error`, when a token came).
    pub fn unauthorized(&self, error: Option<&TokenError>) -> Refusal {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        if let Some(base) = &self.config.scopes.base {
            challenge.push_str(&format!(", scope=\"{base}\""));
        }
        if let Some(e) = error {
            challenge.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                e.to_string().replace(['"', '\\'], "'")
            ));
        }
        Refusal {
            status: 401,
            challenge,
            message: match error {
                Some(e) => e.to_string(),
                None => "an access token is required (see the resource metadata)".into(),
            },
        }
    }

    /// `403 insufficient_scope`, naming `scope`.
    pub fn forbidden(&self, scope: &str, what: &str) -> Refusal {
        Refusal {
            status: 403,
            challenge: format!(
                "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\"",
                self.metadata_url()
            ),
            message: format!("{what} needs the scope `{scope}`"),
        }
    }

    /// Checks a request's `Authorization` header value (if any) and, when
    /// it names a tool call, the tool's scope. The identity, or why not.
    pub async fn check(
        &self,
        authorization: Option<&str>,
        tool: Option<&str>,
    ) -> Result<Identity, Refusal> {
        let Some(token) = authorization.and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
                .map(str::trim)
        }) else {
            return Err(self.unauthorized(None));
        };
        let who = self
            .verify(token)
            .await
            .map_err(|e| self.unauthorized(Some(&e)))?;
        if let Some(base) = &self.config.scopes.base
            && !who.has(base)
        {
            return Err(self.forbidden(base, "this server"));
        }
        if let Some(tool) = tool
            && let Some(scope) = self.config.scopes.for_tool(tool)
            && !who.has(scope)
        {
            return Err(self.forbidden(scope, &format!("the tool `{tool}`")));
        }
        Ok(who)
    }

    /// Validates `token`: signature with the issuer's key, then `iss`,
    /// `aud`, `exp`, `nbf`.
    pub async fn verify(&self, token: &str) -> Result<Identity, TokenError> {
        let parsed = jwt::parse(token)?;
        let alg = parsed.header.alg.as_str();
        if !jwt::accepted(alg) {
            return Err(TokenError::Algorithm(alg.to_owned()));
        }
        if let Some(typ) = &parsed.header.typ {
            let t = typ.to_ascii_lowercase();
            if t != "at+jwt" && t != "application/at+jwt" && t != "jwt" {
                return Err(TokenError::Malformed(format!(
                    "its type is `{typ}`, not an access token"
                )));
            }
        }
        let kid = parsed.header.kid.clone();
        let mut refreshed = false;
        loop {
            let outcome = {
                let keys = self.current_keys().await?;
                let guard = keys.read().await;
                let set = guard
                    .as_ref()
                    .map(|s| s.keys.as_slice())
                    .unwrap_or_default();
                let candidates: Vec<&Jwk> = set
                    .iter()
                    .filter(|k| k.fits(alg))
                    .filter(|k| kid.is_none() || k.kid == kid)
                    .collect();
                if candidates.is_empty() {
                    None
                } else {
                    Some(
                        candidates
                            .iter()
                            .any(|k| k.verify(alg, parsed.signed, &parsed.signature)),
                    )
                }
            };
            match outcome {
                Some(true) => break,
                Some(false) => return Err(TokenError::Signature),
                None if !refreshed && self.may_refetch() => {
                    refreshed = true;
                    self.fetch_keys().await?;
                }
                None => return Err(TokenError::UnknownKey(kid)),
            }
        }
        self.claims(&parsed.claims)
    }

    /// Checks the claims of a token whose signature verified.
    fn claims(&self, c: &Value) -> Result<Identity, TokenError> {
        let claim = |m: String| Err(TokenError::Claim(m));
        match c.get("iss").and_then(Value::as_str) {
            Some(iss) if iss == self.config.issuer => {}
            Some(iss) => return claim(format!("issuer is `{iss}`, not `{}`", self.config.issuer)),
            None => return claim("issuer (`iss`) is missing".into()),
        }
        let aud_ok = match c.get("aud") {
            Some(Value::String(a)) => *a == self.config.resource,
            Some(Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(&self.config.resource)),
            _ => false,
        };
        if !aud_ok {
            return claim(format!(
                "audience (`aud`) does not name this server's resource `{}`",
                self.config.resource
            ));
        }
        let now = self.clock.wall_ms() / 1000;
        match c.get("exp").and_then(Value::as_u64) {
            Some(exp) if exp + LEEWAY_S > now => {}
            Some(_) => return claim("expiry (`exp`) has passed".into()),
            None => return claim("expiry (`exp`) is missing".into()),
        }
        if let Some(nbf) = c.get("nbf").and_then(Value::as_u64)
            && nbf > now + LEEWAY_S
        {
            return claim("`nbf` is in the future".into());
        }
        let subject = c
            .get("sub")
            .or_else(|| c.get("client_id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && s.len() <= 256);
        let Some(subject) = subject else {
            return claim("subject (`sub` or `client_id`) is missing".into());
        };
        let scopes = match (c.get("scope"), c.get("scp")) {
            (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_owned).collect(),
            (_, Some(Value::Array(a))) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Ok(Identity {
            principal: format!("oauth:{subject}"),
            scopes,
        })
    }

    /// Whether a refetch for an unknown key is allowed now.
    fn may_refetch(&self) -> bool {
        let last = *self.last_fetch.lock().unwrap_or_else(|e| e.into_inner());
        last.is_none_or(|t| t.elapsed() >= JWKS_REFETCH)
    }

    /// The key set, fetched first when there is none or it is too old.
    async fn current_keys(&self) -> Result<&tokio::sync::RwLock<Option<KeySet>>, TokenError> {
        let stale = self
            .keys
            .read()
            .await
            .as_ref()
            .is_none_or(|s| s.fetched.elapsed() >= JWKS_TTL);
        if stale {
            self.fetch_keys().await?;
        }
        Ok(&self.keys)
    }

    /// Fetches the JWKS (its URL first, from the issuer's metadata).
    async fn fetch_keys(&self) -> Result<(), TokenError> {
        *self.last_fetch.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let uri = self
            .jwks_uri
            .get_or_try_init(|| async {
                match &self.config.jwks_uri {
                    Some(u) => Ok(u.clone()),
                    None => self.discover_jwks_uri().await,
                }
            })
            .await?
            .clone();
        let doc = self.get_json(&uri).await?;
        let keys: Vec<Jwk> = doc
            .get("keys")
            .and_then(Value::as_array)
            .map(|ks| ks.iter().filter_map(Jwk::from_json).collect())
            .unwrap_or_default();
        if keys.is_empty() {
            return Err(TokenError::Keys(format!(
                "{uri} holds no usable signing key"
            )));
        }
        tracing::info!(keys = keys.len(), %uri, "fetched the issuer's keys");
        *self.keys.write().await = Some(KeySet {
            keys,
            fetched: Instant::now(),
        });
        Ok(())
    }

    /// The issuer's `jwks_uri`, from its OAuth or OpenID metadata.
    async fn discover_jwks_uri(&self) -> Result<String, TokenError> {
        let issuer = self.config.issuer.trim_end_matches('/');
        let mut last = String::new();
        for well_known in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ] {
            match self.get_json(&format!("{issuer}{well_known}")).await {
                Ok(doc) => {
                    if doc.get("issuer").and_then(Value::as_str)
                        != Some(self.config.issuer.as_str())
                    {
                        last = format!("{issuer}{well_known} names another issuer");
                        continue;
                    }
                    if let Some(u) = doc.get("jwks_uri").and_then(Value::as_str) {
                        return Ok(u.to_owned());
                    }
                    last = format!("{issuer}{well_known} has no jwks_uri");
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(TokenError::Keys(last))
    }

    /// GETs a JSON document (plain HTTP only on loopback).
    async fn get_json(&self, url: &str) -> Result<Value, TokenError> {
        let plain = if is_loopback_url(url) {
            Plain::Allowed
        } else {
            Plain::Refused
        };
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        let response = self
            .http
            .send(http::Method::GET, url, &headers, bytes::Bytes::new(), plain)
            .await
            .map_err(|e| TokenError::Keys(e.to_string()))?;
        if !response.status.is_success() {
            return Err(TokenError::Keys(format!(
                "{url} answered {}",
                response.status
            )));
        }
        let body = response
            .document()
            .await
            .map_err(|e| TokenError::Keys(e.to_string()))?;
        serde_json::from_slice(&body).map_err(|e| TokenError::Keys(format!("{url}: {e}")))
    }
}

/// The path of a URL (`/` when it has none).
fn resource_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) if rest[i..] != *"/" => rest[i..].split(['?', '#']).next().unwrap_or(""),
        _ => "",
    }
}

/// Whether `url` is plain HTTP to this machine (as registries may be).
fn is_loopback_url(url: &str) -> bool {
    use toolhost_toolbox_file::remote::{host_of, is_loopback_host};
    url.strip_prefix("http://")
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .is_some_and(|authority| is_loopback_host(host_of(authority)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier(resource: &str) -> Verifier {
        let mut scopes = ScopeRules {
            base: Some("mcp:tools".into()),
            ..ScopeRules::default()
        };
        scopes.add("mcp:write=edit,write").expect("rule");
        Verifier::new(OAuthConfig {
            issuer: "http://127.0.0.1:9/".into(),
            resource: resource.into(),
            jwks_uri: Some("http://127.0.0.1:9/jwks".into()),
            scopes,
        })
        .expect("verifier")
    }

    #[test]
    fn the_metadata_is_where_rfc_9728_puts_it() {
        let v = verifier("http://127.0.0.1:8080/mcp");
        assert_eq!(
            v.metadata_path(),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            v.metadata_url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            v.metadata()["scopes_supported"],
            json!(["mcp:tools", "mcp:write"])
        );
        let root = verifier("https://tools.example.com");
        assert_eq!(
            root.metadata_path(),
            "/.well-known/oauth-protected-resource"
        );
        let r = v.unauthorized(None);
        assert_eq!(r.status, 401);
        assert!(r.challenge.starts_with(
            "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp\""
        ));
    }

    #[test]
    fn scope_rules_parse_and_apply() {
        let mut s = ScopeRules::default();
        assert!(s.add("mcp:write=edit, write").is_ok());
        assert!(s.add("nope").is_err());
        assert!(s.add("other=edit").is_err(), "one scope per tool");
        let who = Identity {
            principal: "oauth:a".into(),
            scopes: vec!["mcp:tools".into()],
        };
        assert!(s.allows(&who, "read"));
        assert!(!s.allows(&who, "edit"));
    }

    #[tokio::test]
    async fn malformed_and_unsigned_tokens_are_refused_before_any_key() {
        let v = verifier("http://127.0.0.1:8080/mcp");
        for t in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.!!.!!",
            &"a".repeat(MAX_TOKEN_BYTES + 1),
        ] {
            assert!(
                matches!(v.verify(t).await, Err(TokenError::Malformed(_))),
                "{t:.20}"
            );
        }
        let b = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        for alg in ["none", "HS256"] {
            let t = format!("{}.{}.", b(json!({"alg": alg})), b(json!({"sub": "x"})));
            assert_eq!(v.verify(&t).await, Err(TokenError::Algorithm(alg.into())));
        }
        // A well-formed RS256 token, and no reachable issuer: its keys cannot be fetched.
        let t = format!(
            "{}.{}.AAAA",
            b(json!({"alg": "RS256"})),
            b(json!({"sub": "x"}))
        );
        assert!(matches!(v.verify(&t).await, Err(TokenError::Keys(_))));
    }
}
