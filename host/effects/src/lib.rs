//! `toolhost-effects`: transactional file effects. Every write a call makes
//! in a read-write grant is staged in an [`Overlay`] (nothing in the user's
//! tree changes while the call runs; the guest sees its own writes); after
//! the call its [`EffectSet`] says what would change, path by path; the
//! [`Journal`] commits that set all or nothing, refuses it with `conflict`
//! when a path changed under the call, recovers a commit a killed host left
//! halfway, and keeps pre-images for undo and redo.
//!
//! A call that fails commits nothing: dropping its [`Staged`] discards the
//! staged bytes.

mod effects;
mod journal;
mod overlay;

pub use effects::{Effect, EffectKind, EffectSet, MAX_DIFF_FILE, Staged, Version};
pub use journal::{
    CommitError, CommitInfo, DEFAULT_MAX_JOURNAL_AGE, DEFAULT_MAX_JOURNAL_BYTES, Journal, Record,
    Recovery, State,
};
pub use overlay::{FsError, Kind, MAX_SYMLINK_HOPS, OpenRequest, Opened, Overlay, Stat};
