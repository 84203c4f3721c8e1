//! The toolbox file and the one place a toolhost host is assembled from it.
//!
//! A toolbox file (`toolhost.toml`, see [`file`](mod@file)) lists the tool components a
//! toolhost server or CLI call uses: each one's source (a built-in tool or a
//! `.wasm` component file), its policy (a policy file, an inline table, or
//! the built-in's default) and an optional prefix for its tool names, and
//! a mode: whether the tools are offered each with its schema, through code
//! mode's `run_code` (see [`code`]), or both.

/// The toolbox file (its own crate, `toolhost-toolbox-file`, so its parser
/// can be fuzzed without building the sandbox).
pub use toolhost_toolbox_file as file;
pub mod code;
mod declare;
pub mod descriptors;
mod dirs;
mod discover;
mod error;
pub mod host;
mod load;
pub mod model;
pub mod remote;
pub mod search;
pub mod suggest;
mod trust;

pub use dirs::{default_cache_dir, default_journal_dir};
pub use discover::{embedded_default, find_toolbox, watched_files};
pub use error::HostError;
pub use file::{
    ComponentEntry, DEFAULT_FILE_NAME, MAX_PREFIX_LEN, PolicySource, Source, TOOLBOX_VERSION,
    TaskSettings, Toolbox, ToolboxError,
};
pub use host::{Host, HostConfig, LoadReport, ServedTool, SkippedTool, Startup, walls_line};
pub use load::load_component_file;
pub use remote::{Change, Moving, Provenance};
pub use trust::Verified;
