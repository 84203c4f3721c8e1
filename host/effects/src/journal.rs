//! The commit: a call's effect set applied all or nothing, through a
//! write-ahead journal, and kept (with the files' pre-images) for undo.
//!
//! One journal entry per commit, a directory `<journal>/<id>/` holding its
//! plan (`plan.json`, then `prepared.json`, renamed `committed.json` once
//! applied) and the pre-images. The steps:
//!
//! 1. **Check.** Every path the call read or changes must look as it did
//!    when the call first saw it (size, times, inode); otherwise `conflict`
//!    and nothing is written.
//! 2. **Stage** (`state: staging`, durable before anything is written): each
//!    new file's bytes go to a temporary file in its target's directory (the
//!    grant's root when that directory is new), synced; each replaced or
//!    deleted file is hard-linked (or copied) into the entry as its
//!    pre-image.
//! 3. **Prepare** (`state: prepared`, written atomically and synced): the
//!    commit point.
//! 4. **Apply**: deletions, then new directories, then each temporary file
//!    renamed over its target (atomic per file; the old inode lives on as
//!    the pre-image), directories synced.
//! 5. **Done** (`state: committed`).
//!
//! A host killed before 3 leaves temporaries that [`Journal::open`] removes
//! (the tree is as before); killed after 3, the next start finishes 4. So a
//! call's files are all old or all new. Everything happens through a cap-std
//! directory of the grant: a symlink swapped in meanwhile cannot lead a
//! commit out of it.

use crate::effects::{EffectKind, EffectSet, Staged, Version, sha256, sha256_bytes};
use crate::overlay::{Kind, Seen, Source, current, lower_path, parent, real_dir, seen_of};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default cap on the journal's size (pre-images included).
pub const DEFAULT_MAX_JOURNAL_BYTES: u64 = 512 << 20;
/// Default age after which committed calls can no longer be undone.
pub const DEFAULT_MAX_JOURNAL_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Why a commit (or undo) did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// A path changed under the call; nothing was committed.
    #[error(
        "{path} changed since the call first read it (another program or session wrote it); nothing was committed"
    )]
    Conflict {
        /// The path, as the guest names it.
        path: String,
    },
    /// No such journal entry, or it cannot be undone or redone.
    #[error("{0}")]
    NotFound(String),
    /// The host's I/O failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> CommitError {
    let what = what.into();
    move |source| CommitError::Io { what, source }
}

/// Where the commit's state is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Temporaries are being written: roll back.
    Staging,
    /// The commit point passed: roll forward.
    Prepared,
    /// Applied.
    Committed,
    /// Applied, then undone (by the entry named in `undone_by`).
    Undone,
}

/// What the apply step does at one path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Action {
    /// Rename `temp` over the path.
    Write { temp: String },
    /// Rename the temporary symlink `temp` over the path.
    Symlink { temp: String },
    /// Make the directory.
    Mkdir,
    /// Remove the file or symlink.
    Delete,
    /// Remove the (empty) directory.
    Rmdir,
}

/// One path of a plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Op {
    /// The grant's directory on the host.
    root: PathBuf,
    /// The grant's directory as the guest sees it.
    grant: String,
    /// The path inside the grant.
    path: String,
    #[serde(flatten)]
    action: Action,
    /// The pre-image's file name in the entry (a replaced or deleted file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pre: Option<String>,
    /// The old symlink target (a replaced or deleted symlink).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pre_link: Option<String>,
    /// The old entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before: Option<Version>,
    /// The new entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<Version>,
    /// A write whose new bytes are a staged blob: the blob itself is renamed
    /// over the path (no copy), or copied when it is on another file system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blob: Option<PathBuf>,
}

/// A journal entry: one committed call (or one undo).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The entry's id (sortable by time).
    pub id: String,
    /// The session of the call.
    pub session: String,
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// When it was committed (ms since the epoch).
    pub time_ms: u64,
    /// Where it stands.
    pub state: State,
    /// One line a person reads.
    pub headline: String,
    /// The effects (hashes and sizes, no contents).
    pub effects: EffectSet,
    /// The entry this one undid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
    /// The entry that undid this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_by: Option<String>,
    ops: Vec<Op>,
}

/// Who a commit is for.
#[derive(Debug, Clone, Default)]
pub struct CommitInfo {
    /// The session.
    pub session: String,
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
}

/// What [`Journal::open`] found and finished.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Commits that had passed their commit point and were finished.
    pub rolled_forward: Vec<String>,
    /// Commits that had not, and were removed (the tree is as before them).
    pub rolled_back: Vec<String>,
    /// What stopped hosts had staged, and what is staged now (filled by
    /// [`crate::recover`]; empty from [`Journal::open`] alone).
    pub staging: crate::Swept,
}

/// The commit journal in the host's cache directory.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    max_bytes: std::sync::atomic::AtomicU64,
    max_age_ms: std::sync::atomic::AtomicU64,
    seq: std::sync::atomic::AtomicU64,
    /// Flush every step to disk (`fsync`): survive power loss, not only a
    /// killed host.
    sync: std::sync::atomic::AtomicBool,
    /// The size of each applied entry, by id (for pruning).
    sizes: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
    /// This journal's claim in `HOSTS`: its entries' ids carry the claim's
    /// id, and a held claim keeps other hosts from recovering them.
    claim: crate::Claim,
}

/// Where the hosts writing a journal hold their claims (see [`crate::Claim`]).
const HOSTS: &str = ".hosts";

/// An entry's files: the plan written before anything else, the plan at
/// the commit point, and the same renamed once applied.
const PLAN: &str = "plan.json";
const PREPARED: &str = "prepared.json";
const COMMITTED: &str = "committed.json";

/// An entry read back: the furthest step whose file is whole.
fn read_entry(dir: &Path) -> Option<Record> {
    let read = |name: &str| -> Option<Record> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).ok()?).ok()
    };
    if let Some(mut r) = read(COMMITTED) {
        if r.state != State::Undone {
            r.state = State::Committed;
        }
        return Some(r);
    }
    if let Some(mut r) = read(PREPARED) {
        r.state = State::Prepared;
        return Some(r);
    }
    let mut r = read(PLAN)?;
    r.state = State::Staging;
    Some(r)
}

/// Commits between two looks at the journal's limits.
const PRUNE_EVERY: u64 = 32;

/// The claim that made entry `id` (`MS-CLAIM-N`).
fn owner_of(id: &str) -> &str {
    id.split('-').nth(1).unwrap_or("")
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    use toolhost_contract::clock::{Clock, SystemClock};
    SystemClock::default().wall_ms()
}

fn sync_dir(d: &Dir, rel: &str) {
    if let Ok(h) = d.open_dir(lower_path(rel)) {
        let _ = h.into_std_file().sync_all();
    }
}

impl Journal {
    /// Opens (creating) the journal at `dir` and finishes or rolls back
    /// whatever a killed host left mid-commit.
    pub fn open(dir: &Path) -> Result<(Journal, Recovery), CommitError> {
        crate::make_private(dir).map_err(io_err(format!("journal {}", dir.display())))?;
        let claim = crate::Claim::take(&dir.join(HOSTS))
            .map_err(io_err(format!("journal {}", dir.display())))?;
        let j = Journal {
            dir: dir.to_path_buf(),
            max_bytes: std::sync::atomic::AtomicU64::new(DEFAULT_MAX_JOURNAL_BYTES),
            max_age_ms: std::sync::atomic::AtomicU64::new(ms(DEFAULT_MAX_JOURNAL_AGE)),
            seq: std::sync::atomic::AtomicU64::new(0),
            sync: std::sync::atomic::AtomicBool::new(false),
            sizes: std::sync::Mutex::default(),
            claim,
        };
        let mut rec = Recovery::default();
        // The claims of the hosts whose entries are recovered here, held
        // until the end so no other host recovers them meanwhile.
        let mut owners: std::collections::HashMap<String, Option<crate::Orphan>> =
            std::collections::HashMap::new();
        // One pass over the entries' names; only an unfinished one (no
        // `committed.json`) is read.
        for e in std::fs::read_dir(dir)
            .map_err(io_err("reading the journal"))?
            .flatten()
        {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || path.join(COMMITTED).exists() || !path.is_dir() {
                continue;
            }
            // Another host sharing this journal may be committing it now:
            // then its claim is held. (A pid would not do: a restarted
            // container's host has the same one every time.)
            let owner = owner_of(&name);
            let gone = owners
                .entry(owner.to_owned())
                .or_insert_with(|| crate::orphan(&dir.join(HOSTS), owner))
                .is_some();
            if !gone {
                tracing::debug!(entry = %name, "an unfinished commit of a running host");
                continue;
            }
            match read_entry(&path) {
                // No plan became whole: killed before anything reached the
                // tree (a staging plan is written before any temporary is);
                // what the entry holds goes.
                None => {
                    let _ = std::fs::remove_dir_all(&path);
                    rec.rolled_back.push(name);
                }
                Some(r) if r.state == State::Prepared => {
                    let mut r = r;
                    j.apply(&r)?;
                    j.mark_committed(&mut r)?;
                    rec.rolled_forward.push(r.id.clone());
                }
                Some(r) => {
                    j.roll_back(&r);
                    rec.rolled_back.push(r.id.clone());
                }
            }
        }
        for o in owners.into_values().flatten() {
            o.release();
        }
        Ok((j, rec))
    }

    /// Caps the journal (defaults: [`DEFAULT_MAX_JOURNAL_BYTES`],
    /// [`DEFAULT_MAX_JOURNAL_AGE`]).
    pub fn with_limits(self, max_bytes: u64, max_age: Duration) -> Journal {
        self.set_limits(max_bytes, max_age);
        self
    }

    /// Changes the limits (a toolbox's `[journal]`); applied at the next
    /// look at them.
    pub fn set_limits(&self, max_bytes: u64, max_age: Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        self.max_bytes.store(max_bytes, Relaxed);
        self.max_age_ms.store(ms(max_age), Relaxed);
    }

    /// Changes whether commits are flushed to disk (see [`Journal::with_sync`]).
    pub fn set_sync(&self, sync: bool) {
        self.sync.store(sync, std::sync::atomic::Ordering::Relaxed);
    }

    fn syncs(&self) -> bool {
        self.sync.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Makes every commit durable against power loss, not only against a
    /// killed host: each journal step, temporary file and directory is
    /// flushed to disk (`fsync`) before the next. Off (the default), a
    /// commit is still all or nothing when the host dies (the kernel keeps
    /// what was written), at a fraction of the cost.
    pub fn with_sync(self, sync: bool) -> Journal {
        self.set_sync(sync);
        self
    }

    /// The journal's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> Result<Vec<Record>, CommitError> {
        let mut out = Vec::new();
        let rd = std::fs::read_dir(&self.dir).map_err(io_err("reading the journal"))?;
        for e in rd.flatten() {
            // (An entry with no plan yet is being staged, or was, by a host
            // that died: `open` removes those.)
            if let Some(r) = read_entry(&e.path()) {
                out.push(r);
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn new_id(&self) -> String {
        let n = self.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("{:013}-{}-{n}", now_ms(), self.claim.id())
    }

    fn sync_entry_dir(&self, dir: &Path) {
        if self.syncs()
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
    }

    /// Step 5: marks an applied entry committed (its prepared plan renamed).
    fn mark_committed(&self, r: &mut Record) -> Result<(), CommitError> {
        let dir = self.dir.join(&r.id);
        std::fs::rename(dir.join(PREPARED), dir.join(COMMITTED))
            .map_err(io_err(format!("journal entry {}", r.id)))?;
        self.sync_entry_dir(&dir);
        r.state = State::Committed;
        Ok(())
    }

    /// Writes `r` where its state says: the staging plan and the prepared
    /// one are new files (a torn one is one whose step never happened); a
    /// committed entry's record is replaced atomically (undo marks it).
    fn write_plan(&self, r: &Record) -> Result<(), CommitError> {
        let dir = self.dir.join(&r.id);
        let what = || format!("journal entry {}", r.id);
        let text = serde_json::to_vec(r).map_err(|e| CommitError::Io {
            what: what(),
            source: io::Error::other(e),
        })?;
        let (name, atomic) = match r.state {
            State::Staging => (PLAN, false),
            State::Prepared => (PREPARED, false),
            State::Committed | State::Undone => (COMMITTED, true),
        };
        let target = dir.join(name);
        let tmp = dir.join(format!("{name}.tmp"));
        let mut f =
            std::fs::File::create(if atomic { &tmp } else { &target }).map_err(io_err(what()))?;
        f.write_all(&text).map_err(io_err(what()))?;
        if self.syncs() {
            f.sync_all().map_err(io_err(what()))?;
        }
        if atomic {
            std::fs::rename(&tmp, &target).map_err(io_err(what()))?;
        }
        self.sync_entry_dir(&dir);
        Ok(())
    }

    /// Commits `set` (the effect set of `staged`, as computed and perhaps
    /// approved): all of it or, on `conflict` or an I/O failure before the
    /// commit point, none of it.
    pub fn commit(
        &self,
        staged: &Staged,
        set: &EffectSet,
        info: &CommitInfo,
    ) -> Result<Record, CommitError> {
        let prepared = self.prepare(staged, set, info)?;
        self.finish(prepared)
    }

    /// Steps 1 to 3: checks, stages and passes the commit point; nothing in
    /// the tree has changed yet, and from here the commit happens even if
    /// the host dies.
    fn prepare(
        &self,
        staged: &Staged,
        set: &EffectSet,
        info: &CommitInfo,
    ) -> Result<Record, CommitError> {
        // 1. Check: nothing the call saw has changed since.
        for (guest, o) in &staged.grants {
            // Files read while nothing was staged, by the path the guest
            // gave (cap-std follows its symlinks, as the open did).
            for (p, was) in o.read_seen() {
                let now = o
                    .lower_dir()
                    .metadata(&p)
                    .map_or(Seen::Absent, |m| seen_of(&m));
                if now != was {
                    return Err(CommitError::Conflict {
                        path: format!("{}/{p}", guest.trim_end_matches('/')),
                    });
                }
            }
            // What the call saw present (read, or changed). A path it saw
            // absent matters only when it creates it: that effect's
            // fingerprint is checked below.
            for (p, was) in o.seen() {
                if matches!(was, Seen::Absent) {
                    continue;
                }
                if current(o.lower_dir(), &p) != was {
                    return Err(CommitError::Conflict {
                        path: format!("{}/{p}", guest.trim_end_matches('/')),
                    });
                }
            }
        }
        for e in &set.effects {
            let Some(x) = &e.internal else { continue };
            let Some(o) = staged.overlay(x.grant) else {
                continue;
            };
            if current(o.lower_dir(), &e.path) != x.fingerprint {
                return Err(CommitError::Conflict {
                    path: format!("{}/{}", e.grant.trim_end_matches('/'), e.path),
                });
            }
        }
        let id = self.new_id();
        let entry = self.dir.join(&id);
        std::fs::create_dir_all(&entry).map_err(io_err(format!("journal entry {id}")))?;
        // 2. The plan, then the temporaries and pre-images.
        let mut ops: Vec<Op> = Vec::new();
        let mut sources: Vec<Option<Bytes>> = Vec::new();
        for e in &set.effects {
            let Some(x) = &e.internal else { continue };
            let Some(o) = staged.overlay(x.grant) else {
                continue;
            };
            let op = |path: &str, action| Op {
                root: o.root().to_path_buf(),
                grant: e.grant.clone(),
                path: path.to_owned(),
                action,
                pre: None,
                pre_link: None,
                before: e.before.clone(),
                after: e.after.clone(),
                blob: None,
            };
            let temp = |n: usize| format!(".toolhost-{id}-{n}.tmp");
            let (main, src) = match (e.kind, e.entry) {
                (EffectKind::Deleted, Kind::Dir) => (op(&e.path, Action::Rmdir), None),
                (EffectKind::Deleted, _) => (op(&e.path, Action::Delete), None),
                (EffectKind::Created, Kind::Dir) => (op(&e.path, Action::Mkdir), None),
                (_, Kind::Symlink) => (
                    op(
                        &e.path,
                        Action::Symlink {
                            temp: temp(ops.len()),
                        },
                    ),
                    x.target.clone().map(Bytes::Link),
                ),
                (_, _) => {
                    if let Some(from) = &e.from {
                        let mut d = op(from, Action::Delete);
                        d.before = e.after.clone();
                        d.after = None;
                        ops.push(d);
                        sources.push(None);
                    }
                    let mut w = op(
                        &e.path,
                        Action::Write {
                            temp: temp(ops.len()),
                        },
                    );
                    // A staged blob moves into place; lower bytes (a
                    // rename) are copied.
                    if let Some(Source::Blob(b)) = &x.source {
                        w.blob = Some(b.clone());
                    }
                    (w, x.source.clone().map(Bytes::File))
                }
            };
            ops.push(main);
            sources.push(src);
        }
        let mut record = Record {
            id: id.clone(),
            session: info.session.clone(),
            call_id: info.call_id.clone(),
            tool: info.tool.clone(),
            time_ms: now_ms(),
            state: State::Staging,
            headline: set.headline(5),
            effects: EffectSet {
                effects: set
                    .effects
                    .iter()
                    .cloned()
                    .map(|mut e| {
                        e.diff = None;
                        e
                    })
                    .collect(),
            },
            undoes: None,
            undone_by: None,
            ops,
        };
        // The staging plan names the temporaries a kill before the commit
        // point would leave in the tree; a commit that only moves staged
        // blobs, makes directories and deletes leaves none there, and needs
        // no staging plan (an entry with no plan is removed at the next
        // start, with the links it holds).
        let temporaries = record.ops.iter().any(|o| match o.action {
            Action::Write { .. } => o.blob.is_none(),
            Action::Symlink { .. } => true,
            _ => false,
        });
        if temporaries {
            self.write_plan(&record)?;
        }
        let staged_result = self.stage(staged, &mut record, &sources);
        if let Err(e) = staged_result {
            self.roll_back(&record);
            return Err(e);
        }
        // 3. The commit point.
        record.state = State::Prepared;
        self.write_plan(&record)?;
        Ok(record)
    }

    /// Steps 4 and 5: applies a prepared entry and marks it committed.
    fn finish(&self, mut record: Record) -> Result<Record, CommitError> {
        // A failure here is finished at the next start.
        self.apply(&record)?;
        self.mark_committed(&mut record)?;
        self.after_commit(&record)?;
        Ok(record)
    }

    /// Writes the temporaries and the pre-images of `record`'s ops.
    fn stage(
        &self,
        staged: &Staged,
        record: &mut Record,
        sources: &[Option<Bytes>],
    ) -> Result<(), CommitError> {
        let entry = self.dir.join(&record.id);
        // Made at the first pre-image (a call that only creates has none).
        let mut pre: Option<Dir> = None;
        let mut pre_dir = || -> Result<Dir, CommitError> {
            if let Some(d) = &pre {
                return d.try_clone().map_err(io_err("the journal entry"));
            }
            std::fs::create_dir_all(entry.join("pre")).map_err(io_err("the journal entry"))?;
            let d = Dir::open_ambient_dir(entry.join("pre"), ambient_authority())
                .map_err(io_err("the journal entry"))?;
            let again = d.try_clone().map_err(io_err("the journal entry"))?;
            pre = Some(d);
            Ok(again)
        };
        for (n, op) in record.ops.iter_mut().enumerate() {
            let shown = format!("{}/{}", op.grant.trim_end_matches('/'), op.path);
            let what = || shown.clone();
            let root = open_root(&op.root)?;
            let grant_ix = staged.grants.iter().position(|(_, o)| o.root() == op.root);
            // The pre-image of what the op replaces or deletes (nothing is
            // there when a parent is a symlink: cap-std would follow it).
            let here = if real_dir(&root, parent(&op.path).unwrap_or("")) {
                root.symlink_metadata(&op.path)
            } else {
                Err(io::ErrorKind::NotFound.into())
            };
            match here {
                Ok(m) if m.is_file() && !matches!(op.action, Action::Mkdir) => {
                    let jdir = pre_dir()?;
                    let name = format!("{n}");
                    if root.hard_link(&op.path, &jdir, &name).is_err() {
                        let mut from = root.open(&op.path).map_err(io_err(what()))?;
                        let mut to = jdir.create(&name).map_err(io_err(what()))?;
                        io::copy(&mut from, &mut to).map_err(io_err(what()))?;
                        if self.syncs() {
                            to.sync_all().map_err(io_err(what()))?;
                        }
                    }
                    op.pre = Some(name);
                }
                Ok(m) if m.is_symlink() => {
                    op.pre_link = root
                        .read_link_contents(&op.path)
                        .ok()
                        .map(|t| t.to_string_lossy().into_owned());
                }
                _ => {}
            }
            // What is there now, when the effect had another kind there.
            if op.before.is_none() {
                op.before = version(&root, &op.path);
            }
            if let Some(blob) = op.blob.take() {
                // Renamed into place when applied: no temporary. The entry
                // keeps a link to it, so the bytes outlive the call's
                // staging area until they are in place (a roll-forward
                // needs them).
                let kept = entry.join(format!("new-{n}"));
                if std::fs::hard_link(&blob, &kept).is_err() {
                    std::fs::copy(&blob, &kept).map_err(io_err(what()))?;
                }
                op.blob = Some(kept);
                continue;
            }
            let temp = match &op.action {
                Action::Write { temp } | Action::Symlink { temp } => {
                    temp_path(&root, &op.path, temp)
                }
                _ => String::new(),
            };
            match (&mut op.action, sources.get(n).cloned().flatten()) {
                (Action::Write { temp: slot }, Some(Bytes::File(src))) => {
                    let t = temp;
                    let mut to = root.create(&t).map_err(io_err(what()))?;
                    match &src {
                        Source::Blob(b) => {
                            let mut from = std::fs::File::open(b).map_err(io_err(what()))?;
                            io::copy(&mut from, &mut to).map_err(io_err(what()))?;
                        }
                        Source::Lower(r) => {
                            let o = grant_ix
                                .and_then(|i| staged.overlay(i))
                                .ok_or_else(|| CommitError::NotFound(what()))?;
                            let mut from = o.lower_dir().open(r).map_err(io_err(what()))?;
                            io::copy(&mut from, &mut to).map_err(io_err(what()))?;
                        }
                    }
                    let mode = op.after.as_ref().map_or(0o644, |v| v.mode);
                    use cap_std::fs::PermissionsExt as _;
                    to.set_permissions(cap_std::fs::Permissions::from_mode(mode))
                        .map_err(io_err(what()))?;
                    if self.syncs() {
                        to.sync_all().map_err(io_err(what()))?;
                    }
                    *slot = t;
                }
                (Action::Symlink { temp: slot }, Some(Bytes::Link(target))) => {
                    root.symlink_contents(&target, &temp)
                        .map_err(io_err(what()))?;
                    *slot = temp;
                }
                (Action::Write { .. } | Action::Symlink { .. }, _) => {
                    return Err(CommitError::NotFound(format!(
                        "{}: no staged bytes",
                        what()
                    )));
                }
                _ => {}
            }
        }
        // (The plan is written again at the commit point, with the
        // temporaries where they are and the pre-images.)
        Ok(())
    }

    /// Removes a staging entry's temporaries and the entry.
    fn roll_back(&self, r: &Record) {
        for op in &r.ops {
            if let (Action::Write { temp } | Action::Symlink { temp }, Ok(root)) =
                (&op.action, open_root(&op.root))
            {
                for t in [
                    temp.clone(),
                    crate::overlay::join(parent(&op.path).unwrap_or(""), temp),
                ] {
                    if t.contains(".toolhost-") {
                        let _ = root.remove_file(&t);
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(self.dir.join(&r.id));
    }

    /// Applies a prepared entry; safe to run again (each step checks).
    fn apply(&self, r: &Record) -> Result<(), CommitError> {
        let mut dirs: Vec<(PathBuf, String)> = Vec::new();
        let ops = apply_order(&r.ops);
        for op in ops {
            let root = open_root(&op.root)?;
            let what = || format!("{}/{}", op.grant.trim_end_matches('/'), op.path);
            let gone_ok = |e: io::Error| {
                if e.kind() == io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            };
            match &op.action {
                Action::Delete => root
                    .remove_file(&op.path)
                    .or_else(gone_ok)
                    .map_err(io_err(what()))?,
                Action::Rmdir => root
                    .remove_dir(&op.path)
                    .or_else(gone_ok)
                    .map_err(io_err(what()))?,
                Action::Mkdir => match root.create_dir(&op.path) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                        return Err(io_err(what())(e));
                    }
                    _ => {}
                },
                Action::Write { temp } if op.blob.is_some() => {
                    if let Some(blob) = &op.blob {
                        move_blob(&root, blob, temp, &op.path).map_err(io_err(what()))?;
                    }
                }
                Action::Write { temp } | Action::Symlink { temp } => {
                    match root.rename(temp, &root, &op.path) {
                        Ok(()) => {}
                        // Renamed already (a roll-forward after a kill).
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io_err(what())(e)),
                    }
                }
            }
            dirs.push((op.root.clone(), parent(&op.path).unwrap_or("").to_owned()));
        }
        if self.syncs() {
            dirs.sort();
            dirs.dedup();
            for (root, d) in dirs {
                if let Ok(root) = open_root(&root) {
                    sync_dir(&root, &d);
                }
            }
        }
        Ok(())
    }

    /// Keeps the journal within its limits: looked at on this process's
    /// first commit (not at start-up, which it would slow, and with the
    /// toolbox's limits by then), then every [`PRUNE_EVERY`] commits.
    fn after_commit(&self, _r: &Record) -> Result<(), CommitError> {
        let n = self.seq.load(std::sync::atomic::Ordering::Relaxed);
        if !n.saturating_sub(1).is_multiple_of(PRUNE_EVERY) {
            return Ok(());
        }
        self.prune()
    }

    /// Removes the oldest committed entries beyond the size or age limit.
    /// Reads only the entries' names (their time is the id's prefix) and
    /// each entry's size once (an entry does not grow once committed).
    fn prune(&self) -> Result<(), CommitError> {
        let mut ids: Vec<String> = std::fs::read_dir(&self.dir)
            .map_err(io_err("reading the journal"))?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .collect();
        ids.sort();
        let now = now_ms();
        let age_ms = self.max_age_ms.load(std::sync::atomic::Ordering::Relaxed);
        let max_bytes = self.max_bytes.load(std::sync::atomic::Ordering::Relaxed);
        let mut sizes = self
            .sizes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sizes.retain(|id, _| ids.binary_search(id).is_ok());
        let mut total = 0u64;
        for id in ids.iter().rev() {
            let dir = self.dir.join(id);
            // Only applied entries go: an unfinished one is recovery's.
            if !dir.join(COMMITTED).exists() {
                continue;
            }
            let size = *sizes.entry(id.clone()).or_insert_with(|| dir_size(&dir));
            total = total.saturating_add(size);
            let time = id
                .split('-')
                .next()
                .and_then(|t| t.parse::<u64>().ok())
                .unwrap_or(0);
            if now.saturating_sub(time) > age_ms || total > max_bytes {
                let _ = std::fs::remove_dir_all(&dir);
                sizes.remove(id);
            }
        }
        Ok(())
    }

    /// Reverts the entry `id` (the newest commit of `session` when `None`),
    /// refusing with `conflict` if any of its paths changed since.
    pub fn undo(&self, id: Option<&str>, session: Option<&str>) -> Result<Record, CommitError> {
        let entries = self.entries()?;
        let target = match id {
            Some(id) => entries
                .iter()
                .rev()
                .find(|r| r.id == id || r.call_id == id)
                .ok_or_else(|| {
                    CommitError::NotFound(format!("no committed call `{id}` in the journal"))
                })?,
            None => entries
                .iter()
                .rev()
                .find(|r| {
                    r.state == State::Committed
                        && r.undoes.is_none()
                        && session.is_none_or(|s| r.session == s)
                })
                .ok_or_else(|| CommitError::NotFound("no committed call to undo".into()))?,
        };
        if target.state != State::Committed {
            return Err(CommitError::NotFound(format!(
                "`{}` is {:?}, not committed: there is nothing to undo",
                target.id, target.state
            )));
        }
        self.revert(target)
    }

    /// Re-applies the undone entry `id` (the newest undone one when `None`).
    pub fn redo(&self, id: Option<&str>, session: Option<&str>) -> Result<Record, CommitError> {
        let entries = self.entries()?;
        let undone = entries
            .iter()
            .rev()
            .find(|r| {
                r.state == State::Undone
                    && r.undoes.is_none()
                    && id.is_none_or(|id| r.id == id || r.call_id == id)
                    && session.is_none_or(|s| r.session == s)
            })
            .ok_or_else(|| CommitError::NotFound("no undone call to redo".into()))?;
        let by = undone
            .undone_by
            .as_deref()
            .and_then(|u| entries.iter().find(|r| r.id == u))
            .ok_or_else(|| {
                CommitError::NotFound(format!(
                    "the undo of `{}` is no longer in the journal",
                    undone.id
                ))
            })?;
        let rec = self.revert(by)?;
        let mut original = undone.clone();
        original.state = State::Committed;
        original.undone_by = None;
        self.write_plan(&original)?;
        Ok(rec)
    }

    /// Commits the inverse of `r` from its pre-images, marks `r` undone.
    fn revert(&self, r: &Record) -> Result<Record, CommitError> {
        // Check: each path is as `r` left it (its last op says how).
        let mut expect: std::collections::BTreeMap<(&Path, &str), (&Op, Option<Version>)> =
            std::collections::BTreeMap::new();
        for op in apply_order(&r.ops) {
            let after = match op.action {
                Action::Delete | Action::Rmdir => None,
                Action::Mkdir => Some(Version {
                    sha256: String::new(),
                    size: 0,
                    mode: 0o755,
                }),
                _ => op.after.clone(),
            };
            expect.insert((op.root.as_path(), op.path.as_str()), (op, after));
        }
        for ((root, path), (op, expected)) in &expect {
            let now = version(&open_root(root)?, path);
            let same = match (&now, expected) {
                (None, None) => true,
                (Some(a), Some(b)) => a.sha256 == b.sha256,
                _ => false,
            };
            if !same {
                return Err(CommitError::Conflict {
                    path: format!("{}/{}", op.grant.trim_end_matches('/'), op.path),
                });
            }
        }
        let id = self.new_id();
        let entry = self.dir.join(&id);
        std::fs::create_dir_all(&entry).map_err(io_err(format!("journal entry {id}")))?;
        let src_dir = self.dir.join(&r.id).join("pre");
        let mut ops = Vec::new();
        let mut sources: Vec<Option<Bytes>> = Vec::new();
        for op in r.ops.iter().rev() {
            let mk = |action| Op {
                root: op.root.clone(),
                grant: op.grant.clone(),
                path: op.path.clone(),
                action,
                pre: None,
                pre_link: None,
                before: op.after.clone(),
                after: op.before.clone(),
                blob: None,
            };
            let n = ops.len();
            let temp = format!(".toolhost-{id}-{n}.tmp");
            let (new, src) = match (&op.action, &op.pre, &op.pre_link) {
                (Action::Mkdir, _, _) => (mk(Action::Rmdir), None),
                (Action::Rmdir, _, _) => (mk(Action::Mkdir), None),
                (_, Some(pre), _) => (
                    mk(Action::Write { temp }),
                    Some(Bytes::File(Source::Blob(src_dir.join(pre)))),
                ),
                (_, None, Some(t)) => (mk(Action::Symlink { temp }), Some(Bytes::Link(t.clone()))),
                (Action::Write { .. } | Action::Symlink { .. }, None, None) => {
                    (mk(Action::Delete), None)
                }
                (Action::Delete, None, None) => continue,
            };
            ops.push(new);
            sources.push(src);
        }
        let effects = EffectSet {
            effects: r
                .effects
                .effects
                .iter()
                .map(|e| {
                    let mut e = e.clone();
                    std::mem::swap(&mut e.before, &mut e.after);
                    e.kind = match e.kind {
                        EffectKind::Created => EffectKind::Deleted,
                        EffectKind::Deleted => EffectKind::Created,
                        k => k,
                    };
                    e.lines = e.lines.map(|(a, d)| (d, a));
                    e
                })
                .collect(),
        };
        let mut record = Record {
            id: id.clone(),
            session: r.session.clone(),
            call_id: r.call_id.clone(),
            tool: r.tool.clone(),
            time_ms: now_ms(),
            state: State::Staging,
            headline: format!("undo of {}: {}", r.id, effects.headline(5)),
            effects,
            undoes: Some(r.id.clone()),
            undone_by: None,
            ops,
        };
        self.write_plan(&record)?;
        if let Err(e) = self.stage(&Staged::default(), &mut record, &sources) {
            self.roll_back(&record);
            return Err(e);
        }
        record.state = State::Prepared;
        self.write_plan(&record)?;
        self.apply(&record)?;
        self.mark_committed(&mut record)?;
        let mut original = r.clone();
        original.state = State::Undone;
        original.undone_by = Some(id);
        self.write_plan(&original)?;
        Ok(record)
    }
}

/// Where an op's new entry comes from.
#[derive(Debug, Clone)]
enum Bytes {
    /// A file's bytes.
    File(Source),
    /// A symlink's target.
    Link(String),
}

/// Where the temporary `temp` for `path` goes: beside it, when its
/// directory is a real directory now (no symlink on the way), else in the
/// grant's root (a rename from there is as atomic on one file system).
fn temp_path(root: &Dir, path: &str, temp: &str) -> String {
    let dir = parent(path).unwrap_or("");
    if real_dir(root, dir) {
        crate::overlay::join(dir, temp)
    } else {
        temp.to_owned()
    }
}

/// Puts a staged blob at `path`: renamed (atomic, no copy) when it is on the
/// grant's file system, else copied to `temp` beside the path and renamed.
/// A blob already gone was moved by an earlier try (a roll-forward).
fn move_blob(root: &Dir, blob: &Path, temp: &str, path: &str) -> io::Result<()> {
    let (Some(dir), Some(name)) = (blob.parent(), blob.file_name()) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    let stage = match Dir::open_ambient_dir(dir, ambient_authority()) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    match stage.rename(name, root, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        // Another file system: a copy beside the path, renamed over it.
        Err(e) if e.raw_os_error() == Some(18) => {
            let t = temp_path(root, path, temp);
            let mut from = stage.open(name)?;
            let mode = from.metadata()?.permissions();
            let mut to = root.create(&t)?;
            io::copy(&mut from, &mut to)?;
            to.set_permissions(mode)?;
            drop(to);
            root.rename(&t, root, path)
        }
        Err(e) => Err(e),
    }
}

/// `ops` in the order they are applied: deletions, directories removed
/// (deepest first), directories made, files and links put in place.
fn apply_order(ops: &[Op]) -> Vec<&Op> {
    let order = |a: &Action| match a {
        Action::Delete => 0,
        Action::Rmdir => 1,
        Action::Mkdir => 2,
        Action::Write { .. } | Action::Symlink { .. } => 3,
    };
    let mut ops: Vec<&Op> = ops.iter().collect();
    ops.sort_by(|a, b| {
        order(&a.action)
            .cmp(&order(&b.action))
            .then_with(|| match a.action {
                Action::Rmdir => b.path.cmp(&a.path),
                _ => a.path.cmp(&b.path),
            })
    });
    ops
}

fn open_root(root: &Path) -> Result<Dir, CommitError> {
    Dir::open_ambient_dir(root, ambient_authority())
        .map_err(io_err(format!("granted directory {}", root.display())))
}

/// The entry at `rel` now, hashed (undo's check).
fn version(d: &Dir, rel: &str) -> Option<Version> {
    if !real_dir(d, parent(rel).unwrap_or("")) {
        return None;
    }
    let m = d.symlink_metadata(rel).ok()?;
    if m.is_dir() {
        return Some(Version {
            sha256: String::new(),
            size: 0,
            mode: 0o755,
        });
    }
    if m.is_symlink() {
        let t = d.read_link_contents(rel).ok()?;
        let t = t.to_string_lossy();
        return Some(Version {
            sha256: sha256_bytes(t.as_bytes()),
            size: t.len() as u64,
            mode: 0o777,
        });
    }
    Some(Version {
        sha256: sha256(d.open(rel).ok()?).ok()?,
        size: m.len(),
        mode: m.mode() & 0o7777,
    })
}

fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::overlay::{OpenRequest, Opened, Overlay};
    use std::sync::Arc;

    fn write(o: &Overlay, path: &str, text: &str) {
        let req = OpenRequest {
            follow: true,
            create: true,
            truncate: true,
            write: true,
            ..OpenRequest::default()
        };
        let Ok(Opened::File { mut file, .. }) = o.open("", path, req) else {
            panic!("open {path}")
        };
        file.write_all(text.as_bytes()).unwrap();
    }

    /// A tree of `n` files `f-N` holding `old`, an overlay rewriting them all
    /// and creating `new`, and its effect set.
    fn scene(n: usize) -> (tempfile::TempDir, Staged, EffectSet) {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("t");
        std::fs::create_dir(&root).unwrap();
        for i in 0..n {
            std::fs::write(root.join(format!("f-{i}")), "old").unwrap();
        }
        let o = Overlay::new(&root, base.path().join("stage")).unwrap();
        for i in 0..n {
            write(&o, &format!("f-{i}"), "new");
        }
        write(&o, "new", "created");
        let staged = Staged::new(vec![("/w".into(), Arc::new(o))]);
        let set = staged.effects().unwrap();
        (base, staged, set)
    }

    fn contents(root: &Path) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    std::fs::read_to_string(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_host_killed_after_the_commit_point_is_finished_at_the_next_start() {
        let (base, staged, set) = scene(5);
        let root = base.path().join("t");
        let jdir = base.path().join("j");
        let (j, _) = Journal::open(&jdir).unwrap();
        let prepared = j.prepare(&staged, &set, &CommitInfo::default()).unwrap();
        // Killed halfway through applying: two files are in place.
        let root_dir = open_root(&root).unwrap();
        for op in prepared.ops.iter().take(2) {
            if let (Action::Write { temp }, Some(blob)) = (&op.action, &op.blob) {
                move_blob(&root_dir, blob, temp, &op.path).unwrap();
            }
        }
        assert_eq!(std::fs::read_to_string(root.join("f-0")).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(root.join("f-4")).unwrap(), "old");
        drop((j, staged));
        let (_, rec) = Journal::open(&jdir).unwrap();
        assert_eq!(rec.rolled_forward, std::slice::from_ref(&prepared.id));
        let got = contents(&root);
        assert_eq!(got.len(), 6, "{got:?}");
        assert!(
            got.iter().all(|(n, t)| if n == "new" {
                t == "created"
            } else {
                t == "new"
            }),
            "{got:?}"
        );
    }

    #[test]
    fn a_running_hosts_unfinished_commit_is_left_to_it_whatever_its_pid() {
        // Two hosts on one journal in one process: the same pid, as two
        // containers' hosts (PID 1 both) sharing a volume have.
        let (base, staged, set) = scene(3);
        let jdir = base.path().join("j");
        let (running, _) = Journal::open(&jdir).unwrap();
        let prepared = running
            .prepare(&staged, &set, &CommitInfo::default())
            .unwrap();
        let (_, rec) = Journal::open(&jdir).unwrap();
        assert_eq!(rec, Recovery::default(), "not the second host's to recover");
        drop(running);
        let (_, rec) = Journal::open(&jdir).unwrap();
        assert_eq!(rec.rolled_forward, std::slice::from_ref(&prepared.id));
        assert!(
            std::fs::read_dir(jdir.join(HOSTS)).unwrap().all(|e| !e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(owner_of(&prepared.id))),
            "the gone host's claim is removed with its recovery"
        );
    }

    #[test]
    fn a_host_killed_before_the_commit_point_leaves_the_tree_as_it_was() {
        let (base, staged, set) = scene(5);
        let root = base.path().join("t");
        let before = contents(&root);
        let jdir = base.path().join("j");
        let (j, _) = Journal::open(&jdir).unwrap();
        let mut prepared = j.prepare(&staged, &set, &CommitInfo::default()).unwrap();
        // Killed while staging: the prepared plan was never (wholly) written,
        // the temporaries exist.
        std::fs::write(jdir.join(&prepared.id).join(PREPARED), "{\"torn").unwrap();
        prepared.state = State::Staging;
        assert_eq!(
            contents(&root),
            before,
            "nothing is written before the commit point"
        );
        drop((j, staged));
        let (_, rec) = Journal::open(&jdir).unwrap();
        assert_eq!(rec.rolled_back, std::slice::from_ref(&prepared.id));
        assert_eq!(contents(&root), before);
    }

    #[test]
    fn a_file_changed_after_the_call_saw_it_is_a_conflict_and_nothing_is_written() {
        let (base, staged, set) = scene(3);
        let root = base.path().join("t");
        std::fs::write(root.join("f-1"), "someone else's").unwrap();
        let (j, _) = Journal::open(&base.path().join("j")).unwrap();
        let e = j.commit(&staged, &set, &CommitInfo::default()).unwrap_err();
        assert!(
            matches!(&e, CommitError::Conflict { path } if path == "/w/f-1"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(root.join("f-0")).unwrap(), "old");
        assert!(!root.join("new").exists());
        assert!(j.entries().unwrap().is_empty());
    }
}
