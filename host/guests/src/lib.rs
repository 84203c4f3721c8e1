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

/// The hostile-descriptor test component (`guest-tools/test-guests/
/// descriptors`) in `mode`: its bytes with the eight mode bytes after its
/// marker replaced (a mode is at most eight ASCII bytes, padded with
/// spaces). One build gives every variant, each with its own digest; see
/// that crate for the modes.
///
/// # Panics
/// When `mode` is longer than eight bytes, or the component is missing or
/// lacks the marker (a broken build, in a test).
pub fn descriptor_guest(mode: &str) -> Vec<u8> {
    const MARKER: &[u8] = b"toolhost-descriptor-mode=";
    assert!(mode.len() <= 8, "a mode is at most 8 bytes: {mode:?}");
    let mut bytes = std::fs::read(GUEST_DESCRIPTORS).expect("the descriptors guest is built");
    let at = bytes
        .windows(MARKER.len())
        .position(|w| w == MARKER)
        .expect("the descriptors guest carries its mode marker")
        + MARKER.len();
    let mut padded = [b' '; 8];
    padded[..mode.len()].copy_from_slice(mode.as_bytes());
    bytes[at..at + 8].copy_from_slice(&padded);
    bytes
}
