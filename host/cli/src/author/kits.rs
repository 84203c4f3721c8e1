//! The kits embedded in the binary, and their copy on disk: the build
//! scripts run from a directory laid out as the repository is
//! (`wit/v0.3.0`, `guest-tools/<lang>/…`), under the cache, one per set of
//! kits (named by their digest), written once. The toolchains the scripts
//! install go below it too (`target/`).

use super::{AuthorError, Lang, io};
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/kits.rs"));

/// The directory of these kits under `cache`, written now if it is not
/// there yet. Concurrent first runs each write a copy of their own and
/// one rename wins; a half-written copy is never used.
pub fn extract(cache: &Path) -> Result<PathBuf, AuthorError> {
    let kits = cache.join("kits");
    let dir = kits.join(format!("{}-{KIT_DIGEST}", env!("CARGO_PKG_VERSION")));
    if dir.is_dir() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&kits).map_err(io(format!("creating {}", kits.display())))?;
    let partial = kits.join(format!(".partial-{}-{KIT_DIGEST}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    for (rel, bytes, executable) in KIT_FILES {
        let path = partial.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("creating {}", parent.display())))?;
        }
        std::fs::write(&path, bytes).map_err(io(format!("writing {}", path.display())))?;
        if *executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(io(format!("making {} executable", path.display())))?;
        }
    }
    match std::fs::rename(&partial, &dir) {
        Ok(()) => Ok(dir),
        // Another process finished first: its copy is the same.
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&partial);
            Ok(dir)
        }
        Err(e) => Err(io(format!("moving the kits into {}", dir.display()))(e)),
    }
}

/// The template files of `lang`: paths relative to the template's root.
pub(crate) fn template(lang: Lang) -> impl Iterator<Item = (&'static str, &'static [u8])> {
    let prefix = format!("guest-tools/{}/new/", lang.name());
    KIT_FILES.iter().filter_map(move |(path, bytes, _)| {
        path.strip_prefix(prefix.as_str()).map(|rel| (rel, *bytes))
    })
}

/// One embedded file, by its path in the repository.
pub(crate) fn file(path: &str) -> Option<&'static [u8]> {
    KIT_FILES
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, b, _)| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_has_a_template_with_a_policy_and_a_readme() {
        for lang in Lang::ALL {
            let files: Vec<_> = template(lang).map(|(p, _)| p).collect();
            for needed in ["policy.toml", "README.md", "tests/calls.jsonl"] {
                assert!(
                    files.contains(&needed),
                    "{lang}: {needed} missing from {files:?}"
                );
            }
        }
    }

    #[test]
    fn extracts_once_laid_out_as_the_repository() -> Result<(), AuthorError> {
        let cache = tempfile::tempdir().map_err(io("tempdir"))?;
        let dir = extract(cache.path())?;
        for rel in [
            "wit/v0.3.0/tool.wit",
            "guest-tools/python/build.sh",
            "guest-tools/kit/Cargo.toml",
        ] {
            assert!(dir.join(rel).is_file(), "{rel} missing");
        }
        std::fs::write(dir.join("marker"), "x").map_err(io("marker"))?;
        assert_eq!(extract(cache.path())?, dir);
        assert!(dir.join("marker").is_file(), "extracted again");
        Ok(())
    }
}
