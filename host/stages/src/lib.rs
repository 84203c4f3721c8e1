//! The stages of the toolhost pipeline that need no sandbox.
//!
//! Defensive argument parsing ([`args`]), schema errors as the model reads
//! them ([`schema`]), the path stage with its grants and fresh baselines
//! ([`paths`], [`baseline`]), URL arguments against the network allow-list
//! ([`network`]), the approver's bounded summary ([`summary`]) and result
//! bounding with its artifact store ([`bound`]). `toolhost-pipeline` runs
//! them in order and re-exports every module under its own name.
//!
//! They live in a crate of their own, beside the sandbox rather than in it,
//! for one reason: everything here decides on text a model or a guest
//! controls, so it is fuzzed (`tests/fuzz`), and this crate builds without
//! wasmtime, so the coverage-instrumented build stays small.
//!
//! ```
//! use toolhost_stages::args::{ParsedArguments, parse_arguments};
//! assert_eq!(parse_arguments(""), ParsedArguments::Json(serde_json::json!({})));
//! assert!(matches!(parse_arguments("{oops"), ParsedArguments::Raw(_)));
//! ```

pub mod args;
pub mod baseline;
pub mod bound;
pub mod network;
pub mod paths;
pub mod schema;
pub mod summary;
