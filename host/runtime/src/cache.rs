//! On-disk cache of compiled components.
//!
//! An artifact is keyed by the component's SHA-256 and a hash of the engine's
//! compatibility settings and wasmtime version. Its file carries a digest of
//! its own bytes, so a torn or corrupted file is detected and recompiled;
//! wasmtime itself refuses an artifact from another engine configuration, and
//! that too is recompiled, never trusted. The directory is created private
//! (0700) and refused when group- or world-writable, because a planted
//! artifact is native code.

use crate::error::RuntimeError;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use toolhost_contract::sha256_hex;
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8] = b"toolhost-cwasm-v1\n";

/// Whether a load was served from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// No cache configured.
    Disabled,
    /// A valid artifact was used.
    Hit,
    /// No artifact existed; compiled and stored.
    Miss,
    /// An artifact existed but was corrupt or from another engine; recompiled.
    Stale,
    /// Compiled when toolhost was built (a built-in): no cache needed.
    Precompiled,
}

impl CacheOutcome {
    /// Its place in the runtime's load counters.
    pub(crate) fn index(self) -> usize {
        match self {
            CacheOutcome::Disabled => 0,
            CacheOutcome::Hit => 1,
            CacheOutcome::Miss => 2,
            CacheOutcome::Stale => 3,
            CacheOutcome::Precompiled => 4,
        }
    }
}

pub(crate) struct ArtifactCache {
    dir: Option<(Dir, PathBuf)>,
    engine_key: String,
}

impl ArtifactCache {
    pub(crate) fn open(path: Option<&Path>, engine: &Engine) -> Result<Self, RuntimeError> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        let engine_key = format!("{:016x}", h.finish());
        let Some(path) = path else {
            return Ok(ArtifactCache {
                dir: None,
                engine_key,
            });
        };
        let err = |reason: String| RuntimeError::Cache {
            path: path.to_owned(),
            reason,
        };
        toolhost_effects::make_private(path).map_err(|e| err(e.to_string()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|e| err(e.to_string()))?
                .permissions()
                .mode();
            if mode & 0o022 != 0 {
                return Err(err(format!(
                    "is group- or world-writable (mode {:o}); refusing to load native code from it",
                    mode & 0o777
                )));
            }
        }
        let dir =
            Dir::open_ambient_dir(path, ambient_authority()).map_err(|e| err(e.to_string()))?;
        Ok(ArtifactCache {
            dir: Some((dir, path.to_owned())),
            engine_key,
        })
    }

    /// The cached artifact of the component whose SHA-256 is `id`, when a
    /// valid one is there; otherwise what compiling it will be recorded as
    /// (`Miss`, `Stale`, or `Disabled` without a cache).
    pub(crate) fn lookup(&self, engine: &Engine, id: &str) -> Result<Component, CacheOutcome> {
        let Some((dir, _)) = &self.dir else {
            return Err(CacheOutcome::Disabled);
        };
        let name = self.name(id);
        let Ok(file) = dir.read(&name) else {
            return Err(CacheOutcome::Miss);
        };
        match payload(&file).and_then(|p| deserialize(engine, p)) {
            Some(c) => Ok(c),
            None => {
                tracing::warn!(artifact = %name, "stale or corrupt artifact; recompiling");
                Err(CacheOutcome::Stale)
            }
        }
    }

    /// Compiles `bytes` (whose SHA-256 is `id`) and stores the artifact
    /// (when there is a cache). `compiling` is called before the
    /// compilation, and its guard dropped after it.
    pub(crate) fn compile(
        &self,
        engine: &Engine,
        id: &str,
        bytes: &[u8],
        compiling: impl FnOnce() -> Option<Box<dyn Send>>,
    ) -> Result<Component, String> {
        let progress = compiling();
        let compiled = engine
            .precompile_component(bytes)
            .map_err(|e| format!("{e:#}"))?;
        drop(progress);
        let c = deserialize(engine, &compiled)
            .ok_or_else(|| "freshly compiled artifact did not load".to_owned())?;
        if let Some((dir, _)) = &self.dir {
            let name = self.name(id);
            if let Err(e) = store(dir, &name, &compiled) {
                tracing::warn!(artifact = %name, "could not store artifact: {e}");
            }
        }
        Ok(c)
    }

    fn name(&self, id: &str) -> String {
        format!("{id}-{}.cwasm", self.engine_key)
    }
}

/// The payload of an artifact file, when its digest matches.
fn payload(file: &[u8]) -> Option<&[u8]> {
    let rest = file.strip_prefix(MAGIC)?;
    let (digest, body) = (rest.get(..64)?, rest.get(65..)?);
    (sha256_hex(body).as_bytes() == digest).then_some(body)
}

#[allow(unsafe_code)]
pub(crate) fn deserialize(engine: &Engine, artifact: &[u8]) -> Option<Component> {
    // SAFETY: the bytes are what `precompile_component` just produced, a
    // file from the private cache directory whose embedded SHA-256 matches,
    // or a built-in's artifact embedded in this binary when it was built
    // (as trusted as the binary's own code); wasmtime additionally checks
    // that the artifact was produced by a compatible engine and rejects it
    // otherwise.
    unsafe { Component::deserialize(engine, artifact) }.ok()
}

/// Writes atomically: a temporary file renamed into place, so a killed
/// process leaves either the old state or the complete new artifact.
fn store(dir: &Dir, name: &str, compiled: &[u8]) -> std::io::Result<()> {
    // Not the pid: replicas sharing the cache may all be PID 1.
    let tmp = format!(".{name}.{}.tmp", toolhost_contract::unique::unique_name());
    let mut f = dir.create(&tmp)?;
    f.write_all(MAGIC)?;
    f.write_all(sha256_hex(compiled).as_bytes())?;
    f.write_all(b"\n")?;
    f.write_all(compiled)?;
    f.sync_all()?;
    drop(f);
    dir.rename(&tmp, dir, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_checks_digest() {
        let body = b"hello";
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(sha256_hex(body).as_bytes());
        file.push(b'\n');
        file.extend_from_slice(body);
        assert_eq!(payload(&file), Some(&body[..]));
        let mut torn = file.clone();
        torn.pop();
        assert_eq!(payload(&torn), None);
        assert_eq!(payload(b"garbage"), None);
    }
}
