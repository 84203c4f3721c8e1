//! The toolbox-file parser never panics: on the corpus in
//! `tests/corpus/toolbox/`, on mutations of it (and of this crate's golden
//! files) and on arbitrary text, [`Toolbox::parse`] returns a toolbox or a
//! typed [`ToolboxError`] whose position, when it has one, is inside the
//! input; every TOML syntax error names a line.

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../../tests/corpus/mutate.rs"]
mod mutate;
#[path = "../../../tests/corpus/toml_checks.rs"]
mod toml_checks;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;
use toolhost_toolbox_file::{Toolbox, ToolboxError};

const BUILTINS: &[&str] = &["read", "write", "list"];

fn parse(text: &str) -> Result<Toolbox, ToolboxError> {
    Toolbox::parse(text, "toolhost.toml", Path::new("/srv"), BUILTINS)
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(t) => {
            prop_assert!(!t.components.is_empty());
            let lines = text.split('\n').count();
            for c in &t.components {
                prop_assert!(c.line >= 1 && c.line <= lines);
            }
            Ok(())
        }
        Err(e) => check_error(text, &e),
    }
}

fn check_error(text: &str, e: &ToolboxError) -> Result<(), TestCaseError> {
    let shown = toml_checks::Shown {
        text: e.to_string(),
        message: &e.message,
        line: e.line,
        column: e.column,
    };
    toml_checks::check_error(text, "toolhost.toml", &shown)
}

fn seeds() -> Vec<Vec<u8>> {
    toml_checks::seeds(
        mutate::corpus("toolbox"),
        Path::new(env!("CARGO_MANIFEST_DIR")),
    )
}

#[test]
fn the_corpus_parses_or_fails_cleanly() {
    let mut parsed = 0;
    for (path, bytes) in mutate::corpus("toolbox") {
        let text = String::from_utf8_lossy(&bytes);
        check(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        parsed += usize::from(parse(&text).is_ok());
    }
    assert!(parsed >= 1, "no corpus entry parses");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [1_000, 100_000] {
        for text in [
            format!(
                "version = 1\n[[component]]\nsource = \"builtin:read\"\npolicy = {}1{}\n",
                "{b = ".repeat(depth),
                "}".repeat(depth)
            ),
            format!(
                "version = 1\ncomponent = {}{}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            ),
        ] {
            let e = parse(&text).unwrap_err();
            check_error(&text, &e).unwrap();
        }
    }
}

#[test]
fn mutated_and_arbitrary_toolboxes_never_panic() {
    let mut runner = TestRunner::new(Config {
        cases: 2000,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop_oneof![
        4 => mutate::mutated(seeds(), 6).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => any::<String>(),
        1 => "(version|component|source|policy|prefix|builtin:|decision|fs|host|guest|mode|[\\[\\]{}=\"'., \n0-9a-z_*:-]){0,60}",
    ];
    runner.run(&strategy, |text| check(&text)).unwrap();
}
