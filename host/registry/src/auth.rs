//! Credentials for a registry, from where users already keep them: the
//! environment variable a toolbox names for the registry (`auth_env`),
//! then `~/.docker/config.json` (`$DOCKER_CONFIG/config.json`), the file
//! every OCI tool reads. And the two challenges a registry answers `401`
//! with: `Basic` (send the credentials) and `Bearer` (trade them, or
//! nothing, for a token at the realm it names).

use base64::Engine as _;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to present to a registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A user name and password (or access token).
    Basic {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
    /// A bearer token, sent as is.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    /// Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Basic { user, .. } => write!(f, "Basic({user}, …)"),
            Credentials::Bearer(_) => f.write_str("Bearer(…)"),
        }
    }
}

impl Credentials {
    /// The `Authorization` header value.
    pub fn header(&self) -> String {
        match self {
            Credentials::Basic { user, password } => format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            ),
            Credentials::Bearer(token) => format!("Bearer {token}"),
        }
    }

    /// Parses `user:password` or `Bearer TOKEN` (an environment variable's value).
    pub fn parse(value: &str) -> Option<Credentials> {
        let value = value.trim();
        if let Some(token) = value.strip_prefix("Bearer ") {
            return (!token.is_empty()).then(|| Credentials::Bearer(token.trim().to_owned()));
        }
        let (user, password) = value.split_once(':')?;
        Some(Credentials::Basic {
            user: user.to_owned(),
            password: password.to_owned(),
        })
    }
}

/// Where credentials were looked for, for an error that says so.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    /// The credentials found, if any.
    pub found: Option<Credentials>,
    /// Where they came from, or where they were looked for.
    pub whence: String,
}

/// The credentials for `registry`: `env_var` (when the toolbox names one and
/// it is set), else the Docker configuration file's `auths` entry.
pub fn credentials(registry: &str, env_var: Option<&str>) -> Lookup {
    let mut looked = Vec::new();
    if let Some(var) = env_var {
        match std::env::var(var) {
            Ok(v) => match Credentials::parse(&v) {
                Some(c) => {
                    return Lookup {
                        found: Some(c),
                        whence: format!("${var}"),
                    };
                }
                None => looked.push(format!(
                    "${var} (set, but neither `user:password` nor `Bearer TOKEN`)"
                )),
            },
            Err(_) => looked.push(format!("${var} (not set)")),
        }
    }
    let path = docker_config_path();
    match path.as_ref().map(std::fs::read_to_string) {
        Some(Ok(text)) => {
            let p = path
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string());
            match docker_auth(&text, registry) {
                Ok(Some(c)) => {
                    return Lookup {
                        found: Some(c),
                        whence: p,
                    };
                }
                Ok(None) => looked.push(format!("{p} (no entry for {registry})")),
                Err(why) => looked.push(format!("{p} ({why})")),
            }
        }
        Some(Err(_)) | None => looked.push(path.map_or_else(
            || "~/.docker/config.json (no HOME)".to_owned(),
            |p| format!("{} (absent)", p.display()),
        )),
    }
    Lookup {
        found: None,
        whence: looked.join(", "),
    }
}

/// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn docker_config_path() -> Option<PathBuf> {
    std::env::var_os("DOCKER_CONFIG")
        .map(|d| PathBuf::from(d).join("config.json"))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker/config.json")))
}

#[derive(serde::Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
    #[serde(rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(rename = "credHelpers", default)]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(serde::Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    #[serde(rename = "registrytoken")]
    registry_token: Option<String>,
}

/// The credentials the Docker configuration file holds for `registry`.
fn docker_auth(text: &str, registry: &str) -> Result<Option<Credentials>, String> {
    let config: DockerConfig =
        serde_json::from_str(text).map_err(|e| format!("not a Docker configuration: {e}"))?;
    // Entries are keyed by `host[:port]`, sometimes as a URL.
    let entry = config.auths.iter().find(|(k, _)| {
        let k = k
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        k.split('/').next() == Some(registry)
    });
    if let Some((_, a)) = entry {
        if let Some(token) = &a.registry_token {
            return Ok(Some(Credentials::Bearer(token.clone())));
        }
        if let (Some(user), Some(password)) = (&a.username, &a.password) {
            return Ok(Some(Credentials::Basic {
                user: user.clone(),
                password: password.clone(),
            }));
        }
        if let Some(auth) = &a.auth {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|_| format!("its `auth` for {registry} is not base64"))?;
            let text = String::from_utf8(decoded)
                .map_err(|_| format!("its `auth` for {registry} is not UTF-8"))?;
            return Credentials::parse(&text)
                .map(Some)
                .ok_or_else(|| format!("its `auth` for {registry} is not `user:password`"));
        }
    }
    if let Some(helper) = config
        .cred_helpers
        .get(registry)
        .or(config.creds_store.as_ref())
    {
        return Err(format!(
            "credentials for {registry} are kept by the credential helper `docker-credential-{helper}`, which toolhost does not run; name an environment variable with `auth_env` in the toolbox's [registries.\"{registry}\"]"
        ));
    }
    Ok(None)
}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// Send credentials with Basic.
    Basic,
    /// Get a token at `realm` (for `service` and `scope`).
    Bearer {
        /// The token endpoint.
        realm: String,
        /// The service the token is for.
        service: Option<String>,
        /// The scope asked.
        scope: Option<String>,
    },
}

/// Parses a `WWW-Authenticate` header value.
pub fn challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut fields = BTreeMap::new();
    let mut rest = params;
    while let Some((key, after)) = rest.split_once('=') {
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            }
        };
        fields.insert(key, value.to_owned());
        rest = next;
    }
    Some(Challenge::Bearer {
        realm: fields.remove("realm")?,
        service: fields.remove("service"),
        scope: fields.remove("scope"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        assert_eq!(
            challenge("Basic realm=\"Registry\""),
            Some(Challenge::Basic)
        );
        assert_eq!(
            challenge(
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:a/b:pull".into()),
            })
        );
        assert_eq!(challenge("Bearer service=\"x\""), None);
        assert_eq!(challenge("Negotiate abc"), None);
    }

    #[test]
    fn docker_config_entries() {
        let text = r#"{"auths": {
            "127.0.0.1:5000": {"auth": "YWxpY2U6czNjcmV0"},
            "https://ghcr.io/v2/": {"username": "bob", "password": "pw"}
        }, "credHelpers": {"gcr.io": "gcloud"}}"#;
        assert_eq!(
            docker_auth(text, "127.0.0.1:5000").expect("reads"),
            Some(Credentials::Basic {
                user: "alice".into(),
                password: "s3cret".into()
            })
        );
        assert_eq!(
            docker_auth(text, "ghcr.io").expect("reads"),
            Some(Credentials::Basic {
                user: "bob".into(),
                password: "pw".into()
            })
        );
        assert_eq!(docker_auth(text, "quay.io").expect("reads"), None);
        assert!(
            docker_auth(text, "gcr.io")
                .expect_err("a helper")
                .contains("auth_env")
        );
    }

    #[test]
    fn credentials_never_print_their_secret() {
        let c = Credentials::parse("alice:s3cret").expect("parses");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert_eq!(c.header(), "Basic YWxpY2U6czNjcmV0");
        assert_eq!(
            Credentials::parse("Bearer tok").map(|c| c.header()),
            Some("Bearer tok".into())
        );
    }
}
