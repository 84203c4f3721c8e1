//! Where a host keeps what outlives it by default: compiled components,
//! the journal of committed file effects, remote components.

use std::path::PathBuf;

/// The default journal of committed file effects: `journal` in the
/// default cache directory.
pub fn default_journal_dir() -> Option<PathBuf> {
    default_cache_dir().map(|d| d.join("journal"))
}

/// The default compiled-component cache: `$XDG_CACHE_HOME/toolhost` or
/// `~/.cache/toolhost`.
pub fn default_cache_dir() -> Option<PathBuf> {
    toolhost_effects::user_cache_dir()
}

/// The default store: `$XDG_CACHE_HOME/toolhost/store` or
/// `~/.cache/toolhost/store`.
pub fn default_store_dir() -> Option<PathBuf> {
    default_cache_dir().map(|d| d.join("store"))
}
