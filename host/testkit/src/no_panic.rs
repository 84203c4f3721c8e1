//! No-panic tests of a TOML file parser: on its corpus in
//! `tests/corpus/<target>/`, on mutations of it (and of the crate's golden
//! files) and on arbitrary text, the parser returns a value or an error
//! whose position, when it has one, is inside the input; every TOML syntax
//! error names a line.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::mutate;

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

/// A TOML file parser under the no-panic checks: what is specific to it.
pub struct Parser<T, E> {
    /// The name its errors start with (the origin `parse` gives).
    pub origin: &'static str,
    /// Its corpus, `tests/corpus/<corpus>/` from the repository root.
    pub corpus: &'static str,
    /// The crate's directory (`CARGO_MANIFEST_DIR`), whose golden files
    /// seed the mutations too.
    pub crate_dir: &'static str,
    /// Parses a text, naming it `origin` in errors.
    pub parse: fn(&str) -> Result<T, E>,
    /// The parts of an error the checks look at.
    pub shown: fn(&E) -> Shown<'_>,
    /// The checks of a successful parse, beyond not panicking.
    pub check_parsed: fn(&str, &T) -> Result<(), TestCaseError>,
}

impl<T, E> Parser<T, E> {
    /// Checks one input; `Ok` whatever the verdict, as long as it is
    /// well-formed.
    pub fn check(&self, text: &str) -> Result<(), TestCaseError> {
        match (self.parse)(text) {
            Ok(parsed) => (self.check_parsed)(text, &parsed),
            Err(e) => self.check_error(text, &e),
        }
    }

    /// Checks that `e`, an error parsing `text`, is well-formed.
    pub fn check_error(&self, text: &str, e: &E) -> Result<(), TestCaseError> {
        check_error(text, self.origin, &(self.shown)(e))
    }

    /// Checks every corpus entry (a failure names its file); returns how
    /// many of them parsed.
    pub fn check_corpus(&self) -> usize {
        let mut parsed = 0;
        for (path, bytes) in mutate::corpus(self.corpus) {
            let text = String::from_utf8_lossy(&bytes);
            self.check(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            parsed += usize::from((self.parse)(&text).is_ok());
        }
        parsed
    }

    /// Checks 2000 inputs: mostly mutated corpus entries and golden files,
    /// the rest arbitrary strings and strings matching `words`, a regex of
    /// the format's own keys and punctuation.
    pub fn check_mutated_and_arbitrary(&self, words: &'static str) {
        let mut runner = TestRunner::new(Config {
            cases: 2000,
            failure_persistence: None,
            ..Config::default()
        });
        let seeds = seeds(mutate::corpus(self.corpus), Path::new(self.crate_dir));
        let strategy = prop_oneof![
            4 => mutate::mutated(seeds, 6).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            1 => any::<String>(),
            1 => words,
        ];
        runner.run(&strategy, |text| self.check(&text)).unwrap();
    }
}
