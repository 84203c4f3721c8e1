//! The model read from the real wheel (`tests/search-model/fetch.sh`
//! fetches it once into `target/search-model/`, or `TOOLHOST_SEARCH_MODEL`
//! names it) gives what the Python packages give: the token ids of
//! Hugging Face's `tokenizers` 0.22 and the embeddings of WordLlama's
//! `embed(..., norm=True)`, recorded from them.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use toolhost_embed::{EmbedError, Model, WORDLLAMA};
use toolhost_testkit::search_model::wheel;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model() -> Model {
    Model::from_wheel_file(&wheel(), &WORDLLAMA).unwrap()
}

#[test]
fn tokens_are_the_reference_tokenizers() {
    let m = model();
    let t = m.tokenizer();
    for (text, ids) in [
        (
            "how high above sea level",
            &[920, 1880, 2038, 7205, 3233][..],
        ),
        (
            "getFileContents  двойной 🦀 tab\there",
            &[
                679, 2283, 21002, 29871, 10332, 29977, 2082, 29871, 243, 162, 169, 131, 4434, 12,
                4150,
            ],
        ),
        ("", &[]),
        (
            "Take a screenshot of the page.",
            &[11190, 263, 17286, 310, 278, 1813, 29889],
        ),
    ] {
        assert_eq!(t.encode(text), ids, "{text:?}");
    }
}

#[test]
fn embeddings_are_wordllamas() {
    let m = model();
    assert_eq!(m.dim(), 256);
    let a = m.embed("how high above sea level").unwrap();
    let b = m.embed("Get the elevation of a location").unwrap();
    let reference = [
        -0.178_329_9,
        0.043_293_08,
        -0.036_875_02,
        -0.012_096_42,
        -0.008_027_996,
    ];
    for (got, want) in a.as_slice().iter().zip(reference) {
        assert!((got - want).abs() < 1e-5, "{got} against {want}");
    }
    assert!(
        (a.cosine(&b) - 0.369_147_5).abs() < 1e-5,
        "{}",
        a.cosine(&b)
    );
    assert!(m.embed("").is_none());
    // A paraphrase is nearer than an unrelated text.
    let c = m.embed("Send a message to a Slack channel").unwrap();
    assert!(a.cosine(&b) > a.cosine(&c));
}

#[test]
fn a_wheel_that_is_not_the_pinned_one_is_refused_before_it_is_read() {
    let dir = std::env::temp_dir().join(format!("toolhost-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join(WORDLLAMA.file);
    let mut bytes = std::fs::read(wheel()).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&copy, &bytes).unwrap();
    let err = Model::from_wheel_file(&copy, &WORDLLAMA).unwrap_err();
    assert!(matches!(err, EmbedError::Digest { .. }), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_tests_fetch_the_wheel_the_host_pins() {
    let script = std::fs::read_to_string(repo().join("tests/search-model/fetch.sh")).unwrap();
    assert!(script.contains(&format!("URL={}\n", WORDLLAMA.url)));
    assert!(script.contains(&format!("SHA256={}\n", WORDLLAMA.sha256)));
    assert!(WORDLLAMA.url.ends_with(WORDLLAMA.file));
}
