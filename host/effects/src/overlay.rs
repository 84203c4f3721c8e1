//! The overlay of one read-write grant for one call: the user's directory
//! (the *lower* tree, never written while the call runs) under the call's
//! changes (the *upper* nodes).
//!
//! - **Copy-up on first write.** A lower file opened for writing is copied to
//!   a blob in the call's staging directory first (or started empty when the
//!   open truncates); the guest's descriptor is the blob's.
//! - **Whiteouts** hide deleted lower entries; an *opaque* directory hides
//!   the lower directory it replaced (a directory removed and made again, or
//!   renamed over).
//! - **Renames and links** of lower files refer to the lower bytes
//!   ([`Node::LowerRef`]) instead of copying them.
//! - **Paths are resolved here**, in the merged view: `.`/`..` and symlinks
//!   (at most [`MAX_SYMLINK_HOPS`]), never past the grant's root and never
//!   through an absolute target, as cap-std does for a real directory. The
//!   lower tree itself is only read through a cap-std [`Dir`], so nothing
//!   this module does can reach outside the grant.
//! - **Memory** holds one node per path the call changed; file contents stay
//!   on disk.
//!
//! Reading costs one extra `lstat` per path component the guest names; a
//! read-only grant has no overlay at all.

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt, OpenOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Most symlinks followed while resolving one path (Linux's limit).
pub const MAX_SYMLINK_HOPS: u32 = 40;

/// How a filesystem operation in the overlay failed; mapped to WASI's
/// error codes by the runtime.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// No such file or directory.
    #[error("no such file or directory")]
    NoEntry,
    /// A path component is not a directory.
    #[error("not a directory")]
    NotDirectory,
    /// The operation needs a file, and this is a directory.
    #[error("is a directory")]
    IsDirectory,
    /// The path exists already.
    #[error("already exists")]
    Exist,
    /// The directory is not empty.
    #[error("directory not empty")]
    NotEmpty,
    /// The path leaves the grant (an absolute path or symlink target, or
    /// `..` above the root).
    #[error("not permitted: the path leaves the granted directory")]
    NotPermitted,
    /// Too many symlinks, or a symlink opened without following it.
    #[error("too many levels of symbolic links")]
    Loop,
    /// An argument that makes no sense (renaming a directory into itself,
    /// reading a link that is not one).
    #[error("invalid argument")]
    Invalid,
    /// The host's own I/O failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

/// What `stat` reports of an entry in the merged view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The entry's kind.
    pub kind: Kind,
    /// Its size in bytes.
    pub size: u64,
    /// Hard links to it.
    pub nlink: u64,
    /// Last access.
    pub accessed: Option<SystemTime>,
    /// Last data change.
    pub modified: Option<SystemTime>,
    /// Last status change.
    pub changed: Option<SystemTime>,
    /// The inode (lower or staged), for metadata hashes.
    pub ino: u64,
}

/// A staged change at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A file whose bytes are a blob in the staging directory.
    File(PathBuf),
    /// A file whose bytes are the lower file at this path (renamed or linked
    /// here, not copied).
    LowerRef(String),
    /// A directory; `opaque` hides the lower directory at the same path.
    Dir {
        /// Lower entries under this path are hidden.
        opaque: bool,
    },
    /// A symbolic link and its target, as given.
    Symlink(String),
    /// Deleted: hides the lower entry and everything under it.
    Whiteout,
}

/// Where a file's bytes are, in the merged view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The lower file at this path.
    Lower(String),
    /// A staged blob.
    Blob(PathBuf),
}

/// An entry in the merged view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    File(Source),
    Dir,
    Symlink(String),
    Absent,
}

/// What a lower path looked like when the call first saw it (the conflict
/// check compares it at commit).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Seen {
    /// It did not exist.
    Absent,
    /// A file or symlink with this identity.
    Present {
        kind: Kind,
        size: u64,
        mtime_ns: i128,
        ctime_ns: i128,
        ino: u64,
    },
}

/// How to open a path (`open-at`'s flags, decoded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenRequest {
    /// Follow a symlink in the last component.
    pub follow: bool,
    /// Create the file when it does not exist.
    pub create: bool,
    /// Fail when it exists.
    pub exclusive: bool,
    /// Truncate it to zero bytes.
    pub truncate: bool,
    /// It must be a directory.
    pub directory: bool,
    /// Open it for writing.
    pub write: bool,
}

/// An opened path.
#[derive(Debug)]
pub enum Opened {
    /// A file: the lower file (read-only) or a staged blob (writable).
    File {
        /// The open file.
        file: std::fs::File,
        /// Whether it is a staged blob opened for writing.
        writable: bool,
    },
    /// A directory at this path of the merged view; its handle is the lower
    /// directory when there is one.
    Dir {
        /// The path, relative to the grant's root.
        rel: String,
        /// The lower directory, if visible.
        handle: Option<std::fs::File>,
    },
}

struct State {
    nodes: BTreeMap<String, Node>,
    seen: BTreeMap<String, Seen>,
    /// Files opened for reading while nothing was staged, straight through
    /// the lower tree (symlinks followed by cap-std): path → first seen.
    read_seen: BTreeMap<String, Seen>,
    next_blob: u64,
    /// Blobs a savepoint keeps as they were: written again, they are
    /// copied first, so going back to the savepoint finds them unchanged.
    frozen: BTreeSet<PathBuf>,
}

/// What an overlay staged, as data ([`Overlay::snapshot`]).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OverlaySnapshot {
    nodes: Vec<(String, SavedNode)>,
    seen: Vec<(String, Seen)>,
    read_seen: Vec<(String, Seen)>,
}

impl OverlaySnapshot {
    /// The bytes of its staged files and the number of entries it stages
    /// (files, directories, links): what a receiver checks against the
    /// write budget before staging a snapshot it did not make.
    pub fn staged_size(&self) -> (u64, u64) {
        let mut bytes = 0u64;
        let mut entries = 0u64;
        for (_, n) in &self.nodes {
            match n {
                SavedNode::File { base64, .. } => {
                    // The decoded length: padding stands for no byte.
                    let pad = base64.bytes().rev().take_while(|&b| b == b'=').count();
                    let decoded = (base64.len() / 4 * 3).saturating_sub(pad);
                    bytes = bytes.saturating_add(decoded as u64);
                    entries += 1;
                }
                SavedNode::Dir { .. } | SavedNode::Symlink { .. } | SavedNode::LowerRef { .. } => {
                    entries += 1;
                }
                SavedNode::Whiteout => {}
            }
        }
        (bytes, entries)
    }
}

/// One staged path, as data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum SavedNode {
    /// A staged file's bytes and permission bits.
    File { base64: String, mode: u32 },
    /// The lower file renamed or linked here.
    LowerRef { from: String },
    /// A directory.
    Dir { opaque: bool },
    /// A symlink.
    Symlink { target: String },
    /// Deleted.
    Whiteout,
}

/// A point an overlay can go back to ([`Overlay::rollback`]): what it had
/// staged, and what it had seen of the lower tree, then.
#[derive(Debug, Clone, Default)]
pub struct Savepoint {
    nodes: BTreeMap<String, Node>,
    seen: BTreeMap<String, Seen>,
    read_seen: BTreeMap<String, Seen>,
}

/// One read-write grant's overlay for one call.
pub struct Overlay {
    root: PathBuf,
    lower: Dir,
    stage: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay")
            .field("root", &self.root)
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

/// `a` joined with the name `b` (`""` is the root).
pub(crate) fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_owned()
    } else {
        format!("{a}/{b}")
    }
}

/// The parent of `rel` (`None` for the root).
pub(crate) fn parent(rel: &str) -> Option<&str> {
    if rel.is_empty() {
        None
    } else {
        Some(rel.rsplit_once('/').map_or("", |(p, _)| p))
    }
}

/// `rel` as a path for cap-std (`.` for the root).
pub(crate) fn lower_path(rel: &str) -> &Path {
    Path::new(if rel.is_empty() { "." } else { rel })
}

/// Whether `rel` is `under` or inside it.
pub(crate) fn within(rel: &str, under: &str) -> bool {
    under.is_empty()
        || rel == under
        || (rel.len() > under.len()
            && rel.starts_with(under)
            && rel.as_bytes()[under.len()] == b'/')
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock leaves a consistent map (every update
    // is one insert or remove), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn kind_of(ft: cap_std::fs::FileType) -> Kind {
    if ft.is_dir() {
        Kind::Dir
    } else if ft.is_symlink() {
        Kind::Symlink
    } else {
        Kind::File
    }
}

pub(crate) fn seen_of(m: &cap_std::fs::Metadata) -> Seen {
    Seen::Present {
        kind: kind_of(m.file_type()),
        size: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        ino: m.ino(),
    }
}

fn stat_of(m: &std::fs::Metadata) -> Stat {
    use std::os::unix::fs::MetadataExt as _;
    let kind = if m.is_dir() {
        Kind::Dir
    } else if m.file_type().is_symlink() {
        Kind::Symlink
    } else {
        Kind::File
    };
    Stat {
        kind,
        size: m.len(),
        nlink: m.nlink(),
        accessed: m.accessed().ok(),
        modified: m.modified().ok(),
        changed: std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(
            u64::try_from(m.ctime()).unwrap_or(0),
            u32::try_from(m.ctime_nsec()).unwrap_or(0),
        )),
        ino: m.ino(),
    }
}

fn stat_of_lower(m: &cap_std::fs::Metadata) -> Stat {
    let at = |s: i64, ns: i64| {
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(
            u64::try_from(s).ok()?,
            u32::try_from(ns).ok()?,
        ))
    };
    Stat {
        kind: kind_of(m.file_type()),
        size: m.len(),
        nlink: m.nlink(),
        accessed: at(m.atime(), m.atime_nsec()),
        modified: at(m.mtime(), m.mtime_nsec()),
        changed: at(m.ctime(), m.ctime_nsec()),
        ino: m.ino(),
    }
}

impl Overlay {
    /// An overlay of the directory `root`, staging blobs under `stage`
    /// (created on the first write; removed with the overlay).
    pub fn new(root: &Path, stage: PathBuf) -> io::Result<Overlay> {
        let lower = Dir::open_ambient_dir(root, ambient_authority())?;
        Ok(Overlay {
            root: root.to_path_buf(),
            lower,
            stage,
            state: Mutex::new(State {
                nodes: BTreeMap::new(),
                seen: BTreeMap::new(),
                read_seen: BTreeMap::new(),
                next_blob: 0,
                frozen: BTreeSet::new(),
            }),
        })
    }

    /// The granted directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the call changed anything here (no change: nothing to commit).
    pub fn is_clean(&self) -> bool {
        lock(&self.state).nodes.is_empty()
    }

    /// Marks this point, for [`rollback`](Self::rollback): what is staged
    /// now stays as it is now (a later write to a staged file writes a
    /// copy). A script takes one before each of its calls, and a call that
    /// fails goes back to it, so its half-made changes never join the
    /// script's.
    pub fn savepoint(&self) -> Savepoint {
        let mut st = lock(&self.state);
        let blobs: Vec<PathBuf> = st
            .nodes
            .values()
            .filter_map(|n| match n {
                Node::File(b) => Some(b.clone()),
                _ => None,
            })
            .collect();
        st.frozen.extend(blobs);
        Savepoint {
            nodes: st.nodes.clone(),
            seen: st.seen.clone(),
            read_seen: st.read_seen.clone(),
        }
    }

    /// Goes back to `sp`: what was staged, and what was seen, since it was
    /// taken is forgotten (the blobs written since stay on disk until the
    /// overlay goes).
    pub fn rollback(&self, sp: Savepoint) {
        let mut st = lock(&self.state);
        st.nodes = sp.nodes;
        st.seen = sp.seen;
        st.read_seen = sp.read_seen;
    }

    /// What the merged view has at `rel` (a path relative to the root,
    /// symlinks followed inside the grant): `None` when nothing is there.
    /// Refused when the path leaves the grant. The host's own look, for
    /// the checks a call passes before it runs.
    pub fn kind_at(&self, rel: &str) -> Result<Option<Kind>, FsError> {
        let mut st = lock(&self.state);
        if rel.is_empty() || rel == "." {
            return Ok(Some(Kind::Dir));
        }
        let rel = match self.resolve(&mut st, "", rel, true) {
            Ok(r) => r,
            Err(FsError::NoEntry) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(match self.entry(&mut st, &rel)? {
            Entry::Absent => None,
            Entry::File(_) => Some(Kind::File),
            Entry::Dir => Some(Kind::Dir),
            Entry::Symlink(_) => Some(Kind::Symlink),
        })
    }

    /// The bytes of the file at `rel` in the merged view, at most `max`
    /// (`max + 1` read means the file is larger: the caller decides).
    pub fn read_at(&self, rel: &str, max: u64) -> Result<Vec<u8>, FsError> {
        use std::io::Read as _;
        let file = match self.open(
            "",
            rel,
            OpenRequest {
                follow: true,
                ..OpenRequest::default()
            },
        )? {
            Opened::File { file, .. } => file,
            Opened::Dir { .. } => return Err(FsError::IsDirectory),
        };
        let mut buf = Vec::new();
        file.take(max.saturating_add(1)).read_to_end(&mut buf)?;
        Ok(buf)
    }

    pub(crate) fn lower_dir(&self) -> &Dir {
        &self.lower
    }

    pub(crate) fn nodes(&self) -> BTreeMap<String, Node> {
        lock(&self.state).nodes.clone()
    }

    pub(crate) fn seen(&self) -> BTreeMap<String, Seen> {
        lock(&self.state).seen.clone()
    }

    pub(crate) fn read_seen(&self) -> BTreeMap<String, Seen> {
        lock(&self.state).read_seen.clone()
    }

    /// Remembers a file the runtime opened for reading straight through the
    /// lower tree while nothing was staged (the fast path of a read-only
    /// call): `path` (relative to the grant, symlinks not resolved) and its
    /// metadata when opened. The commit's conflict check compares it.
    pub fn record_read(&self, path: String, m: &std::fs::Metadata) {
        use std::os::unix::fs::MetadataExt as _;
        let seen = Seen::Present {
            kind: Kind::File,
            size: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            ino: m.ino(),
        };
        lock(&self.state).read_seen.entry(path).or_insert(seen);
    }

    // ── the merged view ────────────────────────────────────────────────

    /// The lower tree's entry at `rel`, ignoring the upper nodes.
    pub(crate) fn lower_entry(&self, rel: &str) -> Result<Entry, FsError> {
        if rel.is_empty() {
            return Ok(Entry::Dir);
        }
        // Under a lower symlink there is nothing (cap-std would follow it).
        if !real_dir(&self.lower, parent(rel).unwrap_or("")) {
            return Ok(Entry::Absent);
        }
        match self.lower_lstat(rel)? {
            Some(m) => self.lower_as_entry(rel, &m),
            None => Ok(Entry::Absent),
        }
    }

    /// The lower tree's metadata of `rel`, not following a last symlink
    /// (`None`: nothing there, or a file on the way).
    fn lower_lstat(&self, rel: &str) -> io::Result<Option<cap_std::fs::Metadata>> {
        match self.lower.symlink_metadata(rel) {
            Ok(m) => Ok(Some(m)),
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The entry the lower `rel` with metadata `m` is.
    fn lower_as_entry(&self, rel: &str, m: &cap_std::fs::Metadata) -> Result<Entry, FsError> {
        Ok(match kind_of(m.file_type()) {
            Kind::Dir => Entry::Dir,
            Kind::File => Entry::File(Source::Lower(rel.to_owned())),
            Kind::Symlink => Entry::Symlink(
                self.lower
                    .read_link_contents(rel)?
                    .to_string_lossy()
                    .into_owned(),
            ),
        })
    }

    /// Whether the lower entry at `rel` is hidden by an upper ancestor.
    fn lower_hidden(st: &State, rel: &str) -> bool {
        let mut at = 0;
        while let Some(i) = rel[at..].find('/') {
            let anc = &rel[..at + i];
            match st.nodes.get(anc) {
                None | Some(Node::Dir { opaque: false }) => {}
                Some(_) => return true,
            }
            at += i + 1;
        }
        false
    }

    /// The merged view's entry at `rel`; remembers what a lower file or
    /// symlink (or its absence) looked like when first seen.
    fn entry(&self, st: &mut State, rel: &str) -> Result<Entry, FsError> {
        if let Some(n) = st.nodes.get(rel) {
            return Ok(match n {
                Node::File(b) => Entry::File(Source::Blob(b.clone())),
                Node::LowerRef(r) => Entry::File(Source::Lower(r.clone())),
                Node::Dir { .. } => Entry::Dir,
                Node::Symlink(t) => Entry::Symlink(t.clone()),
                Node::Whiteout => Entry::Absent,
            });
        }
        if Self::lower_hidden(st, rel) {
            return Ok(Entry::Absent);
        }
        if rel.is_empty() {
            return Ok(Entry::Dir);
        }
        match self.lower_lstat(rel)? {
            Some(m) => {
                if !m.is_dir() && !st.seen.contains_key(rel) {
                    st.seen.insert(rel.to_owned(), seen_of(&m));
                }
                self.lower_as_entry(rel, &m)
            }
            None => {
                st.seen.entry(rel.to_owned()).or_insert(Seen::Absent);
                Ok(Entry::Absent)
            }
        }
    }

    /// Resolves `path` from the directory `base` in the merged view:
    /// `.`, `..` and symlinks (the last component's only when `follow`).
    fn resolve(
        &self,
        st: &mut State,
        base: &str,
        path: &str,
        follow: bool,
    ) -> Result<String, FsError> {
        if path.starts_with('/') {
            return Err(FsError::NotPermitted);
        }
        if path.is_empty() {
            return Err(FsError::NoEntry);
        }
        if path.contains('\0') {
            return Err(FsError::Invalid);
        }
        let mut stack: Vec<String> = base
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        let mut queue: std::collections::VecDeque<String> =
            path.split('/').map(str::to_owned).collect();
        let mut hops = 0;
        while let Some(c) = queue.pop_front() {
            let last = queue.iter().all(|c| c.is_empty() || c == ".");
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    stack.pop().ok_or(FsError::NotPermitted)?;
                    continue;
                }
                _ => stack.push(c),
            }
            if last && !follow {
                // A trailing `/` asks for a directory: follow then.
                if !path.ends_with('/') {
                    break;
                }
            }
            let rel = stack.join("/");
            match self.entry(st, &rel)? {
                Entry::Symlink(target) => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(FsError::Loop);
                    }
                    if target.starts_with('/') {
                        return Err(FsError::NotPermitted);
                    }
                    stack.pop();
                    for t in target.split('/').rev() {
                        queue.push_front(t.to_owned());
                    }
                }
                Entry::Dir => {}
                Entry::File(_) if !last => return Err(FsError::NotDirectory),
                Entry::Absent if !last => return Err(FsError::NoEntry),
                Entry::File(_) | Entry::Absent => {}
            }
        }
        Ok(stack.join("/"))
    }

    fn blob(&self, st: &mut State) -> Result<PathBuf, FsError> {
        crate::make_private(&self.stage)?;
        st.next_blob += 1;
        Ok(self.stage.join(format!("{}", st.next_blob)))
    }

    /// Copies the file at `src` into a fresh blob (empty when `empty`),
    /// keeping its permissions.
    fn copy_up(&self, st: &mut State, src: &Source, empty: bool) -> Result<PathBuf, FsError> {
        let blob = self.blob(st)?;
        match src {
            Source::Lower(r) => {
                let mut from = self.lower.open(r)?;
                let perms = from.metadata()?.permissions();
                let mut to = std::fs::File::create(&blob)?;
                if !empty {
                    io::copy(&mut from, &mut to)?;
                }
                use cap_std::fs::PermissionsExt as _;
                use std::os::unix::fs::PermissionsExt as _;
                to.set_permissions(std::fs::Permissions::from_mode(perms.mode()))?;
            }
            Source::Blob(b) => {
                if empty {
                    let perms = std::fs::metadata(b)?.permissions();
                    std::fs::File::create(&blob)?.set_permissions(perms)?;
                } else {
                    std::fs::copy(b, &blob)?;
                }
            }
        }
        Ok(blob)
    }

    /// The blob to write the file `rel` (found at `src`) through: its own
    /// staged blob, or a copy (empty when `empty`) staged at `rel` now when
    /// it is the lower file or a blob a savepoint keeps as it is.
    fn to_write(
        &self,
        st: &mut State,
        rel: String,
        src: Source,
        empty: bool,
    ) -> Result<PathBuf, FsError> {
        match src {
            Source::Blob(b) if !st.frozen.contains(&b) => Ok(b),
            Source::Blob(_) | Source::Lower(_) => {
                let b = self.copy_up(st, &src, empty)?;
                st.nodes.insert(rel, Node::File(b.clone()));
                Ok(b)
            }
        }
    }

    /// Whether anything exists in the lower tree at `rel` (hidden or not).
    fn lower_exists(&self, rel: &str) -> bool {
        rel.is_empty() || self.lower.symlink_metadata(rel).is_ok()
    }

    /// Removes the upper nodes strictly under `rel`.
    fn drop_below(st: &mut State, rel: &str) {
        let prefix = format!("{rel}/");
        let below: Vec<String> = st
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in below {
            st.nodes.remove(&k);
        }
    }

    /// Deletes `rel` from the merged view (and everything under it).
    fn remove(&self, st: &mut State, rel: &str) {
        Self::drop_below(st, rel);
        if self.lower_exists(rel) {
            st.nodes.insert(rel.to_owned(), Node::Whiteout);
        } else {
            st.nodes.remove(rel);
        }
    }

    /// The names and kinds in the merged directory `rel`.
    fn list_in(&self, st: &mut State, rel: &str) -> Result<Vec<(String, Kind)>, FsError> {
        let mut names = BTreeSet::new();
        let lower_visible = !Self::lower_hidden(st, rel)
            && !matches!(
                st.nodes.get(rel),
                Some(Node::Dir { opaque: true } | Node::Whiteout)
            );
        if lower_visible && matches!(self.lower_entry(rel)?, Entry::Dir) {
            for e in self.lower.read_dir(lower_path(rel))? {
                let e = e?;
                if let Ok(name) = e.file_name().into_string() {
                    names.insert(name);
                }
            }
        }
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        for k in st
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k)
        {
            let name = &k[prefix.len()..];
            if !name.is_empty() && !name.contains('/') {
                names.insert(name.to_owned());
            }
        }
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let kind = match self.entry(st, &join(rel, &name))? {
                Entry::File(_) => Kind::File,
                Entry::Dir => Kind::Dir,
                Entry::Symlink(_) => Kind::Symlink,
                Entry::Absent => continue,
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    /// Every file and symlink under the merged directory `rel`, recursively
    /// (for renaming a directory).
    fn subtree(
        &self,
        st: &mut State,
        rel: &str,
        out: &mut Vec<(String, Kind)>,
    ) -> Result<(), FsError> {
        for (name, kind) in self.list_in(st, rel)? {
            let child = join(rel, &name);
            out.push((child.clone(), kind));
            if kind == Kind::Dir {
                self.subtree(st, &child, out)?;
            }
        }
        Ok(())
    }

    // ── the operations ─────────────────────────────────────────────────

    /// `stat` (`path` `None`: the directory `base` itself).
    pub fn stat(&self, base: &str, path: Option<&str>, follow: bool) -> Result<Stat, FsError> {
        let mut st = lock(&self.state);
        let rel = match path {
            Some(p) => self.resolve(&mut st, base, p, follow)?,
            None => base.to_owned(),
        };
        match self.entry(&mut st, &rel)? {
            Entry::Absent => Err(FsError::NoEntry),
            Entry::File(Source::Blob(b)) => Ok(stat_of(&std::fs::metadata(b)?)),
            Entry::File(Source::Lower(r)) => Ok(stat_of_lower(&self.lower.symlink_metadata(&r)?)),
            Entry::Dir => match self.lower.metadata(lower_path(&rel)) {
                Ok(m)
                    if m.is_dir()
                        && !Self::lower_hidden(&st, &rel)
                        && !matches!(st.nodes.get(&rel), Some(Node::Dir { opaque: true })) =>
                {
                    Ok(stat_of_lower(&m))
                }
                _ => {
                    crate::make_private(&self.stage)?;
                    let mut s = stat_of(&std::fs::metadata(&self.stage)?);
                    s.nlink = 2;
                    Ok(s)
                }
            },
            Entry::Symlink(t) => {
                let mut s = match self.lower.symlink_metadata(&rel) {
                    Ok(m) if !st.nodes.contains_key(&rel) => stat_of_lower(&m),
                    _ => {
                        crate::make_private(&self.stage)?;
                        stat_of(&std::fs::metadata(&self.stage)?)
                    }
                };
                s.kind = Kind::Symlink;
                s.size = t.len() as u64;
                s.nlink = 1;
                Ok(s)
            }
        }
    }

    /// `open-at`.
    pub fn open(&self, base: &str, path: &str, req: OpenRequest) -> Result<Opened, FsError> {
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, req.follow)?;
        match self.entry(&mut st, &rel)? {
            Entry::Absent => {
                if !req.create {
                    return Err(FsError::NoEntry);
                }
                if req.directory {
                    return Err(FsError::NoEntry);
                }
                if rel.is_empty() {
                    return Err(FsError::Exist);
                }
                let blob = self.blob(&mut st)?;
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&blob)?;
                st.nodes.insert(rel, Node::File(blob));
                Ok(Opened::File {
                    file,
                    writable: true,
                })
            }
            _ if req.create && req.exclusive => Err(FsError::Exist),
            Entry::Dir => {
                if req.write || req.truncate {
                    return Err(FsError::IsDirectory);
                }
                let visible = !Self::lower_hidden(&st, &rel)
                    && !matches!(st.nodes.get(&rel), Some(Node::Dir { opaque: true }));
                let handle = if visible {
                    self.lower
                        .open_dir(lower_path(&rel))
                        .ok()
                        .map(Dir::into_std_file)
                } else {
                    None
                };
                Ok(Opened::Dir { rel, handle })
            }
            Entry::Symlink(_) => Err(FsError::Loop),
            Entry::File(src) => {
                if req.directory {
                    return Err(FsError::NotDirectory);
                }
                if req.write || req.truncate {
                    let blob = self.to_write(&mut st, rel, src, req.truncate)?;
                    let file = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .truncate(req.truncate)
                        .open(&blob)?;
                    return Ok(Opened::File {
                        file,
                        writable: true,
                    });
                }
                let file = match src {
                    Source::Blob(b) => std::fs::File::open(b)?,
                    Source::Lower(r) => {
                        let mut o = OpenOptions::new();
                        o.read(true);
                        self.lower.open_with(&r, &o)?.into_std()
                    }
                };
                Ok(Opened::File {
                    file,
                    writable: false,
                })
            }
        }
    }

    /// `create-directory-at`.
    pub fn create_dir(&self, base: &str, path: &str) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, false)?;
        if !matches!(self.entry(&mut st, &rel)?, Entry::Absent) {
            return Err(FsError::Exist);
        }
        let opaque = self.lower_exists(&rel);
        st.nodes.insert(rel, Node::Dir { opaque });
        Ok(())
    }

    /// `unlink-file-at`.
    pub fn unlink(&self, base: &str, path: &str) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, false)?;
        match self.entry(&mut st, &rel)? {
            Entry::Absent => Err(FsError::NoEntry),
            Entry::Dir => Err(FsError::IsDirectory),
            Entry::File(_) | Entry::Symlink(_) => {
                self.remove(&mut st, &rel);
                Ok(())
            }
        }
    }

    /// `remove-directory-at`.
    pub fn remove_dir(&self, base: &str, path: &str) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, false)?;
        match self.entry(&mut st, &rel)? {
            Entry::Absent => Err(FsError::NoEntry),
            Entry::File(_) | Entry::Symlink(_) => Err(FsError::NotDirectory),
            Entry::Dir if rel.is_empty() => Err(FsError::NotPermitted),
            Entry::Dir => {
                if !self.list_in(&mut st, &rel)?.is_empty() {
                    return Err(FsError::NotEmpty);
                }
                self.remove(&mut st, &rel);
                Ok(())
            }
        }
    }

    /// `rename-at` from this overlay to `to` (the same grant: renames
    /// across grants are refused by the runtime).
    pub fn rename(&self, base: &str, from: &str, to_base: &str, to: &str) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        let src = self.resolve(&mut st, base, from, false)?;
        let dst = self.resolve(&mut st, to_base, to, false)?;
        if src.is_empty() || dst.is_empty() {
            return Err(FsError::NotPermitted);
        }
        let what = self.entry(&mut st, &src)?;
        let there = self.entry(&mut st, &dst)?;
        if src == dst {
            return match what {
                Entry::Absent => Err(FsError::NoEntry),
                _ => Ok(()),
            };
        }
        match (&what, &there) {
            (Entry::Absent, _) => return Err(FsError::NoEntry),
            (Entry::Dir, Entry::File(_) | Entry::Symlink(_)) => return Err(FsError::NotDirectory),
            (Entry::File(_) | Entry::Symlink(_), Entry::Dir) => return Err(FsError::IsDirectory),
            _ => {}
        }
        if matches!((&what, &there), (Entry::Dir, Entry::Dir))
            && !self.list_in(&mut st, &dst)?.is_empty()
        {
            return Err(FsError::NotEmpty);
        }
        if matches!(what, Entry::Dir) && within(&dst, &src) {
            return Err(FsError::Invalid);
        }
        // What the destination becomes, computed before the source goes.
        let mut moved: Vec<(String, Node)> = Vec::new();
        let node_of = |e: &Entry| match e {
            Entry::File(Source::Blob(b)) => Node::File(b.clone()),
            Entry::File(Source::Lower(r)) => Node::LowerRef(r.clone()),
            Entry::Symlink(t) => Node::Symlink(t.clone()),
            Entry::Dir | Entry::Absent => Node::Dir { opaque: true },
        };
        moved.push((dst.clone(), node_of(&what)));
        if matches!(what, Entry::Dir) {
            let mut below = Vec::new();
            self.subtree(&mut st, &src, &mut below)?;
            for (p, _) in below {
                let e = self.entry(&mut st, &p)?;
                let rest = &p[src.len()..];
                moved.push((format!("{dst}{rest}"), node_of(&e)));
            }
        }
        self.remove(&mut st, &src);
        Self::drop_below(&mut st, &dst);
        for (p, n) in moved {
            st.nodes.insert(p, n);
        }
        Ok(())
    }

    /// `symlink-at`: a link at `path` to `target` (stored as given).
    pub fn symlink(&self, base: &str, target: &str, path: &str) -> Result<(), FsError> {
        // As cap-std: a link in a grant may not name the host's root.
        if target.starts_with('/') {
            return Err(FsError::NotPermitted);
        }
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, false)?;
        if !matches!(self.entry(&mut st, &rel)?, Entry::Absent) {
            return Err(FsError::Exist);
        }
        st.nodes.insert(rel, Node::Symlink(target.to_owned()));
        Ok(())
    }

    /// `link-at`: a new name for the file at `from` (a copy of its bytes
    /// when they are staged, the lower bytes otherwise).
    pub fn link(
        &self,
        base: &str,
        from: &str,
        follow: bool,
        to_base: &str,
        to: &str,
    ) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        let src = self.resolve(&mut st, base, from, follow)?;
        let dst = self.resolve(&mut st, to_base, to, false)?;
        let node = match self.entry(&mut st, &src)? {
            Entry::Absent => return Err(FsError::NoEntry),
            Entry::Dir => return Err(FsError::NotPermitted),
            Entry::Symlink(t) => Node::Symlink(t),
            Entry::File(Source::Lower(r)) => Node::LowerRef(r),
            Entry::File(b @ Source::Blob(_)) => Node::File(self.copy_up(&mut st, &b, false)?),
        };
        if !matches!(self.entry(&mut st, &dst)?, Entry::Absent) {
            return Err(FsError::Exist);
        }
        st.nodes.insert(dst, node);
        Ok(())
    }

    /// `readlink-at`.
    pub fn read_link(&self, base: &str, path: &str) -> Result<String, FsError> {
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, false)?;
        match self.entry(&mut st, &rel)? {
            Entry::Symlink(t) => Ok(t),
            Entry::Absent => Err(FsError::NoEntry),
            _ => Err(FsError::Invalid),
        }
    }

    /// The entries of the merged directory `base` (or `path` under it).
    pub fn list(&self, base: &str) -> Result<Vec<(String, Kind)>, FsError> {
        let mut st = lock(&self.state);
        match self.entry(&mut st, base)? {
            Entry::Dir => self.list_in(&mut st, base),
            Entry::Absent => Err(FsError::NoEntry),
            _ => Err(FsError::NotDirectory),
        }
    }

    /// `set-times-at` on a file: staged (copied up, then set on the blob).
    /// On a directory or symlink the times are not staged and the call
    /// succeeds (directory times are the file system's own business).
    pub fn set_times(
        &self,
        base: &str,
        path: &str,
        follow: bool,
        times: std::fs::FileTimes,
    ) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        let rel = self.resolve(&mut st, base, path, follow)?;
        match self.entry(&mut st, &rel)? {
            Entry::Absent => Err(FsError::NoEntry),
            Entry::File(src) => {
                let blob = self.to_write(&mut st, rel, src, false)?;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(blob)?
                    .set_times(times)?;
                Ok(())
            }
            Entry::Dir | Entry::Symlink(_) => Ok(()),
        }
    }

    /// Everything staged here, staged files' bytes included, with what the
    /// call saw of the lower tree: enough to stage it all again in another
    /// overlay of the same directory ([`Overlay::restore`]), in this process
    /// or another.
    pub fn snapshot(&self) -> Result<OverlaySnapshot, FsError> {
        use base64::Engine as _;
        use std::os::unix::fs::PermissionsExt as _;
        let st = lock(&self.state);
        let mut nodes = Vec::with_capacity(st.nodes.len());
        for (path, node) in &st.nodes {
            let saved = match node {
                Node::File(blob) => {
                    let bytes = std::fs::read(blob)?;
                    let mode = std::fs::metadata(blob)?.permissions().mode();
                    SavedNode::File {
                        base64: base64::engine::general_purpose::STANDARD.encode(bytes),
                        mode,
                    }
                }
                Node::LowerRef(r) => SavedNode::LowerRef { from: r.clone() },
                Node::Dir { opaque } => SavedNode::Dir { opaque: *opaque },
                Node::Symlink(t) => SavedNode::Symlink { target: t.clone() },
                Node::Whiteout => SavedNode::Whiteout,
            };
            nodes.push((path.clone(), saved));
        }
        Ok(OverlaySnapshot {
            nodes,
            seen: st.seen.clone().into_iter().collect(),
            read_seen: st.read_seen.clone().into_iter().collect(),
        })
    }

    /// Stages `snapshot` here (an overlay of the same directory, nothing
    /// staged yet): its files written as blobs again, its record of the
    /// lower tree kept, so the conflict check at commit still compares
    /// with what the first call saw.
    pub fn restore(&self, snapshot: OverlaySnapshot) -> Result<(), FsError> {
        let mut st = lock(&self.state);
        for (path, saved) in snapshot.nodes {
            let node = self.node_of(&mut st, &path, saved)?;
            st.nodes.insert(path, node);
        }
        st.seen = snapshot.seen.into_iter().collect();
        st.read_seen = snapshot.read_seen.into_iter().collect();
        Ok(())
    }

    /// Stages here what changed from `before` to `after`: a copy of this
    /// overlay as it was at `before`, changed by a call in another process
    /// (a worker's). Paths staged since are set, paths unstaged since are
    /// unstaged, and what was first seen since is recorded; whatever else
    /// was staged here meanwhile (a concurrent call's) stays.
    pub fn apply_changes(
        &self,
        before: &OverlaySnapshot,
        after: OverlaySnapshot,
    ) -> Result<(), FsError> {
        let old: BTreeMap<&str, &SavedNode> =
            before.nodes.iter().map(|(p, n)| (p.as_str(), n)).collect();
        let kept: BTreeSet<String> = after.nodes.iter().map(|(p, _)| p.clone()).collect();
        let mut st = lock(&self.state);
        for (path, saved) in after.nodes {
            if old.get(path.as_str()) == Some(&&saved) {
                continue;
            }
            let node = self.node_of(&mut st, &path, saved)?;
            st.nodes.insert(path, node);
        }
        for (path, _) in &before.nodes {
            if !kept.contains(path) {
                st.nodes.remove(path);
            }
        }
        for (path, seen) in after.seen {
            st.seen.entry(path).or_insert(seen);
        }
        for (path, seen) in after.read_seen {
            st.read_seen.entry(path).or_insert(seen);
        }
        Ok(())
    }

    /// A saved node staged again (a file's bytes written as a new blob),
    /// its path checked to stay inside the overlay.
    fn node_of(&self, st: &mut State, path: &str, saved: SavedNode) -> Result<Node, FsError> {
        use base64::Engine as _;
        use std::os::unix::fs::PermissionsExt as _;
        // A snapshot may come from another process (a worker's): every
        // path stays inside the grant, a link never names the host's root
        // (as `symlink` refuses one), and no file is set-user-id,
        // set-group-id or sticky (a guest cannot set those bits).
        let inside =
            |p: &str| !p.starts_with('/') && !p.split('/').any(|c| c == ".." || c.is_empty());
        if !inside(path) {
            return Err(FsError::Invalid);
        }
        Ok(match saved {
            SavedNode::File { base64, mode } => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(base64)
                    .map_err(|_| FsError::Invalid)?;
                let blob = self.blob(st)?;
                std::fs::write(&blob, bytes)?;
                std::fs::set_permissions(&blob, std::fs::Permissions::from_mode(mode & 0o777))?;
                Node::File(blob)
            }
            SavedNode::LowerRef { from } if inside(&from) => Node::LowerRef(from),
            SavedNode::LowerRef { .. } => return Err(FsError::Invalid),
            SavedNode::Dir { opaque } => Node::Dir { opaque },
            SavedNode::Symlink { target } if target.starts_with('/') => {
                return Err(FsError::NotPermitted);
            }
            SavedNode::Symlink { target } => Node::Symlink(target),
            SavedNode::Whiteout => Node::Whiteout,
        })
    }

    /// The merged entry at `rel` (for the effect set).
    pub(crate) fn merged(&self, rel: &str) -> Result<Entry, FsError> {
        let mut st = lock(&self.state);
        self.entry(&mut st, rel)
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        // Nothing was staged (the staging directory was never made).
        if lock(&self.state).next_blob == 0 && !self.stage.exists() {
            return;
        }
        // The staged blobs are gone with the call (committed ones were
        // moved or copied out first).
        if let Err(e) = std::fs::remove_dir_all(&self.stage)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(stage = %self.stage.display(), "could not remove a staging directory: {e}");
        }
    }
}

/// Whether every component of `rel` is a directory now (no symlinks): a
/// temporary goes there only then.
pub(crate) fn real_dir(root: &Dir, rel: &str) -> bool {
    let mut at = String::new();
    for c in rel.split('/').filter(|c| !c.is_empty()) {
        at = join(&at, c);
        if !root.symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            return false;
        }
    }
    true
}

/// What a lower path looks like now (the conflict check).
pub(crate) fn current(d: &Dir, rel: &str) -> Seen {
    if !real_dir(d, parent(rel).unwrap_or("")) {
        return Seen::Absent;
    }
    match d.symlink_metadata(rel) {
        Ok(m) if m.is_dir() => Seen::Absent,
        Ok(m) => seen_of(&m),
        Err(_) => Seen::Absent,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn scene() -> (tempfile::TempDir, Overlay) {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("t");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(base.path().join("secret"), "outside").unwrap();
        std::fs::write(root.join("d/x"), "x").unwrap();
        std::os::unix::fs::symlink("../../secret", root.join("d/out")).unwrap();
        let o = Overlay::new(&root, base.path().join("stage")).unwrap();
        (base, o)
    }

    fn write_file(o: &Overlay, path: &str, bytes: &[u8]) {
        let write = OpenRequest {
            follow: true,
            create: true,
            truncate: true,
            write: true,
            ..OpenRequest::default()
        };
        let Opened::File { mut file, .. } = o.open("", path, write).unwrap() else {
            panic!("{path} is not a file")
        };
        std::io::Write::write_all(&mut file, bytes).unwrap();
    }

    #[test]
    fn changes_made_in_a_copy_apply_beside_the_originals_own() {
        let (base, o) = scene();
        write_file(&o, "kept.txt", b"before");
        let before = o.snapshot().unwrap();
        // A copy elsewhere (a worker's): it writes a file and deletes one.
        let copy = Overlay::new(o.root(), base.path().join("stage-copy")).unwrap();
        copy.restore(before.clone()).unwrap();
        write_file(&copy, "new.txt", b"made there");
        copy.unlink("", "d/x").unwrap();
        let after = copy.snapshot().unwrap();
        assert_eq!(after.staged_size().0, 6 + 10, "two files' bytes");
        // Meanwhile the original staged something of its own.
        write_file(&o, "mine.txt", b"here");
        o.apply_changes(&before, after).unwrap();
        let read = |p: &str| o.read_at(p, 1 << 20).ok();
        assert_eq!(read("new.txt").as_deref(), Some(&b"made there"[..]));
        assert_eq!(read("mine.txt").as_deref(), Some(&b"here"[..]), "kept");
        assert_eq!(read("kept.txt").as_deref(), Some(&b"before"[..]));
        assert!(read("d/x").is_none(), "the copy's delete applies");
        // A path that leaves the overlay is refused.
        let mut hostile = OverlaySnapshot::default();
        hostile.nodes.push((
            "../escape".into(),
            SavedNode::Symlink { target: "x".into() },
        ));
        assert!(matches!(
            o.apply_changes(&OverlaySnapshot::default(), hostile),
            Err(FsError::Invalid)
        ));
        // So is a rename from outside it, and a link to the host's root.
        for (node, refused) in [
            (
                SavedNode::LowerRef {
                    from: "../../etc/passwd".into(),
                },
                "a rename from outside",
            ),
            (
                SavedNode::Symlink {
                    target: "/etc/passwd".into(),
                },
                "a link to the root",
            ),
        ] {
            let mut hostile = OverlaySnapshot::default();
            hostile.nodes.push(("inside.txt".into(), node));
            assert!(
                o.apply_changes(&OverlaySnapshot::default(), hostile)
                    .is_err(),
                "{refused}"
            );
        }
        // A file's set-user-id bit does not survive.
        use base64::Engine as _;
        use std::os::unix::fs::PermissionsExt as _;
        let mut setuid = OverlaySnapshot::default();
        setuid.nodes.push((
            "suid".into(),
            SavedNode::File {
                base64: base64::engine::general_purpose::STANDARD.encode(b"#!"),
                mode: 0o4755,
            },
        ));
        o.apply_changes(&OverlaySnapshot::default(), setuid)
            .unwrap();
        let st = lock(&o.state);
        let Some(Node::File(blob)) = st.nodes.get("suid") else {
            panic!("staged")
        };
        let mode = std::fs::metadata(blob).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o755);
    }

    #[test]
    fn nothing_resolves_outside_the_grant() {
        let (_base, o) = scene();
        let read = OpenRequest {
            follow: true,
            ..OpenRequest::default()
        };
        for path in ["../secret", "d/../../secret", "/etc/passwd", "d/out"] {
            let e = o.open("", path, read).unwrap_err();
            assert!(matches!(e, FsError::NotPermitted), "{path}: {e:?}");
        }
        // A link the guest makes that climbs out is stored, and never followed.
        o.symlink("d", "../../secret", "climb").unwrap();
        assert!(matches!(
            o.open("d", "climb", read),
            Err(FsError::NotPermitted)
        ));
        assert!(matches!(
            o.symlink("", "/etc/passwd", "abs"),
            Err(FsError::NotPermitted)
        ));
        // `..` inside the grant is fine.
        assert!(o.open("d", "../d/x", read).is_ok());
    }

    #[test]
    fn the_guest_sees_its_own_writes_and_the_tree_does_not() {
        let (base, o) = scene();
        let write = OpenRequest {
            follow: true,
            create: true,
            truncate: true,
            write: true,
            ..OpenRequest::default()
        };
        let Opened::File { mut file, .. } = o.open("", "d/x", write).unwrap() else {
            panic!()
        };
        std::io::Write::write_all(&mut file, b"staged").unwrap();
        o.create_dir("", "e").unwrap();
        o.rename("", "d/x", "e", "y").unwrap();
        let names: Vec<String> = o.list("e").unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["y"]);
        assert_eq!(o.stat("", Some("e/y"), false).unwrap().size, 6);
        assert!(matches!(
            o.stat("", Some("d/x"), false),
            Err(FsError::NoEntry)
        ));
        // The lower tree is untouched.
        let root = base.path().join("t");
        assert_eq!(std::fs::read_to_string(root.join("d/x")).unwrap(), "x");
        assert!(!root.join("e").exists());
    }
}
