//! Staged read-write grants: every path operation a guest makes through a
//! directory descriptor of a read-write grant goes to that grant's
//! [`Overlay`] instead of the user's tree (see `toolhost-effects`).
//!
//! The guest's descriptors stay wasmtime-wasi's own: a file descriptor is the
//! lower file opened read-only or a staged blob opened read-write, so reads,
//! writes and streams (and the write budget on them) work unchanged; a
//! directory descriptor is remembered here with its path in the merged view,
//! and each `*-at` function on it is answered by the overlay. Directory
//! listings are served from the merged view through a stream resource taken
//! from an empty directory. Read-only grants are not staged at all, except
//! in a script's [`Transaction`]: there a read-only grant of a directory an
//! earlier call of the script wrote to reads through that call's overlay
//! (it sees those writes), and every change through it is refused.

use super::budget::{WriteBudget, trap};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_effects::{
    FsError, Kind, OpenRequest, Opened, Overlay, Staged, StagingArea, Stat, Transaction,
};
use toolhost_policy::{FsGrant, FsMode};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::FsPerms;
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, OpenMode, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{FsError as WasiFsError, FsResult};

/// One call's staged grants and the descriptors that point into them.
#[derive(Default)]
pub(crate) struct Staging {
    /// The read-write grants: guest path and overlay.
    grants: Vec<(String, Arc<Overlay>)>,
    /// Directory descriptors in a staged grant: rep → (grant, path).
    dirs: HashMap<u32, (usize, String)>,
    /// Directory listings served from the merged view: stream rep → entries.
    streams: HashMap<u32, std::vec::IntoIter<types::DirectoryEntry>>,
    /// An empty directory: the handle behind directories that exist only in
    /// the overlay, and the source of stream resources.
    empty: Option<PathBuf>,
    /// Whether file I/O may block the calling thread (the runtime's setting).
    allow_blocking: bool,
    /// The grants (by index) staged read-only: a read-only grant that
    /// reads through a script's transaction.
    read_only: Vec<bool>,
    /// The overlays are a script's transaction's: the call does not own
    /// them (the script commits them), so it hands none to commit.
    in_transaction: bool,
}

impl Staging {
    /// Overlays for the read-write grants `(host, guest)`, staging in this
    /// process's area of the staging directory `root` (never under a name
    /// a restarted host could reuse: see [`StagingArea`]).
    pub(crate) fn new(
        rw: &[(PathBuf, String)],
        root: &Path,
        allow_blocking: bool,
    ) -> std::io::Result<Staging> {
        let area = StagingArea::of(root)?;
        let call = area.fresh("call");
        let mut grants = Vec::with_capacity(rw.len());
        for (i, (host, guest)) in rw.iter().enumerate() {
            let o = Overlay::new(host, call.with_extension(i.to_string()))?;
            grants.push((guest.clone(), Arc::new(o)));
        }
        Ok(Staging {
            read_only: vec![false; grants.len()],
            grants,
            empty: (!rw.is_empty()).then(|| area.dir().join("empty")),
            allow_blocking,
            ..Staging::default()
        })
    }

    /// The grants of a call made by a script: each read-write grant stages
    /// in the transaction's overlay of its directory, and each read-only
    /// grant of a directory the transaction already has reads through it.
    pub(crate) fn in_transaction(
        tx: &Transaction,
        grants: &[FsGrant],
        root: &Path,
        allow_blocking: bool,
    ) -> Result<Staging, (String, String)> {
        let area =
            StagingArea::of(root).map_err(|e| (root.display().to_string(), e.to_string()))?;
        let mut staged = Vec::new();
        let mut read_only = Vec::new();
        for g in grants {
            let overlay = match g.mode {
                FsMode::ReadWrite => tx.overlay(&g.host, &g.guest).map(Some),
                FsMode::ReadOnly => tx.existing(&g.host),
            }
            .map_err(|e| (g.host.display().to_string(), e.to_string()))?;
            if let Some(o) = overlay {
                staged.push((g.guest.clone(), o));
                read_only.push(g.mode == FsMode::ReadOnly);
            }
        }
        Ok(Staging {
            empty: (!staged.is_empty()).then(|| area.dir().join("empty")),
            grants: staged,
            read_only,
            allow_blocking,
            in_transaction: true,
            ..Staging::default()
        })
    }

    /// The call's writes, to hand to commit: none for a call in a
    /// script's transaction (the script commits its overlays).
    pub(crate) fn take_staged(&mut self) -> Staged {
        let grants = std::mem::take(&mut self.grants);
        if self.in_transaction {
            Staged::default()
        } else {
            Staged::new(grants)
        }
    }

    /// Whether the staged grant `i` may be changed.
    fn writable(&self, i: usize) -> bool {
        !self.read_only.get(i).copied().unwrap_or(false)
    }

    /// Registers the preopens a guest got: those of staged grants.
    pub(crate) fn preopened(&mut self, rep: u32, guest: &str) {
        if let Some(i) = self.grants.iter().position(|(g, _)| g == guest) {
            self.dirs.insert(rep, (i, String::new()));
        }
    }

    fn dir(&self, fd: &Resource<Descriptor>) -> Option<(Arc<Overlay>, usize, String)> {
        let (i, rel) = self.dirs.get(&fd.rep())?;
        Some((self.grants.get(*i)?.1.clone(), *i, rel.clone()))
    }

    fn empty_dir(&self) -> std::io::Result<std::fs::File> {
        let p = self
            .empty
            .as_ref()
            .ok_or_else(|| std::io::Error::other("no staged grant"))?;
        std::fs::create_dir_all(p)?;
        std::fs::File::open(p)
    }
}

fn code(e: FsError) -> WasiFsError {
    match e {
        FsError::NoEntry => ErrorCode::NoEntry.into(),
        FsError::NotDirectory => ErrorCode::NotDirectory.into(),
        FsError::IsDirectory => ErrorCode::IsDirectory.into(),
        FsError::Exist => ErrorCode::Exist.into(),
        FsError::NotEmpty => ErrorCode::NotEmpty.into(),
        FsError::NotPermitted => ErrorCode::NotPermitted.into(),
        FsError::Loop => ErrorCode::Loop.into(),
        FsError::Invalid => ErrorCode::Invalid.into(),
        FsError::Io(e) => e.into(),
    }
}

fn kind(k: Kind) -> DescriptorType {
    match k {
        Kind::File => DescriptorType::RegularFile,
        Kind::Dir => DescriptorType::Directory,
        Kind::Symlink => DescriptorType::SymbolicLink,
    }
}

fn datetime(t: Option<std::time::SystemTime>) -> Option<Datetime> {
    let d = t?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(Datetime {
        seconds: d.as_secs(),
        nanoseconds: d.subsec_nanos(),
    })
}

fn stat(s: &Stat) -> types::DescriptorStat {
    types::DescriptorStat {
        type_: kind(s.kind),
        link_count: s.nlink,
        size: s.size,
        data_access_timestamp: datetime(s.accessed),
        data_modification_timestamp: datetime(s.modified),
        status_change_timestamp: datetime(s.changed),
    }
}

fn time(t: types::NewTimestamp) -> FsResult<Option<std::time::SystemTime>> {
    Ok(match t {
        types::NewTimestamp::NoChange => None,
        // The guest's clock is the call's; `now` is the host's.
        #[allow(clippy::disallowed_methods)]
        types::NewTimestamp::Now => Some(std::time::SystemTime::now()),
        types::NewTimestamp::Timestamp(d) => Some(
            std::time::UNIX_EPOCH
                .checked_add(std::time::Duration::new(d.seconds, d.nanoseconds))
                .ok_or(ErrorCode::Overflow)?,
        ),
    })
}

fn follow(f: PathFlags) -> bool {
    f.contains(PathFlags::SYMLINK_FOLLOW)
}

/// What `*-at` on a descriptor means: staged, or wasmtime-wasi's own.
pub(crate) enum At {
    /// A directory of a staged grant: the overlay, the grant and the path.
    Staged(Arc<Overlay>, usize, String),
    /// Anything else.
    Direct,
}

impl Staging {
    /// Refuses a change in the staged grant `grant` when it is a read-only
    /// grant reading through a script's transaction (as wasmtime-wasi
    /// refuses a change through a read-only preopen).
    pub(crate) fn may_change(&self, grant: usize) -> FsResult<()> {
        match self.writable(grant) {
            true => Ok(()),
            false => Err(ErrorCode::NotPermitted.into()),
        }
    }

    /// Where `fd` is, for a change through it: refused as
    /// [`may_change`](Self::may_change) says.
    pub(crate) fn at_to_change(&self, fd: &Resource<Descriptor>) -> FsResult<At> {
        let at = self.at(fd);
        if let At::Staged(_, grant, _) = &at {
            self.may_change(*grant)?;
        }
        Ok(at)
    }

    /// Whether `fd` is a directory of a staged grant.
    pub(crate) fn at(&self, fd: &Resource<Descriptor>) -> At {
        match self.dir(fd) {
            Some((o, i, rel)) => At::Staged(o, i, rel),
            None => At::Direct,
        }
    }

    /// `get-directories`, registering the staged grants' preopens.
    pub(crate) fn register_preopens(&mut self, dirs: &[(Resource<Descriptor>, String)]) {
        for (d, name) in dirs {
            self.preopened(d.rep(), name);
        }
    }

    /// `open-at` in a staged directory: the overlay opens it, and the
    /// guest gets a descriptor of wasmtime-wasi's type on what it opened.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        &mut self,
        table: &mut ResourceTable,
        budget: &WriteBudget,
        (o, grant, rel): (Arc<Overlay>, usize, String),
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let req = OpenRequest {
            follow: follow(path_flags),
            create: oflags.contains(OpenFlags::CREATE),
            exclusive: oflags.contains(OpenFlags::EXCLUSIVE),
            truncate: oflags.contains(OpenFlags::TRUNCATE),
            directory: oflags.contains(OpenFlags::DIRECTORY),
            write: flags.contains(DescriptorFlags::WRITE),
        };
        let creates =
            req.create && matches!(o.stat(&rel, Some(&path), req.follow), Err(FsError::NoEntry));
        if creates {
            budget.charge_entry().map_err(trap)?;
        }
        let opened = match o.open(&rel, &path, req) {
            Ok(x) => x,
            Err(e) => {
                if creates {
                    budget.refund_entry();
                }
                return Err(code(e));
            }
        };
        let blocking = self.allow_blocking;
        let d = match opened {
            Opened::File { file, writable, .. } => {
                let mut mode = OpenMode::empty();
                if flags.contains(DescriptorFlags::READ) || !writable {
                    mode |= OpenMode::READ;
                }
                if writable && flags.contains(DescriptorFlags::WRITE) {
                    mode |= OpenMode::WRITE;
                }
                let perms = if writable {
                    FsPerms::ReadWrite
                } else {
                    FsPerms::ReadOnly
                };
                Descriptor::File(File::new(file, perms, mode, blocking))
            }
            Opened::Dir { rel, handle } => {
                let handle = match handle {
                    Some(h) => h,
                    None => self.empty_dir()?,
                };
                let mut mode = OpenMode::READ;
                let perms = if self.writable(grant) {
                    if flags.contains(DescriptorFlags::MUTATE_DIRECTORY) {
                        mode |= OpenMode::WRITE;
                    }
                    FsPerms::ReadWrite
                } else {
                    FsPerms::ReadOnly
                };
                let d = Descriptor::Dir(Dir::new(handle, perms, mode, blocking));
                let r = table.push(d)?;
                self.dirs.insert(r.rep(), (grant, rel));
                return Ok(r);
            }
        };
        Ok(table.push(d)?)
    }

    /// `read-directory` of a staged directory: its merged entries.
    pub(crate) async fn read_directory(
        &mut self,
        fs: &mut WasiFilesystemCtxView<'_>,
        o: &Overlay,
        rel: &str,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let entries: Vec<types::DirectoryEntry> = o
            .list(rel)
            .map_err(code)?
            .into_iter()
            .map(|(name, k)| types::DirectoryEntry {
                type_: kind(k),
                name,
            })
            .collect();
        // A stream resource of wasmtime-wasi's type, from an empty
        // directory; its entries are served from here.
        let empty = self.empty_dir()?;
        let blocking = self.allow_blocking;
        let tmp = fs.table.push(Descriptor::Dir(Dir::new(
            empty,
            FsPerms::ReadOnly,
            OpenMode::READ,
            blocking,
        )))?;
        let stream = HostDescriptor::read_directory(fs, Resource::new_borrow(tmp.rep())).await;
        fs.table.delete(tmp)?;
        let stream = stream?;
        self.streams.insert(stream.rep(), entries.into_iter());
        Ok(stream)
    }

    /// The next entry of a merged listing (`None`: not one of ours).
    pub(crate) fn next_entry(&mut self, rep: u32) -> Option<Option<types::DirectoryEntry>> {
        self.streams.get_mut(&rep).map(Iterator::next)
    }

    /// Forgets a dropped descriptor or stream.
    pub(crate) fn forget(&mut self, rep: u32, stream: bool) {
        if stream {
            self.streams.remove(&rep);
        } else {
            self.dirs.remove(&rep);
        }
    }
}

/// The fast path of a read in a staged grant where nothing is staged
/// yet (the merged view is the lower tree): wasmtime-wasi opens the
/// file through the real directory, as in a read-only grant, and the
/// overlay remembers what it opened for the conflict check. `None`: it
/// was a directory (those take the overlay's path, to know their path).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn clean_read_open(
    fs: &mut WasiFilesystemCtxView<'_>,
    o: &Overlay,
    rel: &str,
    fd: &Resource<Descriptor>,
    path_flags: PathFlags,
    path: &str,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> FsResult<Option<Resource<Descriptor>>> {
    let r = HostDescriptor::open_at(
        fs,
        Resource::new_borrow(fd.rep()),
        path_flags,
        path.to_owned(),
        oflags,
        flags,
    )
    .await?;
    let meta = match fs.table.get_mut(&r)? {
        Descriptor::File(f) => {
            // Never writable, whatever the grant says.
            f.perms = FsPerms::ReadOnly;
            f.file.metadata().ok()
        }
        Descriptor::Dir(_) => None,
    };
    match meta {
        Some(m) => {
            let key = if rel.is_empty() {
                path.to_owned()
            } else {
                format!("{rel}/{path}")
            };
            o.record_read(key, &m);
            Ok(Some(r))
        }
        None => {
            HostDescriptor::drop(fs, r).map_err(WasiFsError::trap)?;
            Ok(None)
        }
    }
}

/// `stat` (or `stat-at` `path`) in a staged directory.
pub(crate) fn staged_stat(
    o: &Overlay,
    rel: &str,
    path: Option<&str>,
    f: bool,
) -> FsResult<types::DescriptorStat> {
    o.stat(rel, path, f).map(|s| stat(&s)).map_err(code)
}

/// `metadata-hash` (or `metadata-hash-at` `path`) in a staged directory.
pub(crate) fn staged_metadata_hash(
    o: &Overlay,
    rel: &str,
    path: Option<&str>,
    f: bool,
) -> FsResult<types::MetadataHashValue> {
    let s = o.stat(rel, path, f).map_err(code)?;
    let m = s
        .modified
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    Ok(types::MetadataHashValue {
        lower: s.ino ^ s.size.rotate_left(32),
        upper: m ^ (s.kind as u64),
    })
}

/// `set-times-at` in a staged directory.
pub(crate) fn staged_set_times(
    o: &Overlay,
    rel: &str,
    path: &str,
    f: bool,
    atim: types::NewTimestamp,
    mtim: types::NewTimestamp,
) -> FsResult<()> {
    let mut times = std::fs::FileTimes::new();
    if let Some(a) = time(atim)? {
        times = times.set_accessed(a);
    }
    if let Some(m) = time(mtim)? {
        times = times.set_modified(m);
    }
    o.set_times(rel, path, f, times).map_err(code)
}

/// The two ends of a rename or link: both in the same staged grant, or
/// neither staged.
pub(crate) fn same_grant(a: &At, b: &At) -> FsResult<Option<(Arc<Overlay>, String, String)>> {
    match (a, b) {
        (At::Direct, At::Direct) => Ok(None),
        (At::Staged(o, i, ra), At::Staged(_, j, rb)) if i == j => {
            Ok(Some((o.clone(), ra.clone(), rb.clone())))
        }
        _ => Err(ErrorCode::CrossDevice.into()),
    }
}

/// Maps an overlay result to WASI's.
pub(crate) fn wasi<T>(r: Result<T, FsError>) -> FsResult<T> {
    r.map_err(code)
}
