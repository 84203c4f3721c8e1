//! Where the search's model comes from, and its loading in the background
//! ([`toolhost_pipeline::discovery`] ranks by meaning once it is ready).
//!
//! The weights are WordLlama's, in the PyPI wheel that ships them
//! ([`toolhost_pipeline::embed::WORDLLAMA`], pinned by URL and SHA-256).
//! They are fetched the first time a host searches, into the store that
//! keeps remote components (content-addressed, `~/.cache/toolhost/store`),
//! and checked against the pin before a byte is read; a restart reads
//! them from there. They are not shipped in toolhost's own packages: 19 MB
//! more in every wheel and npm tarball, for a search that works without
//! them. `TOOLHOST_SEARCH_MODEL` names a copy of that wheel instead (a
//! machine that cannot reach PyPI), or `off`.
//!
//! Until the model is ready, and for good when it cannot be had, the
//! search is BM25 alone; a host says so once, in its log.
//!
//! The tools' embeddings are kept on disk too ([`EmbeddingCache`], by
//! descriptor digest, one file per model), so a restart embeds only the
//! tools it has not seen.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_pipeline::discovery::EmbeddingMemo;
use toolhost_pipeline::embed::{Embedding, Model, WORDLLAMA};
use toolhost_pipeline::{ModelState, Registry};
use toolhost_registry::{Fetch, Limits, Plain, Store};

use crate::dirs::default_store_dir;

/// The variable that names the wheel to read, or `off`.
pub const ENV: &str = "TOOLHOST_SEARCH_MODEL";

/// Where a host's search model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchModel {
    /// None: the search is BM25 alone.
    Off,
    /// The pinned wheel at this path (checked against the pin).
    Wheel(PathBuf),
    /// The pinned wheel in the host's store (`HostConfig::store_dir`),
    /// fetched into it on first use.
    Fetched,
}

impl SearchModel {
    /// What [`ENV`] says, else the store.
    pub fn from_env() -> SearchModel {
        SearchModel::choose(std::env::var_os(ENV).as_deref())
    }

    /// What the variable's value `var` says, else the store.
    fn choose(var: Option<&std::ffi::OsStr>) -> SearchModel {
        match var {
            Some(v) if v == "off" => SearchModel::Off,
            Some(v) if !v.is_empty() => SearchModel::Wheel(PathBuf::from(v)),
            _ => SearchModel::Fetched,
        }
    }
}

/// Makes `registry`'s searches hybrid with the model `source` names:
/// fetched first when the store (`store_dir`, else the default one) lacks
/// it (the registry says [`ModelState::Fetching`] meanwhile), then read
/// ([`ModelState::Loading`]). When it cannot be had, the registry says why
/// and searches stay BM25 alone; the reason is returned and logged once.
/// The tools' embeddings are read from `cache` first and written back to
/// it.
pub async fn load(
    source: &SearchModel,
    store_dir: Option<&Path>,
    registry: &Registry,
    cache: Option<&EmbeddingCache>,
) -> Result<(), String> {
    let wheel = match source {
        SearchModel::Off => return Ok(()),
        SearchModel::Wheel(path) => path.clone(),
        SearchModel::Fetched => {
            let Some(dir) = store_dir.map(Path::to_owned).or_else(default_store_dir) else {
                let why = "no place for the store (set HOME or XDG_CACHE_HOME)".to_owned();
                return Err(unavailable(registry, why));
            };
            match fetched(&dir, || registry.set_model_state(ModelState::Fetching)).await {
                Ok(path) => path,
                Err(why) => return Err(unavailable(registry, why)),
            }
        }
    };
    registry.set_model_state(ModelState::Loading);
    let read = tokio::task::spawn_blocking(move || Model::from_wheel_file(&wheel, &WORDLLAMA))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    match read {
        Ok(model) => {
            tracing::debug!(
                bytes = model.table_bytes(),
                "search model ready: searches rank by meaning too"
            );
            if let Some(cache) = cache {
                registry.keep_embeddings(cache.read(model.dim()));
            }
            registry.set_model(Arc::new(model));
            // Every tool embedded now, not by the next search.
            index(registry, cache).await;
            Ok(())
        }
        Err(why) => Err(unavailable(registry, why)),
    }
}

/// Builds `registry`'s search index off the caller's thread; once the
/// model is ready, what it embedded is kept in `cache` for the next start.
pub async fn index(registry: &Registry, cache: Option<&EmbeddingCache>) {
    let r = registry.clone();
    let _ = tokio::task::spawn_blocking(move || r.search_index()).await;
    if let Some(cache) = cache
        && registry.model_state() == ModelState::Ready
    {
        cache.save(registry).await;
    }
}

/// Says the model cannot be had, once; the reason.
fn unavailable(registry: &Registry, why: String) -> String {
    tracing::warn!(
        "search ranks by words alone (BM25): its model could not be had: {why} \
         (set {ENV} to a copy of {}, or to `off`)",
        WORDLLAMA.file
    );
    registry.set_model_state(ModelState::Unavailable(why.clone()));
    why
}

/// The pinned wheel's path in the store at `dir`, fetched first (after
/// calling `fetching`) when it is not there.
pub async fn fetched(dir: &Path, fetching: impl FnOnce()) -> Result<PathBuf, String> {
    let store = Store::open(dir).map_err(|e| e.to_string())?;
    let digest = toolhost_toolbox_file::Digest::from_sha256_hex(WORDLLAMA.sha256)?;
    let path = store.path(&digest);
    if store.has(&digest) {
        return Ok(path);
    }
    fetching();
    let http = toolhost_registry::http::Http::new(Limits::default()).map_err(|e| e.to_string())?;
    let fetch = Fetch::new("PyPI", WORDLLAMA.url, &http.limits()).sized(WORDLLAMA.size);
    let response = http
        .send_within(
            &fetch,
            http::Method::GET,
            WORDLLAMA.url,
            &http::HeaderMap::new(),
            Default::default(),
            Plain::Refused,
        )
        .await
        .map_err(|e| e.to_string())?;
    if !response.status.is_success() {
        return Err(format!("{} answered {}", WORDLLAMA.url, response.status));
    }
    store
        .download(response, &digest, Some(WORDLLAMA.size), WORDLLAMA.size)
        .await
        .map_err(|e| e.to_string())?;
    Ok(path)
}

/// The tools' embeddings on disk: one file per model under a directory
/// of the cache, written whole (a temporary file renamed) after an index
/// build embedded tools it did not have. A file that cannot be read, or
/// was written by another model, is ignored: the tools are embedded again.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    file: PathBuf,
    /// The digests written last, to skip writing what is already there.
    written: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
}

/// The file's first bytes: its format.
const MAGIC: &[u8; 8] = b"THEMB\x001\n";

/// The largest cache file read (a million tools of 256 floats is 1 GB:
/// far past any toolbox).
const MAX_CACHE_FILE: u64 = 256 << 20;

impl EmbeddingCache {
    /// The cache of the pinned model's embeddings in `dir` (the host's
    /// cache directory).
    pub fn in_dir(dir: &Path) -> EmbeddingCache {
        EmbeddingCache {
            file: dir
                .join("search")
                .join(format!("{}.embeddings", &WORDLLAMA.sha256[..16])),
            written: Arc::default(),
        }
    }

    /// The file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The embeddings kept, `dim` wide; none when the file is missing,
    /// unreadable or of another width.
    pub fn read(&self, dim: usize) -> EmbeddingMemo {
        let bytes = match std::fs::metadata(&self.file) {
            Ok(m) if m.len() <= MAX_CACHE_FILE => std::fs::read(&self.file).unwrap_or_default(),
            _ => Vec::new(),
        };
        let memo = decode(&bytes, dim).unwrap_or_default();
        self.lock().extend(memo.keys().cloned());
        memo
    }

    /// Writes `registry`'s embeddings when it holds some not written yet
    /// (off the caller's thread; a failure is logged, the search goes on).
    pub async fn save(&self, registry: &Registry) {
        let memo = registry.embeddings();
        {
            let written = self.lock();
            if memo.keys().all(|d| written.contains(d)) {
                return;
            }
        }
        let file = self.file.clone();
        let keys: std::collections::BTreeSet<String> = memo.keys().cloned().collect();
        let wrote = tokio::task::spawn_blocking(move || write_atomic(&file, &encode(&memo)))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r);
        match wrote {
            Ok(()) => *self.lock() = keys,
            Err(e) => tracing::debug!("search embeddings not kept in {}: {e}", self.file.display()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The file's bytes: the magic, the width and the count (u32, little
/// endian), then each entry: its digest's length (u16) and bytes, then a
/// flag (1: a vector of `width` f32 follows; 0: the tool has no token).
fn encode(memo: &EmbeddingMemo) -> Vec<u8> {
    let dim = memo
        .values()
        .flatten()
        .next()
        .map_or(0, |e| e.as_slice().len());
    let mut out = MAGIC.to_vec();
    out.extend((dim as u32).to_le_bytes());
    out.extend((memo.len() as u32).to_le_bytes());
    let mut entries: Vec<_> = memo.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (digest, e) in entries {
        out.extend((digest.len() as u16).to_le_bytes());
        out.extend(digest.as_bytes());
        match e {
            Some(e) if e.as_slice().len() == dim => {
                out.push(1);
                for v in e.as_slice() {
                    out.extend(v.to_le_bytes());
                }
            }
            _ => out.push(0),
        }
    }
    out
}

/// The entries of a file [`encode`] wrote, `dim` wide; `None` when it is
/// not one, or of another width.
fn decode(bytes: &[u8], dim: usize) -> Option<EmbeddingMemo> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = bytes.get(at..at.checked_add(n)?)?;
        at += n;
        Some(s)
    };
    if take(8)? != MAGIC {
        return None;
    }
    let u32_of = |b: &[u8]| b.try_into().ok().map(u32::from_le_bytes);
    let width = u32_of(take(4)?)? as usize;
    let count = u32_of(take(4)?)? as usize;
    if width != dim && count > 0 {
        return None;
    }
    let mut memo = EmbeddingMemo::new();
    for _ in 0..count {
        let n = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
        let digest = std::str::from_utf8(take(n)?).ok()?.to_owned();
        let e = match take(1)?[0] {
            0 => None,
            1 => {
                let raw = take(dim.checked_mul(4)?)?;
                let v = raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                Some(Arc::new(Embedding::from_vec(v)?))
            }
            _ => return None,
        };
        memo.insert(digest, e);
    }
    Some(memo)
}

/// Writes `bytes` to `file` whole: a temporary file beside it, renamed.
fn write_atomic(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // A name of its own: two hosts in one process may write at once.
    let tmp = dir.join(format!(
        ".partial-{}",
        toolhost_contract::unique::unique_name()
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_a_wheel_or_turns_the_model_off() {
        let pick = |v: Option<&str>| SearchModel::choose(v.map(std::ffi::OsStr::new));
        assert_eq!(pick(Some("off")), SearchModel::Off);
        assert_eq!(pick(Some("/w.whl")), SearchModel::Wheel("/w.whl".into()));
        assert_eq!(pick(None), SearchModel::Fetched);
        assert_eq!(pick(Some("")), SearchModel::Fetched);
    }

    #[test]
    fn embeddings_round_trip_and_a_bad_file_is_ignored() {
        // Unit length already: read back bit for bit.
        let v = Embedding::from_vec(vec![0.0, 1.0, 0.0]).map(Arc::new);
        let memo: EmbeddingMemo = [("sha256:a".to_owned(), v), ("sha256:b".into(), None)]
            .into_iter()
            .collect();
        let bytes = encode(&memo);
        assert_eq!(decode(&bytes, 3), Some(memo));
        // Another width, a truncation, a flipped flag: not read.
        assert_eq!(decode(&bytes, 4), None);
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], 3), None, "cut at {cut}");
        }
        let mut bad = bytes.clone();
        bad[8 + 8 + 2 + 8] = 7;
        assert_eq!(decode(&bad, 3), None);
        assert_eq!(decode(b"not a cache", 3), None);
    }
}
