//! The content-addressed store of everything pulled: components, manifests
//! and signature bundles, each in a file named by its SHA-256
//! (`DIR/sha256/HEX`). A read checks the bytes against their name, so an
//! entry changed on disk is refused, not run. Writes are atomic (a
//! temporary file in the same directory, renamed), so a killed pull leaves
//! nothing half-written under a digest; and each temporary is `flock`ed by
//! its writer while it is written, so opening the store removes those of
//! writers that were killed (a half-downloaded 512 MiB layer is not left
//! behind) and never one being written by a process that runs.

use crate::RegistryError;
use crate::http::Response;
use sha2::Digest as _;
use std::path::{Path, PathBuf};
use toolhost_toolbox_file::Digest;

/// The store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir` (created, private to the user, when missing).
    pub fn open(dir: &Path) -> Result<Store, RegistryError> {
        let blobs = dir.join("sha256");
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&blobs).map_err(|e| RegistryError::Store {
            path: blobs.clone(),
            reason: e.to_string(),
        })?;
        let store = Store {
            dir: dir.to_owned(),
        };
        store.remove_abandoned();
        Ok(store)
    }

    /// Removes the temporaries whose writers are gone: those nobody holds
    /// a lock on. Best effort: what cannot be removed stays for next time.
    fn remove_abandoned(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in rd.flatten() {
            if !e.file_name().to_string_lossy().starts_with(TEMP) {
                continue;
            }
            let path = e.path();
            let Ok(f) = std::fs::File::options().write(true).open(&path) else {
                continue;
            };
            if f.try_lock().is_ok() {
                tracing::info!(
                    "removing {}, left by a pull that was killed",
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// Where the bytes of `digest` are kept.
    pub fn path(&self, digest: &Digest) -> PathBuf {
        self.dir.join("sha256").join(digest.hex())
    }

    /// Whether the bytes of `digest` are here (not checked).
    pub fn has(&self, digest: &Digest) -> bool {
        self.path(digest).is_file()
    }

    /// The bytes of `digest`, checked against it; `None` when absent.
    pub fn get(&self, digest: &Digest) -> Result<Option<Vec<u8>>, RegistryError> {
        let path = self.path(digest);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(RegistryError::Store {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        let actual = sha256_hex(&bytes);
        if actual != digest.hex() {
            return Err(RegistryError::Corrupt {
                path,
                expected: digest.clone(),
                actual,
            });
        }
        Ok(Some(bytes))
    }

    /// Keeps `bytes`; their digest.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, RegistryError> {
        let digest = digest_of(bytes);
        let path = self.path(&digest);
        let fail = |e: std::io::Error| RegistryError::Store {
            path: path.clone(),
            reason: e.to_string(),
        };
        self.write_atomic(&path, bytes).map_err(fail)?;
        Ok(digest)
    }

    /// Streams `response` into the store, checking it is exactly `size`
    /// bytes (when known) whose SHA-256 is `expected` as it arrives: a blob
    /// that is larger, shorter or different is refused and nothing is kept.
    pub async fn download(
        &self,
        response: Response,
        expected: &Digest,
        size: Option<u64>,
        max: u64,
    ) -> Result<(), RegistryError> {
        let url = response.url().to_owned();
        let limit = size.map_or(max, |s| s.min(max));
        if let Some(s) = size
            && s > max
        {
            return Err(RegistryError::TooLarge { url, limit: max });
        }
        let (tmp, file) = self.temp_file().map_err(|e| RegistryError::Store {
            path: self.dir.clone(),
            reason: e.to_string(),
        })?;
        let store_error = |e: std::io::Error| RegistryError::Store {
            path: tmp.clone(),
            reason: e.to_string(),
        };
        let mut file = tokio::fs::File::from_std(file);
        let mut result = response.to_file(limit, &mut file).await;
        // tokio's file writes in the background: every byte must be on
        // disk before the file is renamed under its digest.
        if result.is_ok() {
            use tokio::io::AsyncWriteExt as _;
            if let Err(e) = file.flush().await.and(file.sync_all().await) {
                result = Err(store_error(e));
            }
        }
        drop(file);
        let checked = result.and_then(|(hex, len)| {
            if size.is_some_and(|s| s != len) {
                return Err(RegistryError::Integrity {
                    url: url.clone(),
                    reason: format!(
                        "{len} bytes arrived, the manifest says {}",
                        size.unwrap_or(0)
                    ),
                });
            }
            if hex != expected.hex() {
                return Err(RegistryError::Integrity {
                    url: url.clone(),
                    reason: format!("its SHA-256 is sha256:{hex}, not {expected}"),
                });
            }
            Ok(())
        });
        if let Err(e) = checked {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, self.path(expected)).map_err(|e| RegistryError::Store {
            path: self.path(expected),
            reason: e.to_string(),
        })
    }

    /// The signatures (Sigstore bundles in the store) kept for `manifest`.
    pub fn signatures(&self, manifest: &Digest) -> Result<Vec<Digest>, RegistryError> {
        let path = self.dir.join("signatures").join(manifest.hex());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(RegistryError::Store {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                Digest::parse(l).map_err(|reason| RegistryError::Store {
                    path: path.clone(),
                    reason,
                })
            })
            .collect()
    }

    /// Records `bundles` (in the store) as the signatures of `manifest`.
    pub fn set_signatures(
        &self,
        manifest: &Digest,
        bundles: &[Digest],
    ) -> Result<(), RegistryError> {
        let dir = self.dir.join("signatures");
        let path = dir.join(manifest.hex());
        let fail = |e: std::io::Error| RegistryError::Store {
            path: path.clone(),
            reason: e.to_string(),
        };
        std::fs::create_dir_all(&dir).map_err(fail)?;
        let text: String = bundles.iter().map(|d| format!("{d}\n")).collect();
        self.write_atomic(&path, text.as_bytes()).map_err(fail)
    }

    /// Writes `bytes` to a temporary file, then renames it to `path`.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write as _;
        let (tmp, mut f) = self.temp_file()?;
        let written = f
            .write_all(bytes)
            .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// A new temporary file in the store, locked for as long as it is open
    /// (see [`Store::open`]). Its name is random: never one a restarted
    /// process (the same pid in a new container) could find taken.
    fn temp_file(&self) -> std::io::Result<(PathBuf, std::fs::File)> {
        loop {
            let path = self.dir.join(format!(
                "{TEMP}{}",
                toolhost_contract::unique::unique_name()
            ));
            let f = match std::fs::File::options()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                other => other?,
            };
            f.try_lock().map_err(|e| match e {
                std::fs::TryLockError::Error(e) => e,
                std::fs::TryLockError::WouldBlock => {
                    std::io::Error::other("a new temporary file is locked")
                }
            })?;
            return Ok((path, f));
        }
    }
}

/// The prefix of the store's temporary files.
const TEMP: &str = ".tmp-";

/// The digest of `bytes`.
pub fn digest_of(bytes: &[u8]) -> Digest {
    Digest::from_sha256(sha2::Sha256::digest(bytes).into())
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_checked_when_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("opens");
        let d = store.put(b"component bytes").expect("puts");
        assert_eq!(
            store.get(&d).expect("reads").as_deref(),
            Some(&b"component bytes"[..])
        );
        std::fs::write(store.path(&d), b"component bytez").expect("edit on disk");
        let e = store.get(&d).expect_err("refused");
        assert!(matches!(e, RegistryError::Corrupt { .. }), "{e}");
        let absent = digest_of(b"never stored");
        assert_eq!(store.get(&absent).expect("reads"), None);
    }

    #[test]
    fn opening_removes_what_killed_pulls_left_and_nothing_being_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("opens");
        // A pull in progress (its file open and locked), and what a killed
        // one left (no lock): a pid-named temporary of an older host too.
        let (writing, _held) = store.temp_file().expect("a temporary");
        let killed = dir.path().join(format!("{TEMP}0123456789abcdef"));
        std::fs::write(&killed, vec![0u8; 4096]).expect("writes");
        let older = dir.path().join(format!("{TEMP}1-0"));
        std::fs::write(&older, b"half").expect("writes");
        Store::open(dir.path()).expect("opens again");
        assert!(writing.exists(), "a pull in progress keeps its file");
        assert!(
            !killed.exists() && !older.exists(),
            "killed pulls' files go"
        );
    }
}
