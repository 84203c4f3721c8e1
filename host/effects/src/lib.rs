//! `toolhost-effects`: transactional file effects. Every write a call makes
//! in a read-write grant is staged in an [`Overlay`] (nothing in the user's
//! tree changes while the call runs; the guest sees its own writes); after
//! the call its [`EffectSet`] says what would change, path by path; the
//! [`Journal`] commits that set all or nothing, refuses it with `conflict`
//! when a path changed under the call, recovers a commit a killed host left
//! halfway, and keeps pre-images for undo and redo.
//!
//! A call that fails commits nothing: dropping its [`Staged`] discards the
//! staged bytes. The calls of one script share a [`Transaction`]: each sees
//! what the ones before it staged, a failed one goes back to its
//! savepoint, and the whole script commits as one.

mod claim;
mod effects;
mod journal;
mod overlay;
mod transaction;

pub use claim::{Claim, Orphan, StagingArea, Swept, Usage, orphan, sweep_staging};
pub use effects::{Effect, EffectKind, EffectSet, MAX_DIFF_FILE, Staged, Version};
pub use journal::{
    CommitError, CommitInfo, DEFAULT_MAX_JOURNAL_AGE, DEFAULT_MAX_JOURNAL_BYTES, Journal, Record,
    Recovery, State,
};
pub use overlay::{
    FsError, Kind, MAX_SYMLINK_HOPS, OpenRequest, Opened, Overlay, OverlaySnapshot, Savepoint, Stat,
};
pub use transaction::{Transaction, TxError, TxSavepoint, TxSnapshot};

/// toolhost's cache directory for this user: `$XDG_CACHE_HOME/toolhost` or
/// `~/.cache/toolhost` (`None` with neither variable set).
pub fn user_cache_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))
        .map(|d| d.join("toolhost"))
}

/// A directory of toolhost's own, private to the user (mode 0700 when it
/// is made): `NAME` in [`user_cache_dir`], else one in the system's
/// temporary directory for this process, the same at every call (never a
/// shared, guessable path there: staged bytes and pre-images are the
/// user's file contents).
pub fn private_dir(name: &str) -> std::path::PathBuf {
    if let Some(c) = user_cache_dir() {
        return c.join(name);
    }
    static MADE: std::sync::Mutex<Vec<(String, std::path::PathBuf)>> =
        std::sync::Mutex::new(Vec::new());
    let mut made = MADE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, p)) = made.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    use toolhost_contract::clock::{Clock, SystemClock};
    let p = std::env::temp_dir().join(format!(
        "toolhost-{name}-{}-{}",
        std::process::id(),
        SystemClock::default().monotonic_ns() ^ SystemClock::default().wall_ms()
    ));
    made.push((name.to_owned(), p.clone()));
    p
}

/// Opens the journal at `journal` (finishing or rolling back what a killed
/// host left mid-commit), then removes from the staging directory `staging`
/// what hosts that are gone staged: a host's start-up, and what the
/// journal's own commands run first.
pub fn recover(
    journal: &std::path::Path,
    staging: &std::path::Path,
) -> Result<(Journal, Recovery), CommitError> {
    let (j, mut rec) = Journal::open(journal)?;
    rec.staging = sweep_staging(staging).map_err(|source| CommitError::Io {
        what: format!("cleaning the staging directory {}", staging.display()),
        source,
    })?;
    Ok((j, rec))
}

/// Makes `dir` and its missing parents, the new ones readable by the user
/// alone (mode 0700).
pub fn make_private(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
