//! The content-addressed store of everything pulled: components, manifests
//! and signature bundles, each in a file named by its SHA-256
//! (`DIR/sha256/HEX`). A read checks the bytes against their name, so an
//! entry changed on disk is refused, not run. Writes are atomic (a
//! temporary file in the same directory, renamed), so a killed pull leaves
//! nothing half-written under a digest.

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
        Ok(Store {
            dir: dir.to_owned(),
        })
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
        let tmp = self.temp_path();
        let fail = |e: std::io::Error| RegistryError::Store {
            path: path.clone(),
            reason: e.to_string(),
        };
        std::fs::write(&tmp, bytes).map_err(fail)?;
        std::fs::rename(&tmp, &path).map_err(fail)?;
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
        let tmp = self.temp_path();
        let store_error = |e: std::io::Error| RegistryError::Store {
            path: tmp.clone(),
            reason: e.to_string(),
        };
        let mut file = tokio::fs::File::create(&tmp).await.map_err(store_error)?;
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
        let tmp = self.temp_path();
        let text: String = bundles.iter().map(|d| format!("{d}\n")).collect();
        std::fs::write(&tmp, text).map_err(fail)?;
        std::fs::rename(&tmp, &path).map_err(fail)
    }

    fn temp_path(&self) -> PathBuf {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        self.dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    }
}

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
}
