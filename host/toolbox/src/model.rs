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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_pipeline::embed::{Model, WORDLLAMA};
use toolhost_pipeline::{ModelState, Registry};
use toolhost_registry::{Fetch, Limits, Plain, Store};

/// The variable that names the wheel to read, or `off`.
pub const ENV: &str = "TOOLHOST_SEARCH_MODEL";

/// Where a host's search model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchModel {
    /// None: the search is BM25 alone.
    Off,
    /// The pinned wheel at this path (checked against the pin).
    Wheel(PathBuf),
    /// The pinned wheel in the store at this directory, fetched into it
    /// on first use.
    Store(PathBuf),
}

impl SearchModel {
    /// What [`ENV`] says, else the store at `store_dir`, else none.
    pub fn from_env(store_dir: Option<&Path>) -> SearchModel {
        SearchModel::choose(std::env::var_os(ENV).as_deref(), store_dir)
    }

    /// What the variable's value `var` says, else the store.
    fn choose(var: Option<&std::ffi::OsStr>, store_dir: Option<&Path>) -> SearchModel {
        match var {
            Some(v) if v == "off" => SearchModel::Off,
            Some(v) if !v.is_empty() => SearchModel::Wheel(PathBuf::from(v)),
            _ => store_dir.map_or(SearchModel::Off, |d| SearchModel::Store(d.to_owned())),
        }
    }
}

/// Makes `registry`'s searches hybrid with the model `source` names:
/// fetched first when the store lacks it (the registry says
/// [`ModelState::Fetching`] meanwhile), then read ([`ModelState::Loading`]).
/// When it cannot be had, the registry says why and searches stay BM25
/// alone; the reason is returned and logged once.
pub async fn load(source: &SearchModel, registry: &Registry) -> Result<(), String> {
    let wheel = match source {
        SearchModel::Off => return Ok(()),
        SearchModel::Wheel(path) => path.clone(),
        SearchModel::Store(dir) => {
            match fetched(dir, || registry.set_model_state(ModelState::Fetching)).await {
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
            registry.set_model(Arc::new(model));
            // Every tool embedded now, not by the next search.
            let registry = registry.clone();
            let _ = tokio::task::spawn_blocking(move || registry.search_index()).await;
            Ok(())
        }
        Err(why) => Err(unavailable(registry, why)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_a_wheel_or_turns_the_model_off() {
        let store = Some(Path::new("/cache/store"));
        let pick = |v: Option<&str>, store| SearchModel::choose(v.map(std::ffi::OsStr::new), store);
        assert_eq!(pick(Some("off"), store), SearchModel::Off);
        assert_eq!(
            pick(Some("/w.whl"), store),
            SearchModel::Wheel("/w.whl".into())
        );
        assert_eq!(pick(None, store), SearchModel::Store("/cache/store".into()));
        assert_eq!(
            pick(Some(""), store),
            SearchModel::Store("/cache/store".into())
        );
        assert_eq!(pick(None, None), SearchModel::Off);
    }
}
