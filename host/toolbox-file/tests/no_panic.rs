//! The toolbox-file parser never panics: on the corpus in
//! `tests/corpus/toolbox/`, on mutations of it (and of this crate's golden
//! files) and on arbitrary text, [`Toolbox::parse`] returns a toolbox or a
//! typed [`ToolboxError`] whose position, when it has one, is inside the
//! input; every TOML syntax error names a line. The checks are
//! `toolhost-testkit`'s; this file says what is specific to toolbox files.

#![allow(clippy::unwrap_used, missing_docs)]

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::path::Path;
use toolhost_testkit::no_panic::{Parser, Shown};
use toolhost_toolbox_file::{Toolbox, ToolboxError};

const BUILTINS: &[&str] = &["read", "write", "list"];

const TOOLBOX: Parser<Toolbox, ToolboxError> = Parser {
    origin: "toolhost.toml",
    corpus: "toolbox",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    parse: |text| Toolbox::parse(text, "toolhost.toml", Path::new("/srv"), BUILTINS),
    shown: |e| Shown {
        text: e.to_string(),
        message: &e.message,
        line: e.line,
        column: e.column,
    },
    check_parsed,
};

/// A parsed toolbox has components, each on a line of the input.
fn check_parsed(text: &str, t: &Toolbox) -> Result<(), TestCaseError> {
    prop_assert!(!t.components.is_empty());
    let lines = text.split('\n').count();
    for c in &t.components {
        prop_assert!(c.line >= 1 && c.line <= lines);
    }
    Ok(())
}

#[test]
fn the_corpus_parses_or_fails_cleanly() {
    let parsed = TOOLBOX.check_corpus();
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
            let e = (TOOLBOX.parse)(&text).unwrap_err();
            TOOLBOX.check_error(&text, &e).unwrap();
        }
    }
}

#[test]
fn mutated_and_arbitrary_toolboxes_never_panic() {
    TOOLBOX.check_mutated_and_arbitrary(
        "(version|component|source|policy|prefix|builtin:|decision|fs|host|guest|mode|[\\[\\]{}=\"'., \n0-9a-z_*:-]){0,60}",
    );
}
