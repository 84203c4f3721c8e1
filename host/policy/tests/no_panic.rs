//! The policy parser never panics: on the corpus in `tests/corpus/policy/`,
//! on mutations of it (and of this crate's golden files) and on arbitrary
//! text, [`Policy::parse`] returns a policy or a typed [`PolicyError`] whose
//! position, when it has one, is inside the input; every TOML syntax error
//! names a line.

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../../tests/corpus/mutate.rs"]
mod mutate;
#[path = "../../../tests/corpus/toml_checks.rs"]
mod toml_checks;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;
use toolhost_policy::{Policy, PolicyError};

/// Checks one input; `Ok` whatever the verdict, as long as it is well-formed.
fn check(text: &str) -> Result<(), TestCaseError> {
    let Err(e) = Policy::parse(text, "p.toml", Path::new("/base")) else {
        return Ok(());
    };
    check_error(text, &e)
}

fn check_error(text: &str, e: &PolicyError) -> Result<(), TestCaseError> {
    let shown = toml_checks::Shown {
        text: e.to_string(),
        message: &e.message,
        line: e.line,
        column: e.column,
    };
    toml_checks::check_error(text, "p.toml", &shown)
}

fn seeds() -> Vec<Vec<u8>> {
    toml_checks::seeds(
        mutate::corpus("policy"),
        Path::new(env!("CARGO_MANIFEST_DIR")),
    )
}

#[test]
fn the_corpus_parses_or_fails_cleanly() {
    for (path, bytes) in mutate::corpus("policy") {
        let text = String::from_utf8_lossy(&bytes);
        check(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    // The corpus holds valid policies too: not every input is refused.
    let full = mutate::corpus("policy")
        .into_iter()
        .find(|(p, _)| p.ends_with("full.toml"))
        .unwrap();
    Policy::parse(&String::from_utf8_lossy(&full.1), "p.toml", Path::new("/")).unwrap();
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [1_000, 100_000] {
        for text in [
            format!(
                "version = 1\na = {}1{}\n",
                "{b = ".repeat(depth),
                "}".repeat(depth)
            ),
            format!(
                "version = 1\na = {}{}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            ),
            format!("version = 1\na = {}\n", "[".repeat(depth)),
        ] {
            let e = Policy::parse(&text, "p.toml", Path::new("/")).unwrap_err();
            check_error(&text, &e).unwrap();
        }
    }
}

#[test]
fn mutated_and_arbitrary_policies_never_panic() {
    let mut runner = TestRunner::new(Config {
        cases: 2000,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop_oneof![
        4 => mutate::mutated(seeds(), 6).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => any::<String>(),
        1 => "(version|decision|fs|host|guest|mode|limits|tools|network|allow|env|set|[\\[\\]{}=\"'., \n0-9a-z_*:-]){0,60}",
    ];
    runner.run(&strategy, |text| check(&text)).unwrap();
}
