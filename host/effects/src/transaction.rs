//! One script's file effects: the staged changes of all its tool calls
//! together, committed as one (or not at all), like a database's nested
//! transaction.
//!
//! A call made by a script stages its writes in the transaction's overlay
//! of each directory it is granted, one overlay per directory for the
//! whole script, so each call sees what the calls before it wrote
//! (read-only grants of such a directory read through the overlay too).
//! Before each call the script takes a [`TxSavepoint`]; a call that fails
//! goes back to it, so its half-made changes never join the script's. When
//! the script ends, [`Transaction::staged`] is its effect set's source:
//! committed whole when it succeeded, dropped when it did not.

use crate::effects::Staged;
use crate::overlay::{FsError, Overlay, OverlaySnapshot, Savepoint};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Why a directory cannot join a transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TxError {
    /// It is inside another directory the script already uses, or holds
    /// one: the same file would have two overlays.
    #[error(
        "{dir} overlaps {other}, which this script's calls already use; within one script, \
         tools that share files must be granted the same directory"
    )]
    Overlap {
        /// The directory asked for.
        dir: PathBuf,
        /// The one already in the transaction.
        other: PathBuf,
    },
    /// The directory cannot be opened.
    #[error("{dir}: {error}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// One directory of a transaction.
#[derive(Debug)]
struct Grant {
    /// The directory, canonical.
    root: PathBuf,
    /// How the first call that wrote there saw it (`/workspace`).
    guest: String,
    overlay: Arc<Overlay>,
}

/// A script's staged effects. Shared by its calls (they run one at a time).
#[derive(Debug)]
pub struct Transaction {
    stage: PathBuf,
    grants: Mutex<Vec<Grant>>,
    /// Each directory asked for, canonical: resolved once per script (a
    /// script's every call asks for its grants, twice or three times).
    roots: Mutex<std::collections::HashMap<PathBuf, PathBuf>>,
}

/// A transaction's staged changes as data ([`Transaction::snapshot`]): what
/// a script that stops to wait for a person's answer leaves, so its retry
/// goes on from there.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TxSnapshot {
    grants: Vec<SavedGrant>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct SavedGrant {
    root: PathBuf,
    guest: String,
    overlay: OverlaySnapshot,
}

impl TxSnapshot {
    /// The bytes of its staged files and the entries it stages, over all
    /// its directories (see [`OverlaySnapshot::staged_size`]).
    pub fn staged_size(&self) -> (u64, u64) {
        self.grants.iter().fold((0, 0), |(b, e), g| {
            let (b2, e2) = g.overlay.staged_size();
            (b.saturating_add(b2), e.saturating_add(e2))
        })
    }

    /// Its directories: each one's canonical path, and the guest path its
    /// first call saw it as.
    pub fn grants(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.grants
            .iter()
            .map(|g| (g.root.as_path(), g.guest.as_str()))
    }

    /// Only the directories `keep` accepts (by their canonical path).
    pub fn only(&self, keep: impl Fn(&Path) -> bool) -> TxSnapshot {
        TxSnapshot {
            grants: self
                .grants
                .iter()
                .filter(|g| keep(&g.root))
                .cloned()
                .collect(),
        }
    }
}

/// Where a transaction was before a call ([`Transaction::savepoint`]).
#[derive(Debug)]
pub struct TxSavepoint {
    /// The overlays there were then, with their savepoints.
    kept: Vec<Savepoint>,
}

impl Transaction {
    /// An empty transaction staging its blobs under `stage` (one directory
    /// per granted directory inside it, made on the first write; removed
    /// with the transaction).
    pub fn new(stage: PathBuf) -> Transaction {
        Transaction {
            stage,
            grants: Mutex::new(Vec::new()),
            roots: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Grant>> {
        self.grants.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The overlay of directory `host`, which a call sees as `guest` with
    /// write access: the transaction's, made now if this is the first call
    /// granted it.
    pub fn overlay(&self, host: &Path, guest: &str) -> Result<Arc<Overlay>, TxError> {
        let root = self.canonical(host)?;
        let mut grants = self.lock();
        if let Some(o) = find(&grants, &root)? {
            return Ok(o);
        }
        let stage = self.stage.join(format!("{}", grants.len()));
        let overlay = Arc::new(Overlay::new(&root, stage).map_err(|error| TxError::Io {
            dir: root.clone(),
            error,
        })?);
        grants.push(Grant {
            root,
            guest: guest.to_owned(),
            overlay: overlay.clone(),
        });
        Ok(overlay)
    }

    /// The overlay of directory `host` if a call of the script already
    /// wrote there (a read-only grant of it reads through it then, and
    /// sees those writes); `None` otherwise.
    pub fn existing(&self, host: &Path) -> Result<Option<Arc<Overlay>>, TxError> {
        let root = self.canonical(host)?;
        find(&self.lock(), &root)
    }

    /// `host`, canonical (resolved at its first use in the script).
    fn canonical(&self, host: &Path) -> Result<PathBuf, TxError> {
        let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(root) = roots.get(host) {
            return Ok(root.clone());
        }
        let root = canonical(host)?;
        roots.insert(host.to_owned(), root.clone());
        Ok(root)
    }

    /// Where the transaction is now, before a call.
    pub fn savepoint(&self) -> TxSavepoint {
        TxSavepoint {
            kept: self.lock().iter().map(|g| g.overlay.savepoint()).collect(),
        }
    }

    /// Back to `sp`, after a call failed: what it staged is forgotten
    /// (overlays it added stay, emptied).
    pub fn rollback(&self, sp: TxSavepoint) {
        let grants = self.lock();
        let mut kept = sp.kept.into_iter();
        for g in grants.iter() {
            g.overlay.rollback(kept.next().unwrap_or_default());
        }
    }

    /// What is staged now, as data.
    pub fn snapshot(&self) -> Result<TxSnapshot, FsError> {
        let grants = self.lock();
        let mut saved = Vec::with_capacity(grants.len());
        for g in grants.iter() {
            saved.push(SavedGrant {
                root: g.root.clone(),
                guest: g.guest.clone(),
                overlay: g.overlay.snapshot()?,
            });
        }
        Ok(TxSnapshot { grants: saved })
    }

    /// Stages `snapshot` in this (empty) transaction.
    pub fn restore(&self, snapshot: TxSnapshot) -> Result<(), TxError> {
        for g in snapshot.grants {
            let overlay = self.overlay(&g.root, &g.guest)?;
            overlay.restore(g.overlay).map_err(|e| TxError::Io {
                dir: g.root.clone(),
                error: std::io::Error::other(e.to_string()),
            })?;
        }
        Ok(())
    }

    /// Stages here what a copy of this transaction, as it was at
    /// `before`, changed since (`after`): a script's call that ran in
    /// another process (see [`Overlay::apply_changes`]).
    pub fn apply_changes(&self, before: &TxSnapshot, after: TxSnapshot) -> Result<(), TxError> {
        let empty = OverlaySnapshot::default();
        for g in after.grants {
            let was = before
                .grants
                .iter()
                .find(|b| b.root == g.root)
                .map_or(&empty, |b| &b.overlay);
            let overlay = self.overlay(&g.root, &g.guest)?;
            overlay
                .apply_changes(was, g.overlay)
                .map_err(|e| TxError::Io {
                    dir: g.root.clone(),
                    error: std::io::Error::other(e.to_string()),
                })?;
        }
        Ok(())
    }

    /// Whether the script's calls changed nothing.
    pub fn is_clean(&self) -> bool {
        self.lock().iter().all(|g| g.overlay.is_clean())
    }

    /// The staged overlays, to compute the effect set and commit it.
    pub fn staged(&self) -> Staged {
        Staged::new(
            self.lock()
                .iter()
                .map(|g| (g.guest.clone(), g.overlay.clone()))
                .collect(),
        )
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        // The overlays remove their own staging directories; this one held
        // them.
        if self.stage.exists() {
            let _ = std::fs::remove_dir_all(&self.stage);
        }
    }
}

fn canonical(host: &Path) -> Result<PathBuf, TxError> {
    std::fs::canonicalize(host).map_err(|error| TxError::Io {
        dir: host.to_owned(),
        error,
    })
}

/// The overlay of `root`, or an overlap with another.
fn find(grants: &[Grant], root: &Path) -> Result<Option<Arc<Overlay>>, TxError> {
    for g in grants {
        if g.root == root {
            return Ok(Some(g.overlay.clone()));
        }
        if g.root.starts_with(root) || root.starts_with(&g.root) {
            return Err(TxError::Overlap {
                dir: root.to_owned(),
                other: g.root.clone(),
            });
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::{Kind, OpenRequest, Opened};
    use std::io::Write as _;

    fn write(o: &Overlay, path: &str, text: &str) {
        let req = OpenRequest {
            create: true,
            truncate: true,
            write: true,
            ..OpenRequest::default()
        };
        match o.open("", path, req).expect("opens") {
            Opened::File { mut file, .. } => file.write_all(text.as_bytes()).expect("writes"),
            Opened::Dir { .. } => panic!("a file"),
        }
    }

    fn read(o: &Overlay, path: &str) -> Option<String> {
        o.read_at(path, 1 << 20)
            .ok()
            .map(|b| String::from_utf8(b).expect("utf-8"))
    }

    #[test]
    fn calls_share_one_overlay_per_directory_and_see_each_other() {
        let dir = tempfile::tempdir().expect("tmp");
        let stage = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.txt"), "old").expect("fixture");
        let tx = Transaction::new(stage.path().join("tx"));
        assert!(tx.existing(dir.path()).expect("ok").is_none());
        let first = tx.overlay(dir.path(), "/workspace").expect("overlay");
        write(&first, "a.txt", "new");
        // A later call, even through another spelling of the directory.
        let dotted = dir.path().join(".");
        let second = tx.existing(&dotted).expect("ok").expect("the same overlay");
        assert_eq!(read(&second, "a.txt").as_deref(), Some("new"));
        assert_eq!(second.kind_at("a.txt").expect("ok"), Some(Kind::File));
        assert_eq!(second.kind_at("b.txt").expect("ok"), None);
        // The tree itself is untouched until a commit.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).expect("read"),
            "old"
        );
        assert!(!tx.is_clean());
        assert_eq!(tx.staged().effects().expect("effects").effects.len(), 1);
    }

    #[test]
    fn a_failed_call_goes_back_to_its_savepoint() {
        let dir = tempfile::tempdir().expect("tmp");
        let stage = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.txt"), "v0").expect("fixture");
        let tx = Transaction::new(stage.path().join("tx"));
        let o = tx.overlay(dir.path(), "/workspace").expect("overlay");
        write(&o, "a.txt", "v1");
        let sp = tx.savepoint();
        // The failing call rewrites a staged file, creates one, and adds a
        // directory to the transaction.
        write(&o, "a.txt", "v2");
        write(&o, "b.txt", "b");
        let other = tempfile::tempdir().expect("tmp");
        let added = tx.overlay(other.path(), "/data").expect("overlay");
        write(&added, "c.txt", "c");
        tx.rollback(sp);
        assert_eq!(
            read(&o, "a.txt").as_deref(),
            Some("v1"),
            "the staged bytes of before"
        );
        assert_eq!(read(&o, "b.txt"), None);
        assert!(added.is_clean());
        let effects = tx.staged().effects().expect("effects").effects;
        assert_eq!(effects.len(), 1, "{effects:?}");
        assert_eq!(effects[0].path, "a.txt");
    }

    #[test]
    fn a_snapshot_stages_the_same_changes_again() {
        let dir = tempfile::tempdir().expect("tmp");
        let stage = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.txt"), "v0").expect("fixture");
        std::fs::write(dir.path().join("gone.txt"), "x").expect("fixture");
        let first = Transaction::new(stage.path().join("one"));
        let o = first.overlay(dir.path(), "/workspace").expect("overlay");
        write(&o, "a.txt", "v1");
        write(&o, "new.txt", "n");
        o.unlink("", "gone.txt").expect("unlinks");
        let before = first.staged().effects().expect("effects");
        let snapshot = first.snapshot().expect("snapshot");
        let text = serde_json::to_string(&snapshot).expect("serializes");
        drop(first);
        let second = Transaction::new(stage.path().join("two"));
        second
            .restore(serde_json::from_str(&text).expect("deserializes"))
            .expect("restores");
        let after = second.staged().effects().expect("effects");
        let shape = |e: &crate::EffectSet| {
            e.effects
                .iter()
                .map(|x| {
                    (
                        x.path.clone(),
                        x.kind,
                        x.after.as_ref().map(|v| v.sha256.clone()),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&before), shape(&after));
        assert_eq!(after.effects.len(), 3);
        let o2 = second.existing(dir.path()).expect("ok").expect("overlay");
        assert_eq!(read(&o2, "a.txt").as_deref(), Some("v1"));
        // A snapshot naming a path out of the grant is refused.
        let evil = text.replace("new.txt", "../evil.txt");
        let third = Transaction::new(stage.path().join("three"));
        assert!(
            third
                .restore(serde_json::from_str(&evil).expect("json"))
                .is_err()
        );
    }

    #[test]
    fn nested_directories_cannot_share_a_transaction() {
        let dir = tempfile::tempdir().expect("tmp");
        let stage = tempfile::tempdir().expect("tmp");
        std::fs::create_dir(dir.path().join("sub")).expect("fixture");
        let tx = Transaction::new(stage.path().join("tx"));
        tx.overlay(dir.path(), "/workspace").expect("overlay");
        let e = tx
            .overlay(&dir.path().join("sub"), "/sub")
            .expect_err("overlaps");
        assert!(matches!(e, TxError::Overlap { .. }), "{e}");
        assert!(tx.existing(&dir.path().join("sub")).is_err());
    }

    #[test]
    fn a_path_out_of_the_grant_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let stage = tempfile::tempdir().expect("tmp");
        std::os::unix::fs::symlink("/etc", dir.path().join("out")).expect("fixture");
        let tx = Transaction::new(stage.path().join("tx"));
        let o = tx.overlay(dir.path(), "/workspace").expect("overlay");
        assert!(o.kind_at("out/passwd").is_err());
        assert!(o.kind_at("../x").is_err());
        assert!(o.read_at("out/passwd", 100).is_err());
    }
}
