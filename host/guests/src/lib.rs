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

/// The path of a built component by file stem, e.g. `tool_read`.
pub fn path(stem: &str) -> Option<&'static str> {
    ALL.iter().find(|(s, _)| *s == stem).map(|(_, p)| *p)
}
