//! The guest components of `guest-tools/`, built from source by this crate's
//! build script (never committed as binaries), and where to find them.
//!
//! ```no_run
//! let read = std::path::Path::new(toolhost_guests::TOOL_READ);
//! assert!(read.exists());
//! ```

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

/// The repository root (for policies/ and other checked-in files).
pub const REPO_ROOT: &str = env!("TOOLHOST_REPO_ROOT");

/// The compiled-component cache shared by every test process and the quick
/// benchmarks (artifacts are written atomically, so concurrent writers are
/// safe): the tests fill it, and `--quick` benches load from it instead of
/// compiling large components again.
pub fn test_cache_dir() -> std::path::PathBuf {
    std::path::Path::new(REPO_ROOT).join("target/toolhost-test-cache")
}

/// The path of a built component by file stem, e.g. `tool_read`.
pub fn path(stem: &str) -> Option<&'static str> {
    ALL.iter().find(|(s, _)| *s == stem).map(|(_, p)| *p)
}
