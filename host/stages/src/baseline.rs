//! Fresh-baseline bookkeeping: what the session last read or wrote of each
//! file, by hash. A write to an existing file is refused unless the file is
//! unchanged since the session last saw it.

use crate::paths::ResolvedPath;
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;
use toolhost_contract::{FailureCode, PathAccess, ToolFailure, sha256_hex};

/// Most bytes hashed for a baseline: bigger files cannot be baselined and
/// so cannot be overwritten or patched through the pipeline.
pub const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// Session-wide baselines, keyed by (grant host dir, relative path).
#[derive(Debug, Default)]
pub struct Baselines {
    seen: Mutex<HashMap<(PathBuf, PathBuf), String>>,
}

/// The current hash of a resolved path's file, read through cap-std.
fn current_hash(p: &ResolvedPath) -> Option<String> {
    let dir = p.open_grant().ok()?;
    let f = dir.open(&p.relative).ok()?;
    let mut buf = Vec::new();
    f.take(MAX_BASELINE_BYTES + 1).read_to_end(&mut buf).ok()?;
    if buf.len() as u64 > MAX_BASELINE_BYTES {
        return None;
    }
    Some(sha256_hex(&buf))
}

impl Baselines {
    fn key(p: &ResolvedPath) -> (PathBuf, PathBuf) {
        (p.grant.host.clone(), p.relative.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(PathBuf, PathBuf), String>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses an overwrite or patch of a file the session never read, or
    /// that changed since it last read or wrote it.
    pub fn check(&self, paths: &[ResolvedPath]) -> Result<(), ToolFailure> {
        for p in paths {
            if !matches!(p.access, PathAccess::Overwrite | PathAccess::Patch) {
                continue;
            }
            let known = self.lock().get(&Self::key(p)).cloned();
            let Some(known) = known else {
                return Err(ToolFailure::new(
                    FailureCode::StaleBaseline,
                    format!(
                        "`{}` exists but has not been read in this session; read it before changing it",
                        p.guest
                    ),
                ));
            };
            if current_hash(p).as_deref() != Some(known.as_str()) {
                return Err(ToolFailure::new(
                    FailureCode::StaleBaseline,
                    format!(
                        "`{}` changed since it was last read; read it again before changing it",
                        p.guest
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Records the current content of every file a successful call read or wrote.
    pub fn record(&self, paths: &[ResolvedPath]) {
        for p in paths {
            if p.access == PathAccess::List {
                continue;
            }
            match current_hash(p) {
                Some(h) => {
                    self.lock().insert(Self::key(p), h);
                }
                None => {
                    self.lock().remove(&Self::key(p));
                }
            }
        }
    }
}
