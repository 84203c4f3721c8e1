//! The toolbox-file parser never panics: on the corpus in
//! `tests/corpus/toolbox/`, on mutations of it (and of this crate's golden
//! files) and on arbitrary text, [`Toolbox::parse`] returns a toolbox or a
//! typed [`ToolboxError`] whose position, when it has one, is inside the
//! input; every TOML syntax error names a line.

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../../tests/corpus/mutate.rs"]
mod mutate;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;
use toolhost_toolbox::{Toolbox, ToolboxError};

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
    let shown = e.to_string();
    prop_assert!(!shown.contains('\n'), "multi-line error {shown:?}");
    prop_assert!(shown.starts_with("toolhost.toml"), "{shown}");
    prop_assert!(!e.message.is_empty());
    let lines = text.split('\n').count();
    if let Some(line) = e.line {
        prop_assert!(
            line >= 1 && line <= lines,
            "line {line} of {lines}: {shown}"
        );
        let col = e.column.unwrap_or(1);
        let width = text
            .split('\n')
            .nth(line - 1)
            .map_or(0, |l| l.chars().count());
        prop_assert!(
            col >= 1 && col <= width + 1,
            "column {col} of {width}: {shown}"
        );
    }
    if toml::from_str::<toml::Table>(text).is_err() {
        prop_assert!(e.line.is_some(), "a syntax error without a line: {shown}");
    }
    Ok(())
}

fn seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = mutate::corpus("toolbox")
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    for dir in ["valid", "invalid"] {
        let d = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(dir);
        for entry in std::fs::read_dir(d).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                seeds.push(std::fs::read(p).unwrap());
            }
        }
    }
    seeds
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
