//! Directories several hosts share (the staging directory, the journal),
//! and which of their contents belong to a host that is gone.
//!
//! Each running host holds a [`Claim`] there: a lock file named by a random
//! id, `flock`ed for as long as the host runs. The kernel drops the lock
//! when the process dies however it dies, so "nobody holds this lock" is
//! exactly "its host is gone", with no pid involved: a restarted container
//! runs its host as PID 1 every time, and a pid is reused by unrelated
//! processes, so neither "same pid" nor "pid alive" says anything.
//!
//! A [`StagingArea`] is a claim with a directory: everything one process
//! stages goes under it, and [`sweep_staging`] removes the areas of hosts
//! that are gone (and anything else no running host claims).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const LOCK: &str = ".lock";

/// An id no restart reuses ([`toolhost_contract::unique`]).
fn fresh_id() -> String {
    toolhost_contract::unique::unique_name()
}

/// This process's claim in a shared directory: `DIR/ID.lock`, locked
/// until the claim is dropped (or the process ends).
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    id: String,
    _lock: File,
}

impl Claim {
    /// Takes a new claim in `dir` (made, private to the user, if missing).
    pub fn take(dir: &Path) -> io::Result<Claim> {
        crate::make_private(dir)?;
        let id = fresh_id();
        let path = dir.join(format!("{id}{LOCK}"));
        let lock = File::options().write(true).create_new(true).open(&path)?;
        lock.try_lock().map_err(|e| match e {
            std::fs::TryLockError::Error(e) => e,
            std::fs::TryLockError::WouldBlock => io::Error::other("a fresh lock file is locked"),
        })?;
        Ok(Claim {
            path,
            id,
            _lock: lock,
        })
    }

    /// The claim's id (its lock file's name without `.lock`).
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still locked: whoever opens it after this finds no
        // file, which reads as "gone", as it is.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A claim of a host that is gone, held (locked) by this process while it
/// cleans up after it, so two hosts never recover the same thing at once.
#[derive(Debug)]
pub struct Orphan {
    path: PathBuf,
    lock: Option<File>,
}

impl Orphan {
    /// Done with it: the lock file goes.
    pub fn release(self) {
        drop(self);
    }
}

impl Drop for Orphan {
    fn drop(&mut self) {
        if self.lock.is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whose claim `id` in `dir` is. `None`: a running host holds it (this one
/// included). `Some`: its host is gone, and the returned [`Orphan`] keeps
/// other hosts away until it is released. A claim whose lock file is
/// missing is gone too (a lock file is made before anything it claims).
pub fn orphan(dir: &Path, id: &str) -> Option<Orphan> {
    let path = dir.join(format!("{id}{LOCK}"));
    match File::options().write(true).open(&path) {
        Ok(f) => match f.try_lock() {
            Ok(()) => Some(Orphan {
                path,
                lock: Some(f),
            }),
            Err(_) => None,
        },
        Err(_) => Some(Orphan { path, lock: None }),
    }
}

/// This process's area in a staging directory: `ROOT/ID/`, claimed by
/// `ROOT/ID.lock`. Every call and script of the process stages under it.
#[derive(Debug)]
pub struct StagingArea {
    claim: Claim,
    dir: PathBuf,
    next: AtomicU64,
}

/// The areas this process holds, by staging directory: one each, for the
/// process's life (a process has one host; tests have many).
static AREAS: Mutex<Vec<(PathBuf, Arc<StagingArea>)>> = Mutex::new(Vec::new());

impl StagingArea {
    /// This process's area in `root`, taken on first use.
    pub fn of(root: &Path) -> io::Result<Arc<StagingArea>> {
        let mut areas = AREAS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, a)) = areas.iter().find(|(r, _)| r == root) {
            return Ok(a.clone());
        }
        let claim = Claim::take(root)?;
        let dir = root.join(claim.id());
        crate::make_private(&dir)?;
        let area = Arc::new(StagingArea {
            claim,
            dir,
            next: AtomicU64::new(0),
        });
        areas.push((root.to_path_buf(), area.clone()));
        Ok(area)
    }

    /// Removes this process's areas and their claims: at a clean exit, when
    /// no call runs any more (a killed host's are [`sweep_staging`]'s).
    pub fn release_all() {
        let taken = std::mem::take(
            &mut *AREAS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (_, a) in taken {
            let _ = std::fs::remove_dir_all(&a.dir);
        }
    }

    /// The area's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The claim's id.
    pub fn id(&self) -> &str {
        self.claim.id()
    }

    /// A path in the area no other call of this process uses:
    /// `AREA/PREFIX-N`.
    pub fn fresh(&self, prefix: &str) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{prefix}-{n}"))
    }
}

/// Bytes and directories, counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Staging areas (one per host).
    pub areas: u64,
    /// Bytes in their files.
    pub bytes: u64,
}

impl Usage {
    fn add(&mut self, bytes: u64) {
        self.areas += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

/// What [`sweep_staging`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Left by hosts that are gone, and removed.
    pub removed: Usage,
    /// Staged by hosts running now (this one included).
    pub running: Usage,
    /// Left by hosts that are gone, and not removable: path and why.
    pub stuck: Vec<(PathBuf, String)>,
    /// The bytes of `stuck`.
    pub stuck_bytes: u64,
}

impl Swept {
    /// A line for people: what was removed and what is left, if anything.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.removed.areas > 0 {
            parts.push(format!(
                "removed {} staged by {} stopped host(s)",
                bytes(self.removed.bytes),
                self.removed.areas
            ));
        }
        if self.running.bytes > 0 {
            parts.push(format!(
                "{} staged by {} running host(s)",
                bytes(self.running.bytes),
                self.running.areas
            ));
        }
        for (p, why) in &self.stuck {
            parts.push(format!("could not remove {}: {why}", p.display()));
        }
        if !self.stuck.is_empty() {
            parts.push(format!("{} left by stopped hosts", bytes(self.stuck_bytes)));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// `n` bytes for people.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// Removes from the staging directory `root` whatever no running host
/// claims: the areas of hosts that are gone, and anything an older host
/// left there under other names. A commit never needs a staging area once
/// its host is gone (the journal links the bytes it applies into its own
/// entry), so this is safe at any time; a host runs it at start, after the
/// journal's recovery.
pub fn sweep_staging(root: &Path) -> io::Result<Swept> {
    let mut out = Swept::default();
    let rd = match std::fs::read_dir(root) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    let names: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    // Lock files are looked at first, so an area is judged by its lock.
    let mut judged: HashMap<String, Option<Orphan>> = HashMap::new();
    for n in &names {
        if let Some(id) = n.strip_suffix(LOCK) {
            judged.insert(id.to_owned(), orphan(root, id));
        }
    }
    for n in &names {
        if n.ends_with(LOCK) {
            continue;
        }
        let path = root.join(n);
        let size = dir_size(&path);
        if judged.get(n.as_str()).is_some_and(Option::is_none) {
            out.running.add(size);
            continue;
        }
        match remove_all(&path) {
            Ok(()) => out.removed.add(size),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                out.stuck_bytes = out.stuck_bytes.saturating_add(dir_size(&path));
                out.stuck.push((path, e.to_string()));
                // Its lock file stays (unlocked), so the next sweep tries
                // again.
                if let Some(Some(mut o)) = judged.remove(n.as_str()) {
                    o.lock = None;
                }
            }
        }
    }
    for o in judged.into_values().flatten() {
        o.release();
    }
    Ok(out)
}

fn remove_all(p: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(p)? {
        m if m.is_dir() => std::fs::remove_dir_all(p),
        _ => std::fs::remove_file(p),
    }
}

/// The bytes of the files under `p` (symlinks not followed).
pub(crate) fn dir_size(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !m.is_dir() {
        return m.len();
    }
    std::fs::read_dir(p).map_or(0, |rd| {
        rd.flatten()
            .map(|e| dir_size(&e.path()))
            .fold(0u64, u64::saturating_add)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_claim_is_held_while_it_lives_and_gone_after() {
        let d = tempfile::tempdir().unwrap();
        let c = Claim::take(d.path()).unwrap();
        let id = c.id().to_owned();
        // Held, even as seen from this very process.
        assert!(orphan(d.path(), &id).is_none());
        drop(c);
        assert!(orphan(d.path(), &id).is_some());
        assert!(orphan(d.path(), "never-was").is_some());
    }

    #[test]
    fn an_orphan_keeps_other_recoverers_away_until_released() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(format!("dead{LOCK}"));
        std::fs::write(&path, "").unwrap();
        let o = orphan(d.path(), "dead").unwrap();
        assert!(orphan(d.path(), "dead").is_none(), "held by the first");
        o.release();
        assert!(!path.exists());
    }

    #[test]
    fn a_sweep_removes_what_no_running_host_claims_and_counts_the_rest() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        // A live area (this process's) with bytes in it.
        let live = Claim::take(root).unwrap();
        std::fs::create_dir(root.join(live.id())).unwrap();
        std::fs::write(root.join(live.id()).join("0"), vec![0u8; 100]).unwrap();
        // A dead host's area: its lock file, unlocked.
        std::fs::write(root.join(format!("dead{LOCK}")), "").unwrap();
        std::fs::create_dir_all(root.join("dead/1-0")).unwrap();
        std::fs::write(root.join("dead/1-0/0"), vec![0u8; 1000]).unwrap();
        // What an older host left under its pid.
        std::fs::create_dir_all(root.join("1-0-0")).unwrap();
        std::fs::write(root.join("1-0-0/0"), vec![0u8; 24]).unwrap();
        let s = sweep_staging(root).unwrap();
        assert_eq!(
            s.removed,
            Usage {
                areas: 2,
                bytes: 1024
            }
        );
        assert_eq!(
            s.running,
            Usage {
                areas: 1,
                bytes: 100
            }
        );
        assert!(s.stuck.is_empty());
        let mut left: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [live.id().to_owned(), format!("{}{LOCK}", live.id())]);
        assert!(
            s.summary()
                .unwrap()
                .contains("removed 1.0 KiB staged by 2 stopped host(s)")
        );
    }

    #[test]
    fn areas_are_one_per_root_and_their_paths_never_repeat() {
        let root = tempfile::tempdir().unwrap();
        let a = StagingArea::of(root.path()).unwrap();
        let b = StagingArea::of(root.path()).unwrap();
        assert_eq!(a.id(), b.id());
        assert_ne!(a.fresh("x"), b.fresh("x"));
        assert!(a.dir().starts_with(root.path()));
    }
}
