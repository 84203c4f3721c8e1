//! Fresh baselines: a write to an existing file is refused unless the file
//! is unchanged since the caller last saw it.
//!
//! What the caller saw is a few facts: the file (its guest path, under a
//! grant's host directory), a digest of its content, who saw it and until
//! when. They are carried in one of two ways, checked by one
//! function ([`Baselines::check_with`]):
//!
//! - **in the session** ([`Baselines`]): a sessionful client's connection
//!   remembers what it read or wrote;
//! - **in a handle** ([`HandleKey`]): a sealed string the result of a read
//!   (or a write) carries, and a later change of that file takes back as its
//!   `baseline` argument. This is how a stateless client (MCP 2026-07-28,
//!   where every request is its own session) and a call landing on another
//!   replica keep read-then-edit. A handle is an HMAC-SHA-256 over the path,
//!   the content digest and the expiry, bound to the grant's host directory
//!   and the principal, with a key every replica shares: it cannot be forged,
//!   moved to another file, used by another caller, or used after it expires.
//!
//! Every refusal is `stale_baseline`, whose remedy is always the same ("read
//! the file again"); `info.baseline` says which case it was: `unread`,
//! `changed`, `expired`, `invalid` (forged, sealed with another key, another
//! caller's or another directory's) or `mismatch` (a handle for a file the
//! call does not change).

use crate::paths::{GrantView, RealTree, ResolvedPath};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use toolhost_contract::{ContentBlock, FailureCode, PathAccess, ToolDescriptor, ToolFailure};

/// Most bytes hashed for a baseline: bigger files cannot be baselined and
/// so cannot be overwritten or patched through the pipeline.
pub const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// The argument a tool with a file to overwrite or patch takes its handles
/// in (a string, or an array of strings for several files), and the key of
/// the value that returns them (an object: guest path → handle). A host
/// convention: the host adds both to what it advertises, and takes the
/// argument out before the tool's own schema sees the arguments.
pub const BASELINE_ARG: &str = "baseline";

/// The key of a result value that carries the handles of the files it read
/// or wrote (guest path → handle).
pub const BASELINES_KEY: &str = "baselines";

/// How long a handle is good for, by default: one hour.
pub const DEFAULT_HANDLE_TTL_S: u64 = 3600;

/// Bytes of the content digest a handle carries (128 bits).
const DIGEST_BYTES: usize = 16;
/// Bytes of the tag a handle carries (HMAC-SHA-256 cut to 128 bits).
const TAG_BYTES: usize = 16;
/// The prefix of a handle's text (its format's version).
const HANDLE_PREFIX: &str = "bh1.";

type HmacSha256 = Hmac<Sha256>;

/// The content digest of a file as a baseline keeps it.
type ContentDigest = [u8; DIGEST_BYTES];

/// Session-wide baselines, keyed by (grant host dir, relative path).
#[derive(Debug, Default)]
pub struct Baselines {
    seen: Mutex<HashMap<(PathBuf, PathBuf), ContentDigest>>,
}

/// The current digest of a resolved path's file, as `view` sees it.
fn current_digest(view: &dyn GrantView, p: &ResolvedPath) -> Option<ContentDigest> {
    let buf = view.read(&p.grant, &p.relative, MAX_BASELINE_BYTES)?;
    if buf.len() as u64 > MAX_BASELINE_BYTES {
        return None;
    }
    let full = Sha256::digest(&buf);
    let mut d = [0u8; DIGEST_BYTES];
    d.copy_from_slice(&full[..DIGEST_BYTES]);
    Some(d)
}

/// A `stale_baseline` refusal of `case` (see the module's list).
fn refuse(case: &str, message: String) -> ToolFailure {
    ToolFailure::new(FailureCode::StaleBaseline, message).with_info(json!({ "baseline": case }))
}
/// A handle that did not open: why, for the refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unopened {
    /// Not a handle, forged, sealed with another key, another caller's or
    /// another directory's.
    Invalid,
    /// Past its expiry.
    Expired,
}

/// A handle's fields before its tag is checked.
struct Parts {
    expires: u64,
    digest: ContentDigest,
    tag: [u8; TAG_BYTES],
    path: String,
}

/// Splits a handle's text into its fields (nothing checked yet).
fn parts(handle: &str) -> Option<Parts> {
    let raw = URL_SAFE_NO_PAD
        .decode(handle.trim().strip_prefix(HANDLE_PREFIX)?)
        .ok()?;
    if raw.len() <= 8 + DIGEST_BYTES + TAG_BYTES {
        return None;
    }
    let (exp, rest) = raw.split_at(8);
    let (digest, rest) = rest.split_at(DIGEST_BYTES);
    let (tag, path) = rest.split_at(TAG_BYTES);
    Some(Parts {
        expires: u64::from_be_bytes(exp.try_into().ok()?),
        digest: digest.try_into().ok()?,
        tag: tag.try_into().ok()?,
        path: String::from_utf8(path.to_vec()).ok()?,
    })
}

/// The key derived from `material` for `label`: HMAC-SHA-256(material,
/// label). One secret serves several purposes, each with its own key.
pub fn derive_key(material: &[u8], label: &str) -> [u8; 32] {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(material)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(label.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Shortest secret accepted for sealing (bytes).
pub const MIN_SECRET_BYTES: usize = 32;

/// The key baseline handles are sealed with. Replicas that serve the same
/// clients share it (one secret file); a handle sealed with another key
/// does not open.
#[derive(Clone)]
pub struct HandleKey {
    key: [u8; 32],
    ttl_s: u64,
}

impl std::fmt::Debug for HandleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleKey")
            .field("ttl_s", &self.ttl_s)
            .finish_non_exhaustive()
    }
}

impl HandleKey {
    /// The key derived from a shared secret of at least [`MIN_SECRET_BYTES`].
    pub fn from_secret(secret: &[u8]) -> Result<HandleKey, String> {
        if secret.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "the secret is {} bytes; at least {MIN_SECRET_BYTES} are needed (e.g. `head -c 32 /dev/urandom | base64`)",
                secret.len()
            ));
        }
        Ok(HandleKey {
            key: derive_key(secret, "toolhost/baseline-handles/v1"),
            ttl_s: DEFAULT_HANDLE_TTL_S,
        })
    }

    /// The MAC over a handle of `p` (its guest path, the content `digest`,
    /// the expiry) and what it is bound to (the grant's host directory, the
    /// principal).
    fn mac(
        &self,
        expires: u64,
        digest: &ContentDigest,
        p: &ResolvedPath,
        principal: &str,
    ) -> HmacSha256 {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(b"toolhost/baseline/v1\0");
        mac.update(&expires.to_be_bytes());
        mac.update(digest);
        mac.update(p.guest.as_bytes());
        mac.update(b"\0");
        mac.update(p.grant.host.as_os_str().as_encoded_bytes());
        mac.update(b"\0");
        mac.update(principal.as_bytes());
        mac
    }

    /// A handle of `p`'s content `digest`, for `principal`, issued at `now_ms`.
    fn seal(
        &self,
        p: &ResolvedPath,
        digest: &ContentDigest,
        principal: &str,
        now_ms: u64,
    ) -> String {
        let expires = now_ms / 1000 + self.ttl_s;
        let full = self
            .mac(expires, digest, p, principal)
            .finalize()
            .into_bytes();
        let tag = &full[..TAG_BYTES];
        let mut raw = Vec::with_capacity(8 + DIGEST_BYTES + TAG_BYTES + p.guest.len());
        raw.extend_from_slice(&expires.to_be_bytes());
        raw.extend_from_slice(digest);
        raw.extend_from_slice(tag);
        raw.extend_from_slice(p.guest.as_bytes());
        format!("{HANDLE_PREFIX}{}", URL_SAFE_NO_PAD.encode(raw))
    }

    /// Opens a handle of `p` (the file its path names) presented by
    /// `principal` at `now_ms`: the content digest it vouches for.
    fn open(
        &self,
        parts: &Parts,
        p: &ResolvedPath,
        principal: &str,
        now_ms: u64,
    ) -> Result<ContentDigest, Unopened> {
        // In constant time: where the tags differ is not observable.
        self.mac(parts.expires, &parts.digest, p, principal)
            .verify_truncated_left(&parts.tag)
            .map_err(|_| Unopened::Invalid)?;
        if now_ms / 1000 >= parts.expires {
            return Err(Unopened::Expired);
        }
        Ok(parts.digest)
    }
}

/// What a call brings and is to be checked against: the caller, the time,
/// and the handles it presented (with the key that opens them).
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    /// The key handles open with; `None`: this host issues none, so a
    /// presented handle cannot open.
    pub key: Option<&'a HandleKey>,
    /// Who is calling.
    pub principal: &'a str,
    /// Now, in milliseconds since the epoch (the call's clock).
    pub now_ms: u64,
    /// The handles the call presented (its `baseline` argument).
    pub handles: &'a [String],
}

/// The handles a call presented in `arguments`' `baseline` argument: a
/// string or an array of strings. `Err` names what else it was.
pub fn presented(arguments: &Value) -> Result<Vec<String>, String> {
    match arguments.get(BASELINE_ARG) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{BASELINE_ARG}` holds a non-string: {i}"))
            })
            .collect(),
        Some(other) => Err(format!(
            "`{BASELINE_ARG}` must be a handle string (or an array of them), not {other}"
        )),
    }
}

impl Baselines {
    fn key(p: &ResolvedPath) -> (PathBuf, PathBuf) {
        (p.grant.host.clone(), p.relative.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(PathBuf, PathBuf), ContentDigest>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses an overwrite or patch of a file the session never read, or
    /// that changed since it last read or wrote it (no handles).
    pub fn check(&self, paths: &[ResolvedPath]) -> Result<(), ToolFailure> {
        self.check_with(
            paths,
            Presented {
                key: None,
                principal: "",
                now_ms: 0,
                handles: &[],
            },
        )
    }

    /// Refuses an overwrite or patch of a file unless the caller saw its
    /// current content: through a handle it presented for that file, or
    /// else in this session. Every presented handle must open, be for a
    /// file the call changes, and not be expired.
    pub fn check_with(
        &self,
        paths: &[ResolvedPath],
        presented: Presented<'_>,
    ) -> Result<(), ToolFailure> {
        self.check_in(&RealTree, paths, presented)
    }

    /// As [`check_with`](Self::check_with), reading the files' current
    /// content through `view` (a script's staged view).
    pub fn check_in(
        &self,
        view: &dyn GrantView,
        paths: &[ResolvedPath],
        presented: Presented<'_>,
    ) -> Result<(), ToolFailure> {
        let mut opened: Vec<(String, Result<ContentDigest, Unopened>)> =
            Vec::with_capacity(presented.handles.len());
        for h in presented.handles {
            let Some(fields) = parts(h) else {
                return Err(refuse(
                    "invalid",
                    format!(
                        "`{}` is not a baseline handle; read the file again and pass the `baseline` its result gives",
                        crate::summary::clip(h, 80)
                    ),
                ));
            };
            // The file it names (a handle for a file this call creates is
            // not needed, and harmless); the tag covers that path.
            let Some(p) = paths.iter().find(|p| p.guest == fields.path) else {
                return Err(refuse(
                    "mismatch",
                    format!(
                        "the baseline handle is for `{}`, which this call does not change; pass the handle of the file you change",
                        // Not yet authenticated: shown as text a person can read.
                        crate::summary::clip(
                            &toolhost_contract::visible::escape_invisible(
                                &fields.path,
                                &mut Default::default()
                            ),
                            200
                        )
                    ),
                ));
            };
            let result = match presented.key {
                Some(key) => key.open(&fields, p, presented.principal, presented.now_ms),
                None => Err(Unopened::Invalid),
            };
            opened.push((fields.path, result));
        }
        for p in paths {
            if !matches!(p.access, PathAccess::Overwrite | PathAccess::Patch) {
                continue;
            }
            let known = match opened.iter().find(|(path, _)| *path == p.guest) {
                Some((_, Ok(digest))) => *digest,
                Some((_, Err(Unopened::Invalid))) => {
                    return Err(refuse(
                        "invalid",
                        format!(
                            "the baseline handle for `{}` is not valid here (not issued by this server, or for another caller); read the file again",
                            p.guest
                        ),
                    ));
                }
                Some((_, Err(Unopened::Expired))) => {
                    return Err(refuse(
                        "expired",
                        format!(
                            "the baseline handle for `{}` expired; read the file again before changing it",
                            p.guest
                        ),
                    ));
                }
                None => match self.lock().get(&Self::key(p)).copied() {
                    Some(d) => d,
                    None => {
                        let message = match presented.key {
                            Some(_) => format!(
                                "`{}` exists but has not been read (no `{BASELINE_ARG}` handle for it, and not in this session); read it before changing it",
                                p.guest
                            ),
                            None => format!(
                                "`{}` exists but has not been read in this session; read it before changing it",
                                p.guest
                            ),
                        };
                        return Err(refuse("unread", message));
                    }
                },
            };
            if current_digest(view, p) != Some(known) {
                return Err(refuse(
                    "changed",
                    format!(
                        "`{}` changed since it was last read; read it again before changing it",
                        p.guest
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Records the current content of every file a successful call read or
    /// wrote, and returns a handle of each (guest path, handle) when `key`
    /// is given.
    pub fn record_with(
        &self,
        paths: &[ResolvedPath],
        key: Option<&HandleKey>,
        principal: &str,
        now_ms: u64,
    ) -> Vec<(String, String)> {
        self.record_in(&RealTree, paths, key, principal, now_ms)
    }

    /// As [`record_with`](Self::record_with), reading the files' content
    /// through `view` (a script's staged view).
    pub fn record_in(
        &self,
        view: &dyn GrantView,
        paths: &[ResolvedPath],
        key: Option<&HandleKey>,
        principal: &str,
        now_ms: u64,
    ) -> Vec<(String, String)> {
        let mut handles = Vec::new();
        for p in paths {
            if p.access == PathAccess::List {
                continue;
            }
            match current_digest(view, p) {
                Some(d) => {
                    self.lock().insert(Self::key(p), d);
                    if let Some(key) = key
                        && !handles.iter().any(|(g, _)| *g == p.guest)
                    {
                        handles.push((p.guest.clone(), key.seal(p, &d, principal, now_ms)));
                    }
                }
                None => {
                    self.lock().remove(&Self::key(p));
                }
            }
        }
        handles
    }

    /// What this session knows of the files `paths` name: each one's grant
    /// directory, path in it, and content digest (hex), for the ones it
    /// has seen. A script waiting for an answer keeps them in its
    /// checkpoint, so its retry (another session, perhaps) knows them too.
    pub fn known(&self, paths: &[ResolvedPath]) -> Vec<(PathBuf, PathBuf, String)> {
        let seen = self.lock();
        paths
            .iter()
            .filter_map(|p| {
                let key = Self::key(p);
                seen.get(&key)
                    .map(|d| (key.0.clone(), key.1.clone(), toolhost_contract::hex(d)))
            })
            .collect()
    }

    /// Remembers that the file `rel` of the grant directory `host` was seen
    /// with the content digest `digest` (hex, as [`known`](Self::known)
    /// gives it); a malformed digest is ignored.
    pub fn remember(&self, host: PathBuf, rel: PathBuf, digest: &str) {
        if let Some(d) = toolhost_contract::unhex::<DIGEST_BYTES>(digest) {
            self.lock().insert((host, rel), d);
        }
    }

    /// Records the current content of every file a successful call read or wrote.
    pub fn record(&self, paths: &[ResolvedPath]) {
        self.record_with(paths, None, "", 0);
    }
}

/// Whether `d` takes handles: it overwrites or patches a file (or writes
/// one that may exist), and does not declare a `baseline` argument of its
/// own (then the name is the tool's, and it gets no handles).
pub fn takes_handles(d: &ToolDescriptor) -> bool {
    d.paths.iter().any(|p| {
        matches!(
            p.access,
            PathAccess::Overwrite | PathAccess::Patch | PathAccess::Write
        )
    }) && object_schema(&d.input_schema)
        && d.input_schema.pointer("/properties/baseline").is_none()
}

/// Whether `d`'s results carry handles (in their text): it reads or writes
/// a file.
pub fn returns_handles(d: &ToolDescriptor) -> bool {
    d.paths.iter().any(|p| p.access != PathAccess::List)
}

/// Whether `d`'s value carries its handles too (`baselines`): its output
/// schema describes an object and declares no `baselines` of its own, so
/// the advertised schema can say the key is there.
pub fn value_carries_handles(d: &ToolDescriptor) -> bool {
    returns_handles(d)
        && object_schema(&d.output_schema)
        && d.output_schema.pointer("/properties/baselines").is_none()
}

/// Whether `schema` describes an object by its own keys (`type: object` or
/// `properties`), so a property can be added to it.
fn object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
        || schema.get("properties").is_some_and(Value::is_object)
}

/// `schema`'s `properties`, made when it has none.
fn properties(schema: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let o = schema.as_object_mut()?;
    o.entry("properties")
        .or_insert_with(|| Value::Object(serde_json::Map::new()))
        .as_object_mut()
}

/// `d` as advertised when the host issues handles: with the schemas of
/// [`advertised_schemas`] when it takes or returns handles, else itself.
pub fn advertised_descriptor(d: &ToolDescriptor) -> std::borrow::Cow<'_, ToolDescriptor> {
    if !takes_handles(d) && !value_carries_handles(d) {
        return std::borrow::Cow::Borrowed(d);
    }
    let (input_schema, output_schema) = advertised_schemas(d);
    std::borrow::Cow::Owned(ToolDescriptor {
        input_schema,
        output_schema,
        ..d.clone()
    })
}

/// `d`'s input and output schemas as advertised when the host issues
/// handles: the `baseline` argument and the `baselines` value added where
/// they apply (see [`takes_handles`], [`value_carries_handles`]).
pub fn advertised_schemas(d: &ToolDescriptor) -> (Value, Value) {
    let mut input = d.input_schema.clone();
    if takes_handles(d)
        && let Some(props) = properties(&mut input)
    {
        props.insert(
            BASELINE_ARG.into(),
            json!({
                "description": "The `baselines` handle of the file, from the result that last read or wrote it. \
                    Pass it to change a file you read in an earlier request; without it the file must have been \
                    read in this session. Several files: an array of handles.",
                "anyOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}}
                ]
            }),
        );
    }
    let mut output = d.output_schema.clone();
    if value_carries_handles(d)
        && let Some(props) = properties(&mut output)
    {
        props.insert(
            BASELINES_KEY.into(),
            json!({
                "description": "A baseline handle of each file this call read or wrote (path → handle): pass it \
                    as `baseline` when you change that file.",
                "type": "object",
                "additionalProperties": {"type": "string"}
            }),
        );
    }
    (input, output)
}

/// Puts issued handles (guest path, handle) into a result: under
/// `baselines` in an object value when `in_value` (see
/// [`value_carries_handles`]), and as the first line of the first text
/// block (a new block when the first is not text). In the first block, not
/// a block of its own: clients that show only the first block show both,
/// and a result cut to its budget keeps its beginning.
pub fn attach(
    mut value: Value,
    mut content: Vec<ContentBlock>,
    issued: &[(String, String)],
    in_value: bool,
) -> (Value, Vec<ContentBlock>) {
    if issued.is_empty() {
        return (value, content);
    }
    if in_value && let Some(o) = value.as_object_mut() {
        let map: serde_json::Map<String, Value> = issued
            .iter()
            .map(|(path, h)| (path.clone(), Value::String(h.clone())))
            .collect();
        o.insert(BASELINES_KEY.into(), Value::Object(map));
    }
    let mut text = String::new();
    for (path, h) in issued {
        text.push_str(&format!(
            "[baseline of {path}: {h} (pass it as `{BASELINE_ARG}` to change this file)]\n"
        ));
    }
    match content.first_mut() {
        Some(ContentBlock::Text { text: first }) => first.insert_str(0, &text),
        _ => {
            text.pop();
            content.insert(0, ContentBlock::Text { text });
        }
    }
    (value, content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_policy::{FsGrant, FsMode};

    const NOW: u64 = 1_800_000_000_000;

    fn resolved(dir: &std::path::Path, rel: &str, access: PathAccess) -> ResolvedPath {
        ResolvedPath {
            pointer: "/path".into(),
            guest: format!("/workspace/{rel}"),
            grant: FsGrant {
                host: dir.to_path_buf(),
                guest: "/workspace".into(),
                mode: FsMode::ReadWrite,
            },
            relative: PathBuf::from(rel),
            access,
            exists: true,
        }
    }

    fn key(byte: u8) -> HandleKey {
        HandleKey::from_secret(&[byte; 32]).expect("a long enough secret")
    }

    fn case(r: Result<(), ToolFailure>) -> String {
        let f = r.expect_err("refused");
        assert_eq!(f.code, FailureCode::StaleBaseline.into());
        f.info
            .as_ref()
            .and_then(|i| i["baseline"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// Checks a patch of `p` presenting `handles`, as `principal`, at `now`,
    /// with `key`, in a fresh session (no memory).
    fn check(
        p: &ResolvedPath,
        key: Option<&HandleKey>,
        principal: &str,
        now_ms: u64,
        handles: &[String],
    ) -> Result<(), ToolFailure> {
        let patch = ResolvedPath {
            access: PathAccess::Patch,
            ..p.clone()
        };
        Baselines::default().check_with(
            &[patch],
            Presented {
                key,
                principal,
                now_ms,
                handles,
            },
        )
    }

    #[test]
    fn a_handle_opens_only_for_its_file_caller_key_and_time() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.txt"), "one").expect("write");
        std::fs::write(dir.path().join("b.txt"), "two").expect("write");
        let a = resolved(dir.path(), "a.txt", PathAccess::Read);
        let b = resolved(dir.path(), "b.txt", PathAccess::Read);
        let k = key(1);
        let issued =
            Baselines::default().record_with(std::slice::from_ref(&a), Some(&k), "alice", NOW);
        assert_eq!(issued.len(), 1);
        let (path, h) = &issued[0];
        assert_eq!(path, "/workspace/a.txt");
        let h = vec![h.clone()];

        // Its caller, its key, its file, in time: opens.
        assert_eq!(check(&a, Some(&k), "alice", NOW + 1000, &h), Ok(()));
        // Another caller, another key, no key at all.
        assert_eq!(case(check(&a, Some(&k), "bob", NOW, &h)), "invalid");
        assert_eq!(case(check(&a, Some(&key(2)), "alice", NOW, &h)), "invalid");
        assert_eq!(case(check(&a, None, "alice", NOW, &h)), "invalid");
        // Another file of the call.
        assert_eq!(case(check(&b, Some(&k), "alice", NOW, &h)), "mismatch");
        // The same guest path under another host directory.
        let elsewhere = tempfile::tempdir().expect("tmp");
        std::fs::write(elsewhere.path().join("a.txt"), "one").expect("write");
        let moved = resolved(elsewhere.path(), "a.txt", PathAccess::Read);
        assert_eq!(case(check(&moved, Some(&k), "alice", NOW, &h)), "invalid");
        // Expired.
        let late = NOW + DEFAULT_HANDLE_TTL_S * 1000 + 1000;
        assert_eq!(case(check(&a, Some(&k), "alice", late, &h)), "expired");
        // The file changed since.
        std::fs::write(dir.path().join("a.txt"), "ONE").expect("write");
        assert_eq!(case(check(&a, Some(&k), "alice", NOW, &h)), "changed");
        // Nothing presented, nothing remembered.
        assert_eq!(case(check(&a, Some(&k), "alice", NOW, &[])), "unread");
    }

    #[test]
    fn a_tampered_handle_does_not_open() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.txt"), "one").expect("write");
        let a = resolved(dir.path(), "a.txt", PathAccess::Read);
        let k = key(1);
        let (_, h) = Baselines::default()
            .record_with(std::slice::from_ref(&a), Some(&k), "alice", NOW)
            .remove(0);
        // Every single-character change of the encoded bytes is refused
        // (the path's characters: as a mismatch or as not a handle).
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for i in HANDLE_PREFIX.len()..h.len() {
            let mut t: Vec<char> = h.chars().collect();
            let old = t[i];
            t[i] = alphabet.chars().find(|c| *c != old).unwrap_or('A');
            let tampered: String = t.into_iter().collect();
            let r = check(&a, Some(&k), "alice", NOW, std::slice::from_ref(&tampered));
            assert!(r.is_err(), "{tampered} opened");
        }
        for junk in ["", "bh1.", "bh1.!!", "bh2.AAAA", "not a handle"] {
            assert_eq!(
                case(check(&a, Some(&k), "alice", NOW, &[junk.into()])),
                "invalid",
                "{junk}"
            );
        }
        // Well-formed, for a path of zero bytes: not this call's file.
        let zeros = format!("{HANDLE_PREFIX}{}", "A".repeat(60));
        assert_eq!(
            case(check(&a, Some(&k), "alice", NOW, &[zeros])),
            "mismatch"
        );
    }

    #[test]
    fn the_session_remembers_without_handles() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.txt"), "one").expect("write");
        let read = resolved(dir.path(), "a.txt", PathAccess::Read);
        let patch = resolved(dir.path(), "a.txt", PathAccess::Patch);
        let b = Baselines::default();
        assert_eq!(case(b.check(std::slice::from_ref(&patch))), "unread");
        b.record(&[read]);
        assert_eq!(b.check(std::slice::from_ref(&patch)), Ok(()));
        std::fs::write(dir.path().join("a.txt"), "two").expect("write");
        assert_eq!(case(b.check(&[patch])), "changed");
    }

    #[test]
    fn presented_handles_are_a_string_or_strings() {
        assert_eq!(presented(&json!({})), Ok(vec![]));
        assert_eq!(
            presented(&json!({"baseline": "h"})),
            Ok(vec!["h".to_owned()])
        );
        assert_eq!(
            presented(&json!({"baseline": ["h", "i"]})),
            Ok(vec!["h".to_owned(), "i".to_owned()])
        );
        assert!(presented(&json!({"baseline": 3})).is_err());
        assert!(presented(&json!({"baseline": [3]})).is_err());
    }

    #[test]
    fn handles_go_where_the_schemas_can_say_so() {
        let d = |input: Value, output: Value, access: PathAccess| -> ToolDescriptor {
            serde_json::from_value(json!({
                "name": "t", "description": "t",
                "inputSchema": input, "outputSchema": output,
                "annotations": {"readOnly": false, "destructive": false, "idempotent": false, "openWorld": false},
                "paths": [{"pointer": "/path", "access": access}], "urls": [],
            }))
            .expect("a descriptor")
        };
        let object = json!({"type": "object", "additionalProperties": false});
        let edit = d(object.clone(), object.clone(), PathAccess::Patch);
        let (input, output) = advertised_schemas(&edit);
        assert!(input.pointer("/properties/baseline").is_some());
        assert!(output.pointer("/properties/baselines").is_some());
        // A value that is not an object: handles in the text only.
        let text = d(object.clone(), json!({"type": "string"}), PathAccess::Read);
        assert!(returns_handles(&text) && !value_carries_handles(&text));
        let issued = [("/workspace/a".to_owned(), "bh1.x".to_owned())];
        let (v, c) = attach(
            json!("body"),
            vec![ContentBlock::text("body")],
            &issued,
            false,
        );
        assert_eq!(v, json!("body"));
        assert!(
            matches!(&c[0], ContentBlock::Text { text } if text.starts_with("[baseline of /workspace/a: bh1.x") && text.ends_with("body"))
        );
        // A tool that names its own `baseline`: the host leaves it alone.
        let own = d(
            json!({"type": "object", "properties": {"baseline": {}}}),
            object,
            PathAccess::Patch,
        );
        assert!(!takes_handles(&own));
    }

    #[test]
    fn secrets_are_long_enough() {
        assert!(HandleKey::from_secret(&[0; 31]).is_err());
        assert!(HandleKey::from_secret(&[0; 32]).is_ok());
    }
}
