//! The guest components of `guest-tools/`, built from source by this crate's
//! build script (never committed as binaries), and where to find them.
//!
//! ```no_run
//! let read = std::path::Path::new(toolhost_guests::TOOL_READ);
//! assert!(read.exists());
//! ```

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

/// The repository root (for policies/ and other checked-in files); in a
/// packaged build, the sources unpacked from `guest-sources.tar` (the
/// guest tools, the WIT, the policies).
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
    with_mode(GUEST_DESCRIPTORS, b"toolhost-descriptor-mode=", 8, mode)
}

/// The catalog test component (`guest-tools/test-guests/catalog`)
/// declaring the recorded tools of one public MCP server, by its file
/// stem in `tests/discovery/catalog/` (`github`, `slack`…), or `all`.
///
/// # Panics
/// When the stem is longer than 24 bytes, or the component is missing or
/// lacks its marker (a broken build, in a test).
pub fn catalog_guest(server: &str) -> Vec<u8> {
    with_mode(GUEST_CATALOG, b"toolhost-catalog-server=", 24, server)
}

/// The file stems of the recorded servers (`tests/discovery/catalog/`),
/// sorted.
///
/// # Panics
/// When the folder cannot be read (a broken checkout, in a test).
pub fn catalog_servers() -> Vec<String> {
    let dir = std::path::Path::new(REPO_ROOT).join("tests/discovery/catalog");
    let mut stems: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/discovery/catalog")
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "json").then(|| p.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    stems.sort();
    stems
}

/// `component`'s bytes with the `width` bytes after `marker` replaced by
/// `mode`, padded with spaces.
fn with_mode(component: &str, marker: &[u8], width: usize, mode: &str) -> Vec<u8> {
    assert!(
        mode.len() <= width,
        "a mode is at most {width} bytes: {mode:?}"
    );
    let mut bytes = std::fs::read(component).expect("the test guest is built");
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("the test guest carries its mode marker")
        + marker.len();
    let mut padded = vec![b' '; width];
    padded[..mode.len()].copy_from_slice(mode.as_bytes());
    bytes[at..at + width].copy_from_slice(&padded);
    bytes
}
