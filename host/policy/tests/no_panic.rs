//! The policy parser never panics: on the corpus in `tests/corpus/policy/`,
//! on mutations of it (and of this crate's golden files) and on arbitrary
//! text, [`Policy::parse`] returns a policy or a typed
//! [`PolicyError`](toolhost_policy::PolicyError) whose position, when it has
//! one, is inside the input; every TOML syntax error names a line. The checks
//! are `toolhost-testkit`'s; this file says what is specific to policies.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use toolhost_policy::{Policy, PolicyError};
use toolhost_testkit::mutate;
use toolhost_testkit::no_panic::{Parser, Shown};

const POLICY: Parser<Policy, PolicyError> = Parser {
    origin: "p.toml",
    corpus: "policy",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    parse: |text| Policy::parse(text, "p.toml", Path::new("/base")),
    shown: |e| Shown {
        text: e.to_string(),
        message: &e.message,
        line: e.line,
        column: e.column,
    },
    check_parsed: |_, _| Ok(()),
};

#[test]
fn the_corpus_parses_or_fails_cleanly() {
    POLICY.check_corpus();
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
            POLICY.check_error(&text, &e).unwrap();
        }
    }
}

#[test]
fn mutated_and_arbitrary_policies_never_panic() {
    POLICY.check_mutated_and_arbitrary(
        "(version|decision|fs|host|guest|mode|limits|tools|network|allow|env|set|[\\[\\]{}=\"'., \n0-9a-z_*:-]){0,60}",
    );
}

/// Importing a wassette policy never panics either: on its corpus
/// (`tests/corpus/policy_import/`) and mutations of it, an import is an
/// error naming the file, or a policy that parses.
#[test]
fn importing_another_hosts_policy_never_panics_and_writes_what_parses() {
    let corpus = mutate::corpus("policy_import");
    let check = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        match toolhost_policy::import::wassette(&text, "policy.yaml") {
            Ok(imported) => {
                if let Err(e) = Policy::parse(&imported.toml, "imported.toml", Path::new("/")) {
                    panic!("an import that does not parse: {e}\n{}", imported.toml);
                }
            }
            Err(e) => assert!(e.to_string().starts_with("policy.yaml"), "{e}"),
        }
    };
    for (_, bytes) in &corpus {
        check(bytes);
    }
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 512,
        failure_persistence: None,
        ..Default::default()
    });
    let seeds: Vec<Vec<u8>> = corpus.into_iter().map(|(_, b)| b).collect();
    runner
        .run(&mutate::mutated(seeds, 6), |bytes| {
            check(&bytes);
            Ok(())
        })
        .unwrap();
}
