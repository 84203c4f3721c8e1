//! Remote components (`oci://`, `https://`): what the lock pins them to,
//! and getting exactly those bytes. Serving never resolves a tag: a remote
//! source without a lock entry is an error that says to run `toolhost
//! lock`; bytes come from the content-addressed store, checked against the
//! lock, or are pulled by the pinned digest (never by tag) when the store
//! lacks them; a signature its trust rule asks for is verified again at
//! every load, against the manifest digest, from the bundle kept in the
//! store. `toolhost lock`, `update` and `add` ([`lock`]) are where tags are
//! resolved.

use crate::error::HostError;
use crate::file::{ComponentEntry, Digest, LockEntry, LockFile, OciRef, Source, Toolbox};
use crate::load::{listing, load_listed};
use crate::trust::{self, Verified};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use toolhost_registry::{Client, Limits, RegistryError, Store};
use toolhost_runtime::LoadedComponent;

/// Where the store is by default (part of this module's API).
pub use crate::dirs::default_store_dir;

/// Where a served remote component's bytes came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The source, as the toolbox writes it.
    pub source: String,
    /// The manifest digest (OCI).
    pub manifest: Option<Digest>,
    /// The component's digest.
    pub component: Digest,
    /// Who signed it, as verified at this load (`unsigned` when no rule
    /// asks for a signature and none was checked).
    pub signer: String,
}

/// A remote component's pin, from the lock.
#[derive(Debug, Clone)]
pub(crate) struct Pin {
    pub(crate) source: Source,
    pub(crate) locked: LockEntry,
}

/// The lock file of `toolbox`, when it has remote sources.
pub(crate) fn lock_of(toolbox: &Toolbox) -> Result<Option<LockFile>, HostError> {
    if !toolbox.has_remote() {
        return Ok(None);
    }
    LockFile::load(&toolbox.lock_path()).map_err(|e| HostError::Lock(Box::new(e)))
}

/// The pin of a remote `entry`: its lock entry, which must exist, agree
/// with what the source itself pins and pin the tools' descriptors.
pub(crate) fn pin(
    toolbox: &Toolbox,
    entry: &ComponentEntry,
    lock: Option<&LockFile>,
) -> Result<Pin, HostError> {
    let source = entry.source.to_string();
    let unlocked = |why: String| HostError::Unlocked {
        origin: toolbox.origin.clone(),
        line: entry.line,
        source_name: source.clone(),
        why,
    };
    let locked = lock
        .and_then(|l| l.get(&source))
        .cloned()
        .ok_or_else(|| unlocked(format!("it is not in {}", toolbox.lock_path().display())))?;
    agrees(entry, &locked).map_err(unlocked)?;
    if locked.tools.is_none() {
        return Err(unlocked(
            "its lock entry pins no tool descriptors (it predates descriptor pins)".into(),
        ));
    }
    Ok(Pin {
        source: entry.source.clone(),
        locked,
    })
}

/// Whether `locked` pins what `entry`'s source itself pins (its digest,
/// when it names one); why not.
fn agrees(entry: &ComponentEntry, locked: &LockEntry) -> Result<(), String> {
    match &entry.source {
        Source::Oci(r) => {
            let Some(m) = &locked.manifest else {
                return Err("its lock entry names no manifest".into());
            };
            match &r.digest {
                Some(pinned) if pinned != m => {
                    Err(format!("the source pins {pinned} and the lock {m}"))
                }
                _ => Ok(()),
            }
        }
        Source::Https { digest, .. } if *digest != locked.component => Err(format!(
            "the toolbox pins {digest} and the lock {}",
            locked.component
        )),
        _ => Ok(()),
    }
}

/// The component `locked` names, loaded to pin its tools' descriptors:
/// its bytes fetched as serving fetches them, loaded under its policy's
/// descriptor bounds.
async fn load_locked(
    runtime: &toolhost_runtime::Runtime,
    toolbox: &Toolbox,
    entry: &ComponentEntry,
    locked: &LockEntry,
    store: &Store,
) -> Result<Arc<LoadedComponent>, String> {
    let pin = Pin {
        source: entry.source.clone(),
        locked: locked.clone(),
    };
    let (bytes, _) = fetch(&pin, toolbox, store).await?;
    // Its tools are asked for where serving would ask (in a worker, for a
    // component that runs in workers).
    let listing = listing(toolbox, entry);
    load_listed(
        runtime,
        Path::new(&entry.source.to_string()),
        bytes,
        &listing,
    )
    .await
    .map_err(|e| e.to_string())
}

/// A registry client for `toolbox`'s registries.
pub(crate) fn client(toolbox: &Toolbox) -> Result<Client, RegistryError> {
    Client::new(toolbox.registries.clone(), Limits::default())
}

/// The bytes `pin` names, checked: from the store, or pulled by digest.
/// The signature its trust rule asks for is verified again.
pub(crate) async fn fetch(
    pin: &Pin,
    toolbox: &Toolbox,
    store: &Store,
) -> Result<(Vec<u8>, Provenance), String> {
    let locked = &pin.locked;
    let refused = |why: String| format!("{}: {why}", pin.source);
    // The component's bytes, checked against the lock.
    let bytes = match store.get(&locked.component).map_err(|e| e.to_string())? {
        Some(b) => b,
        None => {
            let client = client(toolbox).map_err(|e| e.to_string())?;
            match &pin.source {
                Source::Oci(r) => {
                    let manifest = locked
                        .manifest
                        .clone()
                        .ok_or_else(|| refused("its lock entry names no manifest".into()))?;
                    let pulled = client
                        .pull(&r.pinned(manifest), store)
                        .await
                        .map_err(|e| e.to_string())?;
                    if pulled.component != locked.component {
                        return Err(refused(format!(
                            "the manifest {} names the component {}, the lock {}",
                            pulled.manifest, pulled.component, locked.component
                        )));
                    }
                }
                Source::Https { url, digest } => {
                    toolhost_registry::oci::fetch_https(client.http(), url, digest, store)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                _ => return Err(refused("not a remote source".into())),
            }
            store
                .get(&locked.component)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| refused("the pulled component is not in the store".into()))?
        }
    };
    // The manifest binds the component to what was signed.
    let signer = match &pin.source {
        Source::Oci(r) => {
            let manifest = locked
                .manifest
                .clone()
                .ok_or_else(|| refused("its lock entry names no manifest".into()))?;
            let manifest_bytes = match store.get(&manifest).map_err(|e| e.to_string())? {
                Some(m) => m,
                None => {
                    let client = client(toolbox).map_err(|e| e.to_string())?;
                    client
                        .pull(&r.pinned(manifest.clone()), store)
                        .await
                        .map_err(|e| e.to_string())?;
                    store
                        .get(&manifest)
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| refused("the manifest is not in the store".into()))?
                }
            };
            check_manifest(r, &manifest_bytes, &locked.component).map_err(refused)?;
            let verified = trust::verify_stored(toolbox, r, &manifest, store).map_err(refused)?;
            signer_of(&verified)
        }
        _ => "unsigned".to_owned(),
    };
    if signer != locked.signer {
        return Err(refused(format!(
            "it was locked as signed by `{}`, and now verifies as `{signer}`; run `toolhost update` to review the change",
            locked.signer
        )));
    }
    Ok((
        bytes,
        Provenance {
            source: pin.source.to_string(),
            manifest: locked.manifest.clone(),
            component: locked.component.clone(),
            signer,
        },
    ))
}

/// The signer as the lock writes it.
pub(crate) fn signer_of(verified: &Verified) -> String {
    match verified {
        Verified::Unsigned => "unsigned".into(),
        Verified::Signer(who) => who.clone(),
    }
}

/// Whether a manifest's one Wasm layer is `component`.
fn check_manifest(r: &OciRef, bytes: &[u8], component: &Digest) -> Result<(), String> {
    let manifest: toolhost_registry::Manifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("its stored manifest does not parse: {e}"))?;
    let layer = Client::component_layer(r, &manifest).map_err(|e| e.to_string())?;
    if layer.digest != component.as_str() {
        return Err(format!(
            "its manifest names the component {}, the lock {component}",
            layer.digest
        ));
    }
    Ok(())
}

/// What `toolhost lock` and `update` resolve.
#[derive(Debug, Clone)]
pub enum Moving {
    /// Resolve only the remote sources that are not locked (or whose lock
    /// entry no longer matches the source).
    Unlocked,
    /// Resolve these sources again (all when empty), moving their pins.
    Update(Vec<String>),
}

/// One pin `lock` set or moved.
#[derive(Debug, Clone)]
pub struct Change {
    /// The source.
    pub source: String,
    /// The pin before, if there was one.
    pub before: Option<LockEntry>,
    /// The pin now.
    pub after: LockEntry,
    /// The component the pin now names, as loaded to pin its tools'
    /// descriptors (for `update` to show what changed).
    pub component: Arc<LoadedComponent>,
}

/// Resolves `toolbox`'s remote sources as `moving` says (tags to manifest
/// digests, pulled into `store`, signatures verified against their trust
/// rules), pins each one's tool descriptors (loaded in `runtime`), and
/// writes the lock file; what changed.
pub async fn lock(
    toolbox: &Toolbox,
    store: &Store,
    moving: &Moving,
    runtime: &toolhost_runtime::Runtime,
) -> Result<Vec<Change>, HostError> {
    let lock_path = toolbox.lock_path();
    let mut lock = LockFile::load(&lock_path)
        .map_err(|e| HostError::Lock(Box::new(e)))?
        .unwrap_or_default();
    let client = client(toolbox).map_err(|e| HostError::Remote {
        origin: toolbox.origin.clone(),
        line: 0,
        source_name: String::new(),
        reason: e.to_string(),
    })?;
    let mut changes = Vec::new();
    let mut sources = Vec::new();
    for entry in &toolbox.components {
        if !entry.source.is_remote() {
            continue;
        }
        let source = entry.source.to_string();
        sources.push(source.clone());
        let before = lock.get(&source).cloned();
        let resolve = match moving {
            // A pin from before descriptor pins is kept (and gets them
            // below) unless it disagrees with its source.
            Moving::Unlocked => before.as_ref().is_none_or(|b| agrees(entry, b).is_err()),
            Moving::Update(names) => {
                names.is_empty() || names.iter().any(|n| source.contains(n.as_str()))
            }
        };
        let failed = |reason: String| HostError::Remote {
            origin: toolbox.origin.clone(),
            line: entry.line,
            source_name: source.clone(),
            reason,
        };
        if !resolve {
            // Kept; a pin from before descriptor pins gets them now, of
            // the bytes it already pins.
            if let Some(b) = before.as_ref().filter(|b| b.tools.is_none()) {
                let loaded = load_locked(runtime, toolbox, entry, b, store)
                    .await
                    .map_err(failed)?;
                let mut kept = b.clone();
                kept.tools = Some(crate::descriptors::pins(&loaded));
                lock.set(kept);
            }
            continue;
        }
        let mut after = match &entry.source {
            Source::Oci(r) => {
                let pulled = client
                    .pull(r, store)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                let verified = trust::verify_remote(toolbox, r, &pulled.manifest, &client, store)
                    .await
                    .map_err(failed)?;
                LockEntry {
                    source: source.clone(),
                    manifest: Some(pulled.manifest),
                    component: pulled.component,
                    signer: signer_of(&verified),
                    tools: None,
                    line: 0,
                }
            }
            Source::Https { url, digest } => {
                if store
                    .get(digest)
                    .map_err(|e| failed(e.to_string()))?
                    .is_none()
                {
                    toolhost_registry::oci::fetch_https(client.http(), url, digest, store)
                        .await
                        .map_err(|e| failed(e.to_string()))?;
                }
                LockEntry {
                    source: source.clone(),
                    manifest: None,
                    component: digest.clone(),
                    signer: "unsigned".into(),
                    tools: None,
                    line: 0,
                }
            }
            _ => continue,
        };
        let component = load_locked(runtime, toolbox, entry, &after, store)
            .await
            .map_err(failed)?;
        after.tools = Some(crate::descriptors::pins(&component));
        let moved = before.as_ref().is_none_or(|b| {
            b.manifest != after.manifest
                || b.component != after.component
                || b.signer != after.signer
                || b.tools != after.tools
        });
        lock.set(after.clone());
        if moved {
            changes.push(Change {
                source,
                before,
                after,
                component,
            });
        }
    }
    lock.retain_sources(&sources);
    lock.write(&lock_path).map_err(|e| HostError::Remote {
        origin: toolbox.origin.clone(),
        line: 0,
        source_name: lock_path.display().to_string(),
        reason: format!("writing the lock file: {e}"),
    })?;
    Ok(changes)
}

/// A pin that no longer passes what serving checks (its bytes, its
/// manifest, its signature under the current trust rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// The source, as the toolbox writes it.
    pub source: String,
    /// Its entry's line in the toolbox file.
    pub line: usize,
    /// What it is pinned to: the manifest (OCI) or the component digest,
    /// and the signer the lock records.
    pub pinned: String,
    /// Why it no longer passes.
    pub why: String,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (pinned to {}) no longer passes: {}",
            self.source, self.pinned, self.why
        )
    }
}

/// Every pin of `toolbox`'s lock checked as serving checks it, under the
/// trust rules as they are now (`lock` keeps existing pins, so a rule added
/// or changed since one was made is checked here): those that no longer
/// pass. Bytes the store lacks are pulled by their pinned digest; no tag is
/// resolved.
pub async fn stale_pins(toolbox: &Toolbox, store: &Store) -> Result<Vec<Stale>, HostError> {
    let lock = lock_of(toolbox)?;
    let mut stale = Vec::new();
    for entry in toolbox.components.iter().filter(|c| c.source.is_remote()) {
        let locked = lock.as_ref().and_then(|l| l.get(&entry.source.to_string()));
        let pinned = locked.map_or_else(
            || "nothing".to_owned(),
            |l| {
                format!(
                    "{}, {}",
                    l.manifest.as_ref().unwrap_or(&l.component),
                    l.signer
                )
            },
        );
        let source = entry.source.to_string();
        let why = match pin(toolbox, entry, lock.as_ref()) {
            Ok(p) => fetch(&p, toolbox, store).await.err(),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = why {
            // `fetch` names the source first; `Stale` names it once.
            let why = why
                .strip_prefix(&format!("{source}: "))
                .map_or_else(|| why.clone(), str::to_owned);
            stale.push(Stale {
                source,
                line: entry.line,
                pinned,
                why,
            });
        }
    }
    Ok(stale)
}

/// The store in `dir`, or in the default place.
pub fn open_store(dir: Option<&Path>) -> Result<Store, HostError> {
    let dir = dir
        .map(Path::to_owned)
        .or_else(default_store_dir)
        .ok_or_else(|| HostError::Remote {
            origin: String::new(),
            line: 0,
            source_name: String::new(),
            reason: "no place for the component store (set HOME or XDG_CACHE_HOME)".into(),
        })?;
    Store::open(&dir).map_err(|e| HostError::Remote {
        origin: String::new(),
        line: 0,
        source_name: dir.display().to_string(),
        reason: e.to_string(),
    })
}

/// The provenance of each served remote component, by origin.
pub type ProvenanceMap = BTreeMap<String, Provenance>;
