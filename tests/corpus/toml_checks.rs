//! Checks shared by the no-panic tests of the two TOML file parsers (policy
//! files and toolbox files), included with `#[path]` by each crate's
//! `tests/no_panic.rs`.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::path::Path;

/// An error of a TOML file parser, as the checks see it.
pub struct Shown<'a> {
    /// Its `Display` form.
    pub text: String,
    /// Its message without the position.
    pub message: &'a str,
    /// 1-based line, when it has one.
    pub line: Option<usize>,
    /// 1-based column, when it has one.
    pub column: Option<usize>,
}

/// One line, naming `file`, with a position inside `input`; every TOML
/// syntax error names a line.
pub fn check_error(input: &str, file: &str, e: &Shown<'_>) -> Result<(), TestCaseError> {
    let shown = &e.text;
    prop_assert!(!shown.contains('\n'), "multi-line error {shown:?}");
    prop_assert!(shown.starts_with(file), "{shown}");
    prop_assert!(!e.message.is_empty());
    let lines = input.split('\n').count();
    if let Some(line) = e.line {
        prop_assert!(
            line >= 1 && line <= lines,
            "line {line} of {lines}: {shown}"
        );
        let col = e.column.unwrap_or(1);
        let width = input
            .split('\n')
            .nth(line - 1)
            .map_or(0, |l| l.chars().count());
        prop_assert!(
            col >= 1 && col <= width + 1,
            "column {col} of {width}: {shown}"
        );
    }
    if toml::from_str::<toml::Table>(input).is_err() {
        prop_assert!(e.line.is_some(), "a syntax error without a line: {shown}");
    }
    Ok(())
}

/// The seeds of a parser's mutations: its corpus and the crate's golden
/// files (`tests/valid/*.toml`, `tests/invalid/*.toml` under `crate_dir`).
pub fn seeds(corpus: Vec<(std::path::PathBuf, Vec<u8>)>, crate_dir: &Path) -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = corpus.into_iter().map(|(_, b)| b).collect();
    for dir in ["valid", "invalid"] {
        for entry in std::fs::read_dir(crate_dir.join("tests").join(dir)).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                seeds.push(std::fs::read(p).unwrap());
            }
        }
    }
    seeds
}
