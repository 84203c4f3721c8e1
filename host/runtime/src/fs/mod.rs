//! The guest's file system: the host's own implementation of
//! `wasi:filesystem/types`, which meters every write against the call's
//! [`WriteBudget`] and sends every change in a read-write grant to its
//! [`Staging`] (or, with staging off, straight to wasmtime-wasi).
//!
//! **How.** The runtime links wasmtime-wasi's WASI as usual, then links the
//! `wasi:filesystem/types` interface a second time over it (linker
//! shadowing) with [`BudgetedFs`]. Its view implements the generated host
//! traits in full by delegating every function to wasmtime-wasi's own
//! implementation, and meters the ones that add data or entries before they
//! run:
//!
//! - `write` (its buffer), `set-size` (growth beyond the current size);
//! - `write-via-stream` and `append-via-stream`: the stream they return is
//!   wrapped in a [`BudgetedStream`], so every byte later written through it
//!   (`write`, `blocking-write-and-flush`, `write-zeroes`, `splice`, all of
//!   which end in the wrapper's `write` or `blocking_write_and_flush`) is
//!   metered;
//! - `open-at` with `create` of a path that does not exist yet,
//!   `create-directory-at`, `link-at`, `symlink-at`: one entry each.
//!
//! **Why there.** Every guest write passes through these functions, whatever
//! issued it: the guest's libc, the preview-1 adapter or raw WASI calls.
//! Because the traits are implemented whole (no defaults to fall back on), a
//! function added by a wasmtime upgrade is a compile error here, never a
//! silent way around the budget; and the stream wrapper sits on the
//! filesystem's own streams only (stdout and stderr are bounded separately).
//!
//! **Dispatch.** A `*-at` function on a directory descriptor of a staged
//! grant is answered by the grant's overlay ([`staging`]); on any other
//! descriptor, by wasmtime-wasi. What exceeds the budget traps (see
//! [`budget`]).

mod budget;
mod staging;

pub(crate) use budget::{WriteBudget, WriteBudgetExceeded};
pub(crate) use staging::Staging;

use budget::{BudgetedStream, trap};
use staging::{
    At, clean_read_open, same_grant, staged_metadata_hash, staged_set_times, staged_stat, wasi,
};
use std::sync::Arc;
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{DynOutputStream, FsError, FsResult};

/// The `HasData` of the budgeted `wasi:filesystem/types` linking.
pub(crate) struct BudgetedFs;

impl HasData for BudgetedFs {
    type Data<'a> = BudgetedFsView<'a>;
}

/// wasmtime-wasi's filesystem view plus the call's budget and staging.
pub(crate) struct BudgetedFsView<'a> {
    fs: WasiFilesystemCtxView<'a>,
    budget: &'a Arc<WriteBudget>,
    /// The call's staged read-write grants.
    staging: &'a mut Staging,
}

impl<'a> BudgetedFsView<'a> {
    /// The view of one call's filesystem, its budget and its staging.
    pub(crate) fn new(
        fs: WasiFilesystemCtxView<'a>,
        budget: &'a Arc<WriteBudget>,
        staging: &'a mut Staging,
    ) -> BudgetedFsView<'a> {
        BudgetedFsView {
            fs,
            budget,
            staging,
        }
    }
}

/// Links the budgeted `wasi:filesystem/types` over the one
/// `wasmtime_wasi::p2::add_to_linker_async` linked; `view` is the
/// linker's getter of a store's view.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> BudgetedFsView<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let r = types::add_to_linker::<T, BudgetedFs>(linker, view)
        .and_then(|()| preopens::add_to_linker::<T, BudgetedFs>(linker, view));
    linker.allow_shadowing(false);
    r
}

/// A borrow of the same descriptor, to pass on twice.
fn again(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

impl preopens::Host for BudgetedFsView<'_> {
    /// wasmtime-wasi's preopens; those of read-write grants are staged.
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let dirs = preopens::Host::get_directories(&mut self.fs)?;
        self.staging.register_preopens(&dirs);
        Ok(dirs)
    }
}

impl types::Host for BudgetedFsView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.fs, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.fs, err)
    }
}

impl HostDescriptor for BudgetedFsView<'_> {
    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        HostDescriptor::advise(&mut self.fs, fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        HostDescriptor::sync_data(&mut self.fs, fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorFlags> {
        HostDescriptor::get_flags(&mut self.fs, fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorType> {
        HostDescriptor::get_type(&mut self.fs, fd).await
    }

    /// Metered: growth beyond the current size counts as bytes written.
    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        let current = HostDescriptor::stat(&mut self.fs, again(&fd)).await?.size;
        if size > current {
            self.budget.charge_bytes(size - current).map_err(trap)?;
        }
        HostDescriptor::set_size(&mut self.fs, fd, size).await
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        if let At::Staged(..) = self.staging.at(&fd) {
            // A staged directory's own times are not staged.
            return Ok(());
        }
        HostDescriptor::set_times(&mut self.fs, fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        HostDescriptor::read(&mut self.fs, fd, len, offset).await
    }

    /// Metered: the buffer's length.
    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        let n = buf.len() as u64;
        self.budget.charge_bytes(n).map_err(trap)?;
        let r = HostDescriptor::write(&mut self.fs, fd, buf, offset).await;
        if r.is_err() {
            // Refused (a read-only descriptor, say): nothing was written.
            self.budget.refund_bytes(n);
        }
        r
    }

    async fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        if let At::Staged(o, _, rel) = self.staging.at(&fd)
            && !o.is_clean()
        {
            return self.staging.read_directory(&mut self.fs, &o, &rel).await;
        }
        HostDescriptor::read_directory(&mut self.fs, fd).await
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        HostDescriptor::sync(&mut self.fs, fd).await
    }

    /// Metered: one entry.
    async fn create_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let at = self.staging.at_to_change(&fd)?;
        self.budget.charge_entry().map_err(trap)?;
        let r = match at {
            At::Staged(o, _, rel) => wasi(o.create_dir(&rel, &path)),
            At::Direct => HostDescriptor::create_directory_at(&mut self.fs, fd, path).await,
        };
        if r.is_err() {
            self.budget.refund_entry();
        }
        r
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorStat> {
        if let At::Staged(o, _, rel) = self.staging.at(&fd)
            && !o.is_clean()
        {
            return staged_stat(&o, &rel, None, true);
        }
        HostDescriptor::stat(&mut self.fs, fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        if let At::Staged(o, _, rel) = self.staging.at(&fd)
            && !o.is_clean()
        {
            let f = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
            return staged_stat(&o, &rel, Some(&path), f);
        }
        HostDescriptor::stat_at(&mut self.fs, fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        let at = self.staging.at_to_change(&fd)?;
        if let At::Staged(o, _, rel) = at {
            let f = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
            return staged_set_times(&o, &rel, &path, f, atim, mtim);
        }
        HostDescriptor::set_times_at(&mut self.fs, fd, path_flags, path, atim, mtim).await
    }

    /// Metered: one entry (the new name).
    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: types::PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        let target = self.staging.at_to_change(&new_descriptor)?;
        let staged = same_grant(&self.staging.at(&fd), &target)?;
        self.budget.charge_entry().map_err(trap)?;
        let r = match staged {
            Some((o, from, to)) => {
                let f = old_path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
                wasi(o.link(&from, &old_path, f, &to, &new_path))
            }
            None => {
                HostDescriptor::link_at(
                    &mut self.fs,
                    fd,
                    old_path_flags,
                    old_path,
                    new_descriptor,
                    new_path,
                )
                .await
            }
        };
        if r.is_err() {
            self.budget.refund_entry();
        }
        r
    }

    /// Metered: one entry when `create` makes a path that did not exist.
    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        if let At::Staged(o, grant, rel) = self.staging.at(&fd) {
            let changes = oflags.intersects(types::OpenFlags::CREATE | types::OpenFlags::TRUNCATE)
                || flags.intersects(
                    types::DescriptorFlags::WRITE | types::DescriptorFlags::MUTATE_DIRECTORY,
                );
            if changes {
                self.staging.may_change(grant)?;
            }
            let reads = !changes && !oflags.contains(types::OpenFlags::DIRECTORY);
            if reads
                && o.is_clean()
                && let Some(r) = clean_read_open(
                    &mut self.fs,
                    &o,
                    &rel,
                    &fd,
                    path_flags,
                    &path,
                    oflags,
                    flags,
                )
                .await?
            {
                return Ok(r);
            }
            return self.staging.open(
                self.fs.table,
                self.budget,
                (o, grant, rel),
                path_flags,
                path,
                oflags,
                flags,
            );
        }
        let creates = oflags.contains(types::OpenFlags::CREATE)
            && HostDescriptor::stat_at(&mut self.fs, again(&fd), path_flags, path.clone())
                .await
                .is_err();
        if creates {
            self.budget.charge_entry().map_err(trap)?;
        }
        let r = HostDescriptor::open_at(&mut self.fs, fd, path_flags, path, oflags, flags).await;
        if creates && r.is_err() {
            self.budget.refund_entry();
        }
        r
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.staging.forget(fd.rep(), false);
        HostDescriptor::drop(&mut self.fs, fd)
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        if let At::Staged(o, _, rel) = self.staging.at(&fd)
            && !o.is_clean()
        {
            return wasi(o.read_link(&rel, &path));
        }
        HostDescriptor::readlink_at(&mut self.fs, fd, path).await
    }

    async fn remove_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let at = self.staging.at_to_change(&fd)?;
        if let At::Staged(o, _, rel) = at {
            return wasi(o.remove_dir(&rel, &path));
        }
        HostDescriptor::remove_directory_at(&mut self.fs, fd, path).await
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        let (from_at, to_at) = (
            self.staging.at_to_change(&fd)?,
            self.staging.at_to_change(&new_fd)?,
        );
        if let Some((o, from, to)) = same_grant(&from_at, &to_at)? {
            return wasi(o.rename(&from, &old_path, &to, &new_path));
        }
        HostDescriptor::rename_at(&mut self.fs, fd, old_path, new_fd, new_path).await
    }

    /// Metered: one entry.
    async fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        let at = self.staging.at_to_change(&fd)?;
        self.budget.charge_entry().map_err(trap)?;
        let r = match at {
            At::Staged(o, _, rel) => wasi(o.symlink(&rel, &src_path, &dest_path)),
            At::Direct => HostDescriptor::symlink_at(&mut self.fs, fd, src_path, dest_path).await,
        };
        if r.is_err() {
            self.budget.refund_entry();
        }
        r
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let at = self.staging.at_to_change(&fd)?;
        if let At::Staged(o, _, rel) = at {
            return wasi(o.unlink(&rel, &path));
        }
        HostDescriptor::unlink_file_at(&mut self.fs, fd, path).await
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<wasmtime_wasi::p2::DynInputStream>> {
        HostDescriptor::read_via_stream(&mut self.fs, fd, offset)
    }

    /// Metered: the stream is wrapped in a [`BudgetedStream`].
    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        let stream = HostDescriptor::write_via_stream(&mut self.fs, fd, offset)?;
        self.wrap(stream)
    }

    /// Metered: the stream is wrapped in a [`BudgetedStream`].
    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DynOutputStream>> {
        let stream = HostDescriptor::append_via_stream(&mut self.fs, fd)?;
        self.wrap(stream)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        HostDescriptor::is_same_object(&mut self.fs, a, b).await
    }

    async fn metadata_hash(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<types::MetadataHashValue> {
        if let At::Staged(o, _, rel) = self.staging.at(&fd) {
            return staged_metadata_hash(&o, &rel, None, true);
        }
        HostDescriptor::metadata_hash(&mut self.fs, fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        if let At::Staged(o, _, rel) = self.staging.at(&fd) {
            let f = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
            return staged_metadata_hash(&o, &rel, Some(&path), f);
        }
        HostDescriptor::metadata_hash_at(&mut self.fs, fd, path_flags, path).await
    }
}

impl BudgetedFsView<'_> {
    /// Replaces a file stream in the table by its metered wrapper.
    fn wrap(&mut self, stream: Resource<DynOutputStream>) -> FsResult<Resource<DynOutputStream>> {
        let inner = self.fs.table.delete(stream)?;
        let wrapped: DynOutputStream = Box::new(BudgetedStream::new(inner, self.budget.clone()));
        Ok(self.fs.table.push(wrapped)?)
    }
}

impl HostDirectoryEntryStream for BudgetedFsView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        if let Some(next) = self.staging.next_entry(stream.rep()) {
            return Ok(next);
        }
        HostDirectoryEntryStream::read_directory_entry(&mut self.fs, stream).await
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.staging.forget(stream.rep(), true);
        HostDirectoryEntryStream::drop(&mut self.fs, stream)
    }
}
