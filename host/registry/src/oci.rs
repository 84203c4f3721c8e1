//! The OCI distribution protocol, as much of it as a component needs:
//! resolve a reference to its manifest, pull the one Wasm layer into the
//! store, push a component as an artifact (the CNCF TAG Runtime layout:
//! config `application/vnd.wasm.config.v0+json`, one `application/wasm`
//! layer), and read the referrers and tags signatures hang on.

use crate::RegistryError;
use crate::auth::{self, Challenge, Credentials};
use crate::http::{Fetch, Http, Limits, Plain, Response};
use crate::store::{Store, digest_of};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use toolhost_toolbox_file::{Digest, OciRef, RegistrySettings};

/// The config media type of a Wasm artifact (CNCF TAG Runtime).
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";

/// Layer media types accepted as the component: the CNCF layout's, and the
/// older ones `wkg` and earlier tools pushed.
pub const WASM_LAYERS: &[&str] = &[
    "application/wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
    "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm",
    "application/vnd.module.wasm.content.layer.v1+wasm",
];

/// An OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// A Docker v2 manifest (some tools convert to it).
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Indexes (multi-platform): not a component.
const INDEXES: &[&str] = &[
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// A manifest, as much of it as toolhost reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// The manifest's own media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The artifact's type (OCI 1.1), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// What this manifest refers to (a signature's subject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    /// Free-form annotations (version, description, tools…).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A content descriptor.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type.
    pub media_type: String,
    /// Its digest.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The artifact type of what it points at (in a referrers index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

/// A reference resolved to its manifest.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The manifest's digest: what a tag named when it was asked.
    pub digest: Digest,
    /// The manifest's bytes, as served (and hashed).
    pub bytes: Vec<u8>,
    /// The manifest.
    pub manifest: Manifest,
}

/// A component pulled into the store.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest's digest.
    pub manifest: Digest,
    /// The component's digest (its bytes are in the store).
    pub component: Digest,
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// A blob to fetch, and the size its manifest declares: what bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blob {
    /// A component (a manifest's Wasm layer): up to `Limits::max_blob`,
    /// its deadline longer by the time its size takes at the minimum rate.
    Component(u64),
    /// A Sigstore bundle (a signature's layer): a document, up to
    /// `Limits::max_document`, within the plain deadline.
    Signature(u64),
}

/// A registry client for a toolbox: its per-registry settings, tokens kept
/// for the process.
pub struct Client {
    http: Http,
    registries: BTreeMap<String, RegistrySettings>,
    /// Bearer tokens and Basic credentials by registry and scope.
    auth: Mutex<HashMap<(String, String), String>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("registries", &self.registries)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for registries with these settings, within `limits`.
    pub fn new(
        registries: BTreeMap<String, RegistrySettings>,
        limits: Limits,
    ) -> Result<Client, RegistryError> {
        Ok(Client {
            http: Http::new(limits)?,
            registries,
            auth: Mutex::new(HashMap::new()),
        })
    }

    /// The HTTP client (for pinned HTTPS downloads).
    pub fn http(&self) -> &Http {
        &self.http
    }

    fn settings(&self, registry: &str) -> RegistrySettings {
        self.registries.get(registry).cloned().unwrap_or_default()
    }

    /// The limits for `registry`: the client's, with the deadline and the
    /// minimum rate its table sets.
    pub fn limits_for(&self, registry: &str) -> Limits {
        let settings = self.settings(registry);
        let mut limits = self.http.limits();
        if let Some(d) = settings.deadline {
            limits.total = d;
        }
        if let Some(r) = settings.min_rate {
            limits.min_rate = r;
        }
        limits
    }

    /// A fetch of `what` from `r`'s registry, within its limits.
    fn fetch_of(&self, r: &OciRef, what: String) -> Fetch {
        Fetch::new(r.registry.clone(), what, &self.limits_for(&r.registry))
            .configured_in(format!("[registries.\"{}\"]", r.registry))
    }

    /// `http` for loopback and `insecure` registries, else `https`.
    fn scheme(&self, r: &OciRef) -> (&'static str, Plain) {
        if r.is_loopback() || self.settings(&r.registry).insecure {
            ("http", Plain::Allowed)
        } else {
            ("https", Plain::Refused)
        }
    }

    /// A request to `/v2/REPOSITORY/PATH`, with the credentials the
    /// registry asks for (`push`: the scope includes pushing), as part of
    /// `fetch` (the token and the retry with it too).
    #[allow(clippy::too_many_arguments)]
    async fn request(
        &self,
        fetch: &Fetch,
        r: &OciRef,
        method: Method,
        path: &str,
        mut headers: HeaderMap,
        body: Bytes,
        push: bool,
    ) -> Result<Response, RegistryError> {
        let (scheme, plain) = self.scheme(r);
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_owned()
        } else {
            format!("{scheme}://{}/v2/{}/{path}", r.registry, r.repository)
        };
        let scope = format!(
            "repository:{}:{}",
            r.repository,
            if push { "pull,push" } else { "pull" }
        );
        let key = (r.registry.clone(), scope.clone());
        let known = self
            .auth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .cloned();
        if let Some(value) = &known
            && let Ok(v) = HeaderValue::from_str(value)
        {
            headers.insert(http::header::AUTHORIZATION, v);
        }
        let response = self
            .http
            .send_within(fetch, method.clone(), &url, &headers, body.clone(), plain)
            .await?;
        if response.status != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        // Asked for credentials: answer the challenge once.
        let settings = self.settings(&r.registry);
        let creds = auth::credentials(&r.registry, settings.auth_env.as_deref());
        let header = response
            .headers
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let denied = |reason: String| RegistryError::Auth {
            registry: r.registry.clone(),
            reason,
            whence: creds.whence.clone(),
        };
        if known.is_some() {
            return Err(denied("the registry refused the credentials (401)".into()));
        }
        let value = match auth::challenge(&header) {
            Some(Challenge::Basic) => match &creds.found {
                Some(c @ Credentials::Basic { .. }) => c.header(),
                Some(Credentials::Bearer(_)) => {
                    return Err(denied(
                        "the registry asks for a user name and password (Basic), and only a bearer token was found".into(),
                    ));
                }
                None => {
                    return Err(denied(
                        "the registry needs credentials (401, Basic) and none were found".into(),
                    ));
                }
            },
            Some(Challenge::Bearer {
                realm,
                service,
                scope: asked,
            }) => {
                if let Some(Credentials::Bearer(token)) = &creds.found {
                    format!("Bearer {token}")
                } else {
                    let token = self
                        .token(
                            fetch,
                            &realm,
                            service.as_deref(),
                            asked.as_deref().unwrap_or(&scope),
                            creds.found.as_ref(),
                            plain,
                        )
                        .await
                        .map_err(|e| match e {
                            RegistryError::Status {
                                status: 401 | 403,
                                reason,
                                ..
                            } => denied(format!("the token service at {realm} refused: {reason}")),
                            other => other,
                        })?;
                    format!("Bearer {token}")
                }
            }
            None => {
                return Err(denied(format!(
                    "the registry needs credentials (401) with an unknown challenge `{header}`"
                )));
            }
        };
        self.auth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, value.clone());
        let mut headers = headers;
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(http::header::AUTHORIZATION, v);
        }
        let response = self
            .http
            .send_within(fetch, method, &url, &headers, body, plain)
            .await?;
        if response.status == StatusCode::UNAUTHORIZED {
            return Err(denied("the registry refused the credentials (401)".into()));
        }
        Ok(response)
    }

    /// A bearer token from the registry's token service, as part of
    /// `fetch` (what needs it).
    async fn token(
        &self,
        fetch: &Fetch,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        creds: Option<&Credentials>,
        plain: Plain,
    ) -> Result<String, RegistryError> {
        let mut url = format!("{realm}?scope={}", encode(scope));
        if let Some(s) = service {
            url.push_str(&format!("&service={}", encode(s)));
        }
        let mut headers = HeaderMap::new();
        if let Some(c) = creds
            && let Ok(v) = HeaderValue::from_str(&c.header())
        {
            headers.insert(http::header::AUTHORIZATION, v);
        }
        // The token service of a local registry may be plain too.
        let plain = if auth_is_local(realm) {
            Plain::Allowed
        } else {
            plain
        };
        let fetch = fetch.part(format!("a token for {} from {realm}", fetch.what()));
        let response = self
            .http
            .send_within(&fetch, Method::GET, &url, &headers, Bytes::new(), plain)
            .await?;
        let status = response.status;
        let body = response.document().await?;
        if !status.is_success() {
            return Err(RegistryError::Status {
                reference: fetch.what().to_owned(),
                status: status.as_u16(),
                reason: clip(&String::from_utf8_lossy(&body)),
            });
        }
        #[derive(Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let t: Token = serde_json::from_slice(&body).map_err(|e| RegistryError::Artifact {
            reference: realm.to_owned(),
            reason: format!("the token service's answer is not a token: {e}"),
        })?;
        t.token
            .or(t.access_token)
            .ok_or_else(|| RegistryError::Artifact {
                reference: realm.to_owned(),
                reason: "the token service's answer has no token".into(),
            })
    }

    /// An error of `response` (status not success) for `reference`.
    async fn status_error(reference: String, response: Response) -> RegistryError {
        let status = response.status.as_u16();
        let body = response.document().await.unwrap_or_default();
        let reason = match status {
            404 => "not found (no such repository, tag or digest)".to_owned(),
            _ => clip(&String::from_utf8_lossy(&body)),
        };
        RegistryError::Status {
            reference,
            status,
            reason,
        }
    }

    /// Resolves `r` (its tag, or its digest) to its manifest. The bytes
    /// are hashed: a reference with a digest gets exactly that manifest.
    pub async fn resolve(&self, r: &OciRef) -> Result<Resolved, RegistryError> {
        self.resolve_as(r, format!("the manifest of {r}")).await
    }

    /// [`Client::resolve`] for the manifest of a signature (an OCI
    /// referrer of the component's manifest), `r` pinning it.
    pub async fn resolve_signature(&self, r: &OciRef) -> Result<Resolved, RegistryError> {
        self.resolve_as(r, format!("the signature manifest {r}"))
            .await
    }

    /// [`Client::resolve`], the fetch named `what`.
    async fn resolve_as(&self, r: &OciRef, what: String) -> Result<Resolved, RegistryError> {
        let fetch = self.fetch_of(r, what);
        let target = match (&r.digest, &r.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => {
                return Err(RegistryError::Artifact {
                    reference: r.to_string(),
                    reason: "names neither a tag nor a digest".into(),
                });
            }
        };
        let mut headers = HeaderMap::new();
        let accept = [OCI_MANIFEST, DOCKER_MANIFEST, INDEXES[0], INDEXES[1]].join(", ");
        if let Ok(v) = HeaderValue::from_str(&accept) {
            headers.insert(http::header::ACCEPT, v);
        }
        let response = self
            .request(
                &fetch,
                r,
                Method::GET,
                &format!("manifests/{target}"),
                headers,
                Bytes::new(),
                false,
            )
            .await?;
        if !response.status.is_success() {
            return Err(Self::status_error(r.to_string(), response).await);
        }
        let media_type = response
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = response.document().await?.to_vec();
        let digest = digest_of(&bytes);
        if let Some(expected) = &r.digest
            && &digest != expected
        {
            return Err(RegistryError::Integrity {
                url: r.to_string(),
                reason: format!("the manifest served is {digest}, not the {expected} asked for"),
            });
        }
        if INDEXES.iter().any(|i| media_type.starts_with(i)) {
            return Err(RegistryError::Artifact {
                reference: r.to_string(),
                reason: "is an index of several manifests (a multi-platform image?), not one Wasm component artifact".into(),
            });
        }
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| RegistryError::Artifact {
                reference: r.to_string(),
                reason: format!("its manifest does not parse: {e}"),
            })?;
        Ok(Resolved {
            digest,
            bytes,
            manifest,
        })
    }

    /// The one Wasm layer of `manifest`.
    pub fn component_layer<'m>(
        r: &OciRef,
        manifest: &'m Manifest,
    ) -> Result<&'m Descriptor, RegistryError> {
        let artifact = |reason: String| RegistryError::Artifact {
            reference: r.to_string(),
            reason,
        };
        let wasm: Vec<&Descriptor> = manifest
            .layers
            .iter()
            .filter(|l| WASM_LAYERS.contains(&l.media_type.as_str()))
            .collect();
        match wasm.as_slice() {
            [one] => Ok(one),
            [] => Err(artifact(format!(
                "is not a Wasm component artifact: no layer of type {} (config {}, layers {})",
                WASM_LAYERS[0],
                manifest.config.media_type,
                manifest
                    .layers
                    .iter()
                    .map(|l| l.media_type.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            _ => Err(artifact(format!(
                "has {} Wasm layers; a component artifact has one",
                wasm.len()
            ))),
        }
    }

    /// Pulls `r` into `store` (its manifest, and the component unless the
    /// store has it): the blob's size and digest are checked as it streams.
    pub async fn pull(&self, r: &OciRef, store: &Store) -> Result<Pulled, RegistryError> {
        let resolved = self.resolve(r).await?;
        let layer = Self::component_layer(r, &resolved.manifest)?.clone();
        let component = Digest::parse(&layer.digest).map_err(|e| RegistryError::Artifact {
            reference: r.to_string(),
            reason: format!("its Wasm layer's digest: {e}"),
        })?;
        store.put(&resolved.bytes)?;
        if store.get(&component).ok().flatten().is_none() {
            self.blob(r, &component, Blob::Component(layer.size), store)
                .await?;
        }
        Ok(Pulled {
            manifest: resolved.digest,
            component,
            annotations: resolved.manifest.annotations,
        })
    }

    /// Streams blob `digest` of `r` into `store`: at most the bytes `kind`
    /// declares, within its fetch's deadline.
    pub async fn blob(
        &self,
        r: &OciRef,
        digest: &Digest,
        kind: Blob,
        store: &Store,
    ) -> Result<(), RegistryError> {
        let limits = self.limits_for(&r.registry);
        let (size, max, fetch) = match kind {
            Blob::Component(size) => (
                size,
                limits.max_blob,
                self.fetch_of(r, format!("the layer {digest} of {r}"))
                    .sized(size),
            ),
            // A signature is a document, whatever size its referrer claims.
            Blob::Signature(size) => (
                size,
                limits.max_document,
                self.fetch_of(r, format!("the signature {digest} of {r}")),
            ),
        };
        if size > max {
            return Err(RegistryError::TooLarge {
                url: format!("{r} (blob {digest}, {size} bytes)"),
                limit: max,
            });
        }
        let response = self
            .request(
                &fetch,
                r,
                Method::GET,
                &format!("blobs/{digest}"),
                HeaderMap::new(),
                Bytes::new(),
                false,
            )
            .await?;
        if !response.status.is_success() {
            return Err(Self::status_error(format!("{r} (blob {digest})"), response).await);
        }
        store.download(response, digest, Some(size), max).await
    }

    /// The manifests that refer to `digest` (OCI 1.1 referrers API; the
    /// tag-schema fallback `sha256-HEX` when the registry has no such API).
    pub async fn referrers(
        &self,
        r: &OciRef,
        digest: &Digest,
    ) -> Result<Vec<Descriptor>, RegistryError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/vnd.oci.image.index.v1+json"),
        );
        let fetch = self.fetch_of(
            r,
            format!("the signature list of {}", r.pinned(digest.clone())),
        );
        let response = self
            .request(
                &fetch,
                r,
                Method::GET,
                &format!("referrers/{digest}"),
                headers.clone(),
                Bytes::new(),
                false,
            )
            .await?;
        let body = if response.status.is_success() {
            Some(response.document().await?)
        } else if response.status == StatusCode::NOT_FOUND {
            // No referrers API: the fallback tag.
            let tag = format!("manifests/sha256-{}", digest.hex());
            let response = self
                .request(&fetch, r, Method::GET, &tag, headers, Bytes::new(), false)
                .await?;
            if response.status.is_success() {
                Some(response.document().await?)
            } else {
                None
            }
        } else {
            return Err(Self::status_error(format!("{r} (referrers of {digest})"), response).await);
        };
        #[derive(Deserialize)]
        struct Index {
            #[serde(default)]
            manifests: Vec<Descriptor>,
        }
        Ok(match body {
            Some(b) => serde_json::from_slice::<Index>(&b)
                .map(|i| i.manifests)
                .unwrap_or_default(),
            None => Vec::new(),
        })
    }

    /// Uploads `bytes` as a blob of `r`'s repository, unless it is there.
    async fn upload(&self, r: &OciRef, bytes: &[u8]) -> Result<Digest, RegistryError> {
        let digest = digest_of(bytes);
        let fetch = self
            .fetch_of(r, format!("uploading {digest} to {r}"))
            .sized(bytes.len() as u64);
        let exists = self
            .request(
                &fetch,
                r,
                Method::HEAD,
                &format!("blobs/{digest}"),
                HeaderMap::new(),
                Bytes::new(),
                true,
            )
            .await?;
        if exists.status.is_success() {
            return Ok(digest);
        }
        let started = self
            .request(
                &fetch,
                r,
                Method::POST,
                "blobs/uploads/",
                HeaderMap::new(),
                Bytes::new(),
                true,
            )
            .await?;
        if started.status != StatusCode::ACCEPTED {
            return Err(Self::status_error(format!("{r} (starting an upload)"), started).await);
        }
        let location = started
            .headers
            .get(http::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .ok_or_else(|| RegistryError::Artifact {
                reference: r.to_string(),
                reason: "the registry started an upload without a Location".into(),
            })?
            .to_owned();
        let (scheme, _) = self.scheme(r);
        let location = if location.starts_with('/') {
            format!("{scheme}://{}{location}", r.registry)
        } else {
            location
        };
        let sep = if location.contains('?') { '&' } else { '?' };
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        let done = self
            .request(
                &fetch,
                r,
                Method::PUT,
                &format!("{location}{sep}digest={digest}"),
                headers,
                Bytes::copy_from_slice(bytes),
                true,
            )
            .await?;
        if done.status != StatusCode::CREATED {
            return Err(Self::status_error(format!("{r} (uploading {digest})"), done).await);
        }
        Ok(digest)
    }

    /// Pushes a component as `r` (its tag): the CNCF Wasm artifact layout,
    /// with `config` as the config blob and `annotations` on the manifest.
    /// The pushed manifest's digest.
    pub async fn push(
        &self,
        r: &OciRef,
        component: &[u8],
        config: &[u8],
        annotations: BTreeMap<String, String>,
    ) -> Result<Digest, RegistryError> {
        let tag = r.tag.clone().ok_or_else(|| RegistryError::Artifact {
            reference: r.to_string(),
            reason: "publishing needs a tag: oci://REGISTRY/REPOSITORY:TAG".into(),
        })?;
        let config_digest = self.upload(r, config).await?;
        let layer_digest = self.upload(r, component).await?;
        let manifest = Manifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST.into()),
            artifact_type: Some(WASM_CONFIG.into()),
            config: Descriptor {
                media_type: WASM_CONFIG.into(),
                digest: config_digest.to_string(),
                size: config.len() as u64,
                annotations: BTreeMap::new(),
                artifact_type: None,
            },
            layers: vec![Descriptor {
                media_type: WASM_LAYERS[0].into(),
                digest: layer_digest.to_string(),
                size: component.len() as u64,
                annotations: BTreeMap::new(),
                artifact_type: None,
            }],
            subject: None,
            annotations,
        };
        let bytes = serde_json::to_vec(&manifest).map_err(|e| RegistryError::Artifact {
            reference: r.to_string(),
            reason: e.to_string(),
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(OCI_MANIFEST),
        );
        let fetch = self.fetch_of(r, format!("pushing the manifest of {r}"));
        let put = self
            .request(
                &fetch,
                r,
                Method::PUT,
                &format!("manifests/{tag}"),
                headers,
                Bytes::from(bytes.clone()),
                true,
            )
            .await?;
        if put.status != StatusCode::CREATED {
            return Err(Self::status_error(format!("{r} (the manifest)"), put).await);
        }
        Ok(digest_of(&bytes))
    }
}

/// Downloads the component at `url` into `store`, refusing anything but
/// the bytes of `digest`.
pub async fn fetch_https(
    http: &Http,
    url: &str,
    digest: &Digest,
    store: &Store,
) -> Result<(), RegistryError> {
    let limits = http.limits();
    let from = url
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.authority().map(|a| a.to_string()))
        .unwrap_or_default();
    // No size is declared before the bytes come: the largest blob's.
    let fetch = Fetch::new(from, format!("the component {url}"), &limits).sized(limits.max_blob);
    let response = http
        .send_within(
            &fetch,
            Method::GET,
            url,
            &HeaderMap::new(),
            Bytes::new(),
            Plain::Refused,
        )
        .await?;
    if !response.status.is_success() {
        let status = response.status.as_u16();
        return Err(RegistryError::Status {
            reference: url.to_owned(),
            status,
            reason: "the download failed".into(),
        });
    }
    store
        .download(response, digest, None, http.limits().max_blob)
        .await
}

/// Whether a token realm is on this machine.
fn auth_is_local(realm: &str) -> bool {
    realm
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .is_some_and(|authority| {
            toolhost_toolbox_file::remote::is_loopback_host(toolhost_toolbox_file::remote::host_of(
                authority,
            ))
        })
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// At most 300 characters of a registry's message.
fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wasm_layer_is_found_or_refused() {
        let r = OciRef::parse("oci://127.0.0.1:5000/a:1").expect("ref");
        let layer = |t: &str| Descriptor {
            media_type: t.into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 1,
            annotations: BTreeMap::new(),
            artifact_type: None,
        };
        let manifest = |layers: Vec<Descriptor>| Manifest {
            schema_version: 2,
            media_type: None,
            artifact_type: None,
            config: layer(WASM_CONFIG),
            layers,
            subject: None,
            annotations: BTreeMap::new(),
        };
        let m = manifest(vec![layer("application/wasm")]);
        assert!(Client::component_layer(&r, &m).is_ok());
        let m = manifest(vec![layer(
            "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm",
        )]);
        assert!(Client::component_layer(&r, &m).is_ok());
        let m = manifest(vec![layer("application/vnd.oci.image.layer.v1.tar+gzip")]);
        let e = Client::component_layer(&r, &m).expect_err("an image");
        assert!(
            e.to_string().contains("not a Wasm component artifact"),
            "{e}"
        );
        let m = manifest(vec![layer("application/wasm"), layer("application/wasm")]);
        assert!(Client::component_layer(&r, &m).is_err());
    }

    #[test]
    fn plain_http_only_for_loopback_or_insecure_registries() {
        let mut settings = BTreeMap::new();
        settings.insert(
            "registry.lan:5000".to_owned(),
            RegistrySettings {
                insecure: true,
                ..RegistrySettings::default()
            },
        );
        let client = Client::new(settings, Limits::default()).expect("client");
        let scheme = |r: &str| client.scheme(&OciRef::parse(r).expect("ref")).0;
        assert_eq!(scheme("oci://127.0.0.1:5000/a:1"), "http");
        assert_eq!(scheme("oci://localhost:5000/a:1"), "http");
        assert_eq!(scheme("oci://[::1]:5000/a:1"), "http");
        assert_eq!(scheme("oci://registry.lan:5000/a:1"), "http");
        assert_eq!(scheme("oci://registry.lan:5001/a:1"), "https");
        assert_eq!(scheme("oci://ghcr.io/a:1"), "https");
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(
            encode("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
    }
}
